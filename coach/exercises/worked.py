"""Worked answers whose figures come from hardware/: a question's ``numbers`` and the text they fill.

A question of the bank may carry a table of numbers, each an arithmetic expression::

    [questions.numbers]
    layers = 80                                                    # a given (the model's configuration)
    kv_token = { value = "2 * layers * 8 * 128 * 2", unit = "B" }
    hbm = { value = "h200.dram_bandwidth_bytes_per_s", unit = "B/s" }    # a datasheet field
    hbm_read = { value = "h200.measured.dram_read_bandwidth_bytes_per_s", unit = "B/s" }  # hardware/measured/
    floor = { value = "weights / (8 * hbm)", unit = "s" }

Names are numbers defined above them; ``<gpu>.<field>`` is a field of ``coach.analyze.hardware``
(a GPU id with ``_`` for ``-``), ``<gpu>.measured.<name>`` the ceiling measured on that GPU: the
calibration stored in hardware/measured/, raised to the best rate recorded on the GPU as
``coach.analyze.hardware.measured_ceiling`` gives it to every page (never the user's own
calibration: the answer key is the same on every machine). ``ceil``, ``floor``, ``min``, ``max``, ``round`` and ``sqrt`` are allowed. A field that the
tables mark missing is an error, never a guess.

In the text, ``{name}`` is the number as ``coach numbers`` prints it (``coach.reference.numbers.shown``:
3 significant digits with an SI prefix, "4.80 TB/s"), ``{name:SPEC}`` the raw value through a Python
format spec (``{kv_token:,.0f}`` -> "327,680"); ``{{`` and ``}}`` are literal braces.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

from coach import arith


class WorkedError(ValueError):
    """A numbers table or a placeholder that cannot be evaluated (the bank loader names the file)."""


@dataclass(frozen=True)
class HardwareRef:
    """One hardware value an expression read."""

    gpu: str  # GPU id as in hardware/gpus/
    field: str  # a GPU field, or a measurement name when ``measured``
    value: float
    measured: bool
    source: str  # where the value comes from, in words


@dataclass(frozen=True)
class Number:
    name: str
    expression: str
    unit: str
    value: float
    refs: tuple[HardwareRef, ...]  # the hardware values it reads, directly (not through other numbers)

    @property
    def shown(self) -> str:
        from coach.reference.numbers import shown

        return shown(self.value, self.unit)

    @property
    def is_hardware(self) -> bool:
        """Whether the number is one hardware value as it stands (``h200.dram_bytes``)."""
        return len(self.refs) == 1 and _bare_ref(self.expression)


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_FUNCS = {"ceil": math.ceil, "floor": math.floor, "min": min, "max": max, "round": round, "sqrt": math.sqrt}
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}]*))?\}")


def _bare_ref(expression: str) -> bool:
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Attribute)


def _hardware(chain: list[str], expression: str) -> HardwareRef:
    from coach.analyze import hardware

    gpu_key, *rest = chain
    try:
        gpu = hardware.get(gpu_key.replace("_", "-"))
    except hardware.UnknownGPUError as err:
        raise WorkedError(f"{expression!r}: {err}") from None
    if len(rest) == 1:
        name = rest[0]
        if name not in hardware.FIELDS:
            raise WorkedError(f"{expression!r}: {gpu.id} has no field '{name}'")
        value = gpu.value(name)
        if value is None:
            raise WorkedError(f"{expression!r}: {gpu.id}.{name} is missing in hardware/ "
                              f"({gpu.source(name).describe()})")
        return HardwareRef(gpu.id, name, float(value), False, f"{gpu.name}: {gpu.source(name).describe()}")
    if len(rest) == 2 and rest[0] == "measured":
        m = hardware.catalog().measured.get(gpu.id)
        if m is None or rest[1] not in m.values:
            raise WorkedError(f"{expression!r}: hardware/measured/ has no '{rest[1]}' for {gpu.id}")
        # the measured ceiling as every page prints it: the calibration raised to the best rate recorded
        # on the GPU (``coach numbers``, the ladders and the scenarios' floors use the same function)
        value, raised = hardware.measured_ceiling(gpu, m, rest[1])
        return HardwareRef(gpu.id, rest[1], value, True, m.describe() + (f"; raised to {raised}" if raised else ""))
    raise WorkedError(f"{expression!r}: write a hardware value as gpu.field or gpu.measured.name")


def evaluate(expression: str, names: Mapping[str, float]) -> tuple[float, tuple[HardwareRef, ...]]:
    """The value of ``expression`` and the hardware values it read."""
    refs: list[HardwareRef] = []

    def resolve(parts: tuple[str, ...]) -> float:
        if len(parts) == 1:
            if parts[0] not in names:
                raise WorkedError(f"{expression!r}: unknown name '{parts[0]}' (define it above its first use)")
            return float(names[parts[0]])
        ref = _hardware(list(parts), expression)
        refs.append(ref)
        return ref.value

    try:
        value = arith.evaluate(expression, resolve, operators=_BINOPS, functions=_FUNCS, dotted=True)
    except arith.NotParsed:
        raise WorkedError(f"{expression!r} is not an arithmetic expression") from None
    except arith.DividesByZero:
        raise WorkedError(f"{expression!r}: division by zero") from None
    except arith.ArithError:
        raise WorkedError(f"{expression!r}: only numbers, names, hardware fields, + - * / // ** and "
                          f"{', '.join(_FUNCS)} are allowed") from None
    return float(value), tuple(refs)


def numbers(table: Mapping) -> dict[str, Number]:
    """Evaluate a question's numbers table, in order."""
    if not isinstance(table, Mapping) or not table:
        raise WorkedError("numbers must be a table of name = expression")
    out: dict[str, Number] = {}
    for name, raw in table.items():
        if isinstance(raw, Mapping):
            if unknown := set(raw) - {"value", "unit"}:
                raise WorkedError(f"number {name!r} has unknown keys {sorted(unknown)}")
            expr, unit = raw.get("value"), raw.get("unit", "")
        else:
            expr, unit = raw, ""
        if isinstance(expr, bool) or not isinstance(expr, (int, float, str)) or not isinstance(unit, str):
            raise WorkedError(f"number {name!r} needs a value (a number or an expression) and a unit (text)")
        value, refs = evaluate(str(expr), {k: n.value for k, n in out.items()})
        if not math.isfinite(value):
            raise WorkedError(f"number {name!r} is not finite ({value})")
        out[name] = Number(name, str(expr), unit, value, refs)
    return out


