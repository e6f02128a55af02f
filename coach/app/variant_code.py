"""The code of a fix: what a scenario's slow and fixed programs run differently, side by side.

A scenario's two variants differ in one of three ways, and each is read from the source, not from
a list kept beside it:

- two CUDA kernels (``cuda_function``): the ``__global__`` functions the two profiles name, found
  in the folder's ``.cu`` files whatever the declaration looks like (``extern "C"``,
  ``__launch_bounds__(...)``, a template, the name on a line of its own), the body brace-matched;
- one Python program that branches on ``--variant`` (``specialise``): the program as each variant
  runs it, with every branch that tests the variant (``if variant == "fixed":``, ``x if
  args.variant == "slow" else y``, ``TABLE[args.variant]`` over a module-level table keyed by the
  variants) replaced by the side that variant takes; the functions only one side calls are
  added to it, so the change shows what each variant calls;
- two programs: the two files.

``changes`` returns each difference as a ``CodeChange``, cropped to the changed lines with a few
lines around them (``CONTEXT``), the enclosing function's first line kept so the reader knows
where they are.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

#: Unchanged lines shown either side of a change.
CONTEXT = 3
#: Lines shown at most per side and change (the rest is summarised in one line).
MAX_LINES = 120
#: Stands for the lines left out between two changes.
ELLIPSIS = "⋮"

VARIANT_NAMES = ("variant",)  # `variant`, `args.variant`, `self.variant`


@dataclass(frozen=True)
class CodeChange:
    label: str  # where it is: "transpose.cu: transpose_naive and transpose_padded"
    slow: str
    fixed: str


# --------------------------------------------------------------------------------------------
# CUDA kernels
# --------------------------------------------------------------------------------------------

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _blank_out(text: str) -> str:
    """``text`` with comments and string literals replaced by spaces (same length, same lines),
    so that braces and names inside them are not taken for code."""
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _matching(code: str, start: int, open_: str, close: str) -> int | None:
    """The index of the bracket that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] == open_:
            depth += 1
        elif code[i] == close:
            depth -= 1
            if depth == 0:
                return i
    return None


def cuda_function(text: str, name: str, qualifier: str = "__global__") -> str | None:
    """The ``__global__`` (or other ``qualifier``, "" for any) function ``name`` in CUDA source
    ``text``: from its declaration's first line to its closing brace; None if there is none."""
    code = _blank_out(text)
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", code):
        # the declaration runs back to the end of the previous statement, block or directive
        head_start = max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), code.rfind("{", 0, m.start()))
        line_directive = code.rfind("\n#", 0, m.start())
        if line_directive > head_start:
            head_start = code.find("\n", line_directive + 1)
        head = code[head_start + 1:m.start()]
        if qualifier not in head or not head.strip() or head.rstrip().endswith(("=", "(", ",", "return")):
            continue  # not a declaration: a call, or an expression
        close = _matching(code, m.end() - 1, "(", ")")
        if close is None:
            continue
        brace = code.find("{", close)
        semi = code.find(";", close)
        if brace < 0 or 0 <= semi < brace:  # a declaration without a body
            continue
        end = _matching(code, brace, "{", "}")
        if end is None:
            continue
        first = head_start + 1 + (len(head) - len(head.lstrip()))
        first = text.rfind("\n", 0, first) + 1
        last = text.find("\n", end)
        return text[first:last if last >= 0 else len(text)].rstrip()
    return None


# --------------------------------------------------------------------------------------------
# One Python program, two variants
# --------------------------------------------------------------------------------------------


def _is_variant(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in VARIANT_NAMES) or (
        isinstance(node, ast.Attribute) and node.attr in VARIANT_NAMES)