def fill(text: str, values: Mapping[str, Number]) -> tuple[str, set[str]]:
    """``text`` with its placeholders replaced, and the names it used."""
    used: set[str] = set()

    def sub(m: re.Match) -> str:
        if m.group() in ("{{", "}}"):
            return m.group()[0]
        name, spec = m.group(1), m.group(2)
        if name not in values:
            raise WorkedError(f"placeholder {{{name}}} names no number")
        used.add(name)
        if spec is None:
            return values[name].shown
        try:
            return format(values[name].value, spec)
        except ValueError:
            raise WorkedError(f"placeholder {m.group()}: bad format spec") from None

    if stray := re.search(r"[{}]", _PLACEHOLDER.sub("", text)):
        raise WorkedError(f"a brace that is no placeholder: ...{stray.string[max(0, stray.start() - 20):stray.end()]}"
                          " (write {{ or }} for a literal brace)")
    return _PLACEHOLDER.sub(sub, text), used


def render(texts: list[str], table: Mapping) -> tuple[list[str], dict[str, Number], list[str]]:
    """Fill ``texts`` from ``table``: the texts, the numbers, and a source line per GPU read.

    Every number must appear in a text or in the expression of one that does, so that a table
    cannot carry a figure the answer does not show or use."""
    values = numbers(table)
    filled, used = [], set()
    for t in texts:
        out, names = fill(t, values)
        filled.append(out)
        used |= names
    needed = set(used)
    for name in reversed(list(values)):
        if name in needed:
            needed |= {n.id for n in ast.walk(ast.parse(values[name].expression, mode="eval"))
                       if isinstance(n, ast.Name) and n.id in values}
    if unused := [n for n in values if n not in needed]:
        raise WorkedError(f"numbers {', '.join(unused)} are neither shown nor used")
    return filled, values, _cited(values)


def _cited(values: Mapping[str, Number]) -> list[str]:
    """One source line per GPU whose values the answer reads: the documents its fields cite."""
    from coach.analyze import hardware

    cat = hardware.catalog()
    docs: dict[str, list[str]] = {}
    for n in values.values():
        for r in n.refs:
            gpu = hardware.get(r.gpu)
            if r.measured:
                doc = f"hardware/measured/: {r.source}"
            else:
                src = gpu.source(r.field).source
                doc = cat.sources.get(src, {}).get("title", src) if src else "device attributes"
            if doc not in docs.setdefault(gpu.name, []):
                docs[gpu.name].append(doc)
    return [f"{name} (hardware/, `coach numbers`): {'; '.join(d)}" for name, d in docs.items()]