def _decide(node: ast.AST, variant: str) -> bool | None:
    """The value of a condition on the variant, or None where it depends on something else."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if _is_variant(right) and not _is_variant(left):
            left, right = right, left
        if not _is_variant(left):
            return None
        if isinstance(right, ast.Constant) and isinstance(right.value, str) and isinstance(op, (ast.Eq, ast.NotEq)):
            return (variant == right.value) == isinstance(op, ast.Eq)
        if isinstance(right, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
            values = [e.value for e in right.elts if isinstance(e, ast.Constant)]
            if len(values) == len(right.elts):
                return (variant in values) == isinstance(op, ast.In)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _decide(node.operand, variant)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        parts = [_decide(v, variant) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in parts else True if all(p is True for p in parts) else None
        return True if True in parts else False if all(p is False for p in parts) else None
    return None


def _tables(tree: ast.Module, variants: Sequence[str]) -> dict[str, dict[str, ast.expr]]:
    """Module-level ``NAME = {"slow": ..., "fixed": ...}`` tables keyed by the variants."""
    out: dict[str, dict[str, ast.expr]] = {}
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
            stmt.target if isinstance(stmt, ast.AnnAssign) else None)
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
            continue
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in value.keys]
        if all(v in keys for v in variants):
            out[target.id] = {k: v for k, v in zip(keys, value.values) if k is not None}
    return out


@dataclass
class _Edit:
    """A change to the source for one variant: lines dropped, lines dedented, or a span replaced."""

    drop: set[int]
    dedent: dict[int, int]
    spans: list[tuple[int, int, int, str]]  # (line, col, end_col, text), 1-based lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block(nodes: list[ast.stmt]) -> tuple[int, int]:
    return nodes[0].lineno, nodes[-1].end_lineno or nodes[-1].lineno


def _edits(text: str, tree: ast.Module, variant: str, variants: Sequence[str]) -> _Edit:
    lines = text.splitlines()
    tables = _tables(tree, variants)
    edit = _Edit(set(), {}, [])
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            taken = _decide(node.test, variant)
            if taken is None:
                continue
            first, last = node.lineno, node.end_lineno or node.lineno
            keep = node.body if taken else node.orelse
            elif_kept = (not taken and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
                         and lines[node.orelse[0].lineno - 1].lstrip().startswith("elif"))
            kept = set(range(_block(keep)[0], _block(keep)[1] + 1)) if keep else set()
            edit.drop |= set(range(first, last + 1)) - kept
            if elif_kept:  # `elif` becomes `if` where it now comes first
                at = node.orelse[0].lineno
                col = _indent(lines[at - 1])
                edit.spans.append((at, col, col + 4, "if"))
            elif keep:
                shift = _indent(lines[keep[0].lineno - 1]) - _indent(lines[first - 1])
                for n in kept:
                    edit.dedent[n] = edit.dedent.get(n, 0) + shift
        elif isinstance(node, ast.IfExp) and node.lineno == node.end_lineno:
            taken = _decide(node.test, variant)
            if taken is not None:
                chosen = node.body if taken else node.orelse
                edit.spans.append((node.lineno, node.col_offset, node.end_col_offset or node.col_offset,
                                   ast.get_source_segment(text, chosen) or ""))
        elif (isinstance(node, ast.Subscript) and node.lineno == node.end_lineno and isinstance(node.value, ast.Name)
              and node.value.id in tables and _is_variant(node.slice)):
            chosen = tables[node.value.id].get(variant)
            if chosen is not None:
                edit.spans.append((node.lineno, node.col_offset, node.end_col_offset or node.col_offset,
                                   ast.get_source_segment(text, chosen) or ""))
    return edit


def _apply(text: str, edit: _Edit) -> list[str]:
    lines = text.splitlines()
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for line, col, end, repl in edit.spans:
        spans.setdefault(line, []).append((col, end, repl))
    out = []
    for n, line in enumerate(lines, start=1):
        if n in edit.drop:
            continue
        # a span inside another span on the same line (a table lookup inside a conditional): the outer wins
        chosen: list[tuple[int, int, str]] = []
        for col, end, repl in sorted(spans.get(n, []), key=lambda s: (s[0], -s[1])):
            if chosen and col < chosen[-1][1]:
                continue
            chosen.append((col, end, repl))
        for col, end, repl in reversed(chosen):
            line = line[:col] + repl + line[end:]
        shift = edit.dedent.get(n, 0)
        out.append(line[min(shift, _indent(line)):] if shift > 0 else line)
    return out


def specialise(text: str, variant: str, variants: Sequence[str] = ("slow", "fixed")) -> list[str] | None:
    """The lines of Python program ``text`` as it runs for ``variant`` (see the module doc); None if
    it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return _apply(text, _edits(text, tree, variant, variants))


def _functions(text: str) -> dict[str, tuple[int, int]]:
    """Functions (and classes) by name, at any depth (a variant's function may be defined inside
    ``main``): their line span, decorators included; the first definition of a name."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in out:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out[node.name] = (first, node.end_lineno or node.lineno)
    return out


def _dedented(lines: list[str]) -> list[str]:
    cut = min((_indent(line) for line in lines if line.strip()), default=0)
    return [line[cut:] for line in lines]


_WORD = re.compile(r"[A-Za-z_]\w*")


def _called_only_here(changed: Iterable[str], other: Iterable[str], functions: dict[str, tuple[int, int]]) -> list[str]:
    mine = {w for line in changed for w in _WORD.findall(line)}
    theirs = {w for line in other for w in _WORD.findall(line)}
    return [name for name in functions if name in mine and name not in theirs]


# --------------------------------------------------------------------------------------------
# Cropping a pair to its changes
# --------------------------------------------------------------------------------------------


def _header(lines: list[str], at: int) -> int | None:
    """The line of the function or class that line ``at`` (0-based) is in, if any."""
    level = _indent(lines[at]) if lines[at].strip() else 10**6
    for i in range(at - 1, -1, -1):
        s = lines[i].lstrip()
        if s and _indent(lines[i]) < level and s.startswith(("def ", "async def ", "class ", "__global__",
                                                             'extern "C"')):
            return i
        if s and _indent(lines[i]) < level:
            level = _indent(lines[i])
    return None


def crop(slow: list[str], fixed: list[str], context: int = CONTEXT) -> tuple[str, str] | None:
    """The two sides cut to the changed lines and ``context`` lines either side; None if equal."""
    ops = difflib.SequenceMatcher(a=slow, b=fixed, autojunk=False).get_opcodes()
    if all(tag == "equal" for tag, *_ in ops):
        return None
    keep_a: set[int] = set()
    keep_b: set[int] = set()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        keep_a |= set(range(max(i1 - context, 0), min(i2 + context, len(slow))))
        keep_b |= set(range(max(j1 - context, 0), min(j2 + context, len(fixed))))
        for lines, keep, at in ((slow, keep_a, i1), (fixed, keep_b, j1)):
            if lines and at < len(lines):
                head = _header(lines, at)
                if head is not None:
                    keep.add(head)
    return _cut(slow, keep_a), _cut(fixed, keep_b)


def _cut(lines: list[str], keep: set[int]) -> str:
    out: list[str] = []
    last = -1
    for i in sorted(keep):
        if i > last + 1 and (out or i > 0):
            out.append(ELLIPSIS)
        out.append(lines[i])
        last = i
    if lines and last < len(lines) - 1:
        out.append(ELLIPSIS)
    if len(out) > MAX_LINES:
        out = out[:MAX_LINES] + [f"{ELLIPSIS} ({len(out) - MAX_LINES} more lines)"]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# A scenario's changes
# --------------------------------------------------------------------------------------------


_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*\(")


def _helpers(text: str, kernels: Sequence[str], skip: Sequence[str]) -> list[str]:
    """The functions of ``text`` that the kernels call (a template both instantiate, a device
    function), in the order first called: where a thin kernel's work is done."""
    out: list[str] = []
    for code in kernels:
        body = _blank_out(code)
        for m in _CALL.finditer(body[body.find("{"):]):
            name = m.group(1)
            if name in skip or name in out:
                continue
            if cuda_function(text, name, qualifier="") is not None:
                out.append(name)
    return out


def kernel_change(folder: Path, slow_kernel: str | None, fixed_kernel: str | None) -> CodeChange | None:
    """The two kernels the profiles name, from the folder's ``.cu`` files, each followed by the
    functions of its file it calls (where a thin kernel's work is done)."""
    if not slow_kernel or not fixed_kernel or slow_kernel == fixed_kernel:
        return None
    found: dict[str, tuple[str, str]] = {}
    for cu in sorted(folder.glob("*.cu")):
        text = cu.read_text(encoding="utf-8", errors="replace")
        for name in (slow_kernel, fixed_kernel):
            code = cuda_function(text, name)
            if code and name not in found:
                found[name] = (cu.name, code)
    if len(found) < 2:
        return None
    files = sorted({found[slow_kernel][0], found[fixed_kernel][0]})
    sides = []
    for name in (slow_kernel, fixed_kernel):
        file, code = found[name]
        text = (folder / file).read_text(encoding="utf-8", errors="replace")
        called = _helpers(text, [code], (slow_kernel, fixed_kernel))
        extra = [cuda_function(text, h, qualifier="") or "" for h in called]
        sides.append("\n\n".join([code, *(f"// {h}, which it calls:\n{c}" for h, c in zip(called, extra))]))
    return CodeChange(f"{' and '.join(files)}: {slow_kernel} and {fixed_kernel}", *sides)


def program_change(slow_script: Path, fixed_script: Path, variants: Sequence[str] = ("slow", "fixed")) -> CodeChange | None:
    """What the two programs run differently: one program specialised to each variant, or two files."""
    if slow_script.resolve() != fixed_script.resolve():
        a = slow_script.read_text(encoding="utf-8", errors="replace").splitlines()
        b = fixed_script.read_text(encoding="utf-8", errors="replace").splitlines()
        pair = crop(a, b)
        return None if pair is None else CodeChange(f"{slow_script.name} and {fixed_script.name}", *pair)
    text = slow_script.read_text(encoding="utf-8", errors="replace")
    slow, fixed = specialise(text, variants[0], variants), specialise(text, variants[1], variants)
    if slow is None or fixed is None:
        return None
    ops = difflib.SequenceMatcher(a=slow, b=fixed, autojunk=False).get_opcodes()
    changed_a = [line for tag, i1, i2, _, _ in ops if tag != "equal" for line in slow[i1:i2]]
    changed_b = [line for tag, _, _, j1, j2 in ops if tag != "equal" for line in fixed[j1:j2]]
    functions = _functions(text)
    lines = text.splitlines()
    for side, changed, other in ((slow, changed_a, changed_b), (fixed, changed_b, changed_a)):
        for name in _called_only_here(changed, other, functions):
            first, last = functions[name]
            side += ["", f"# {name}, which this variant calls:", *_dedented(lines[first - 1:last])]
    pair = crop(slow, fixed)
    return None if pair is None else CodeChange(f"{slow_script.name}: as each variant runs it", *pair)


def changes(folder: Path, programs: dict[str, tuple[Path, Sequence[str]]], slow_kernel: str | None,
            fixed_kernel: str | None) -> list[CodeChange]:
    """Every difference between a scenario's variants: the kernels, then the program(s).

    ``programs`` maps "slow" and "fixed" to (script, arguments); the variant names a program
    branches on are the values of its ``--variant`` argument.
    """
    out = []
    kernels = kernel_change(folder, slow_kernel, fixed_kernel)
    if kernels is not None:
        out.append(kernels)
    if "slow" in programs and "fixed" in programs:
        (a, a_args), (b, b_args) = programs["slow"], programs["fixed"]
        variants = (_variant_arg(a_args) or "slow", _variant_arg(b_args) or "fixed")
        if a.is_file() and b.is_file() and a.suffix == b.suffix == ".py":
            program = program_change(a, b, variants)
            if program is not None:
                out.append(program)
    return out


def _variant_arg(args: Sequence[str]) -> str | None:
    args = list(args)
    for i, a in enumerate(args):
        if a == "--variant" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--variant="):
            return a.split("=", 1)[1]
    return None
