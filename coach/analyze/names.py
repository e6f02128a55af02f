"""Kernel names to show: the short name, and where two different kernels share it (two template
instances of ``vectorized_elementwise_kernel``), the short name with the template arguments that
tell them apart.

``display_names(short, full)`` takes the short names and full (demangled) signatures of the rows of
a table and returns one label per row: the short name where it is unique among the rows; otherwise
``short<differing arguments>`` with namespaces dropped (``at::native::``); where the
template arguments are the same (overloads), the differing function parameters; where nothing
differs that can be shown, ``short #2``, ``short #3`` in row order.

A few short names are a library's launcher, the same for every kernel it launches: CUTLASS's
``cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>``, ``Kernel2`` and
``device_kernel<GemmUniversal<...>>`` all have the short name ``Kernel`` or ``device_kernel`` (as
Nsight Systems and Kineto give it). Their first template argument is the kernel, so it is shown:
``Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>``, cut at ``LAUNCHER_ARG_CHARS``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NAMESPACE = re.compile(r"\b(?:[A-Za-z_]\w*|<unnamed>)::")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|short|char|bool|long long)\)")


def split_top_level(text: str) -> list[str]:
    """Comma-separated items at nesting depth 0 of ``<>``, ``()``, ``[]`` (a template or parameter list)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail or items:
        items.append(tail)
    return items


def _bracketed(text: str, open_at: int) -> tuple[str, int] | None:
    """The text inside the bracket pair opening at ``open_at`` and the index after it."""
    pairs = {"<": ">", "(": ")"}
    want = pairs[text[open_at]]
    depth = 0
    for i in range(open_at, len(text)):
        ch = text[i]
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
            if depth == 0:
                return (text[open_at + 1:i], i + 1) if ch == want else None
    return None


def signature_parts(short: str, full: str | None) -> tuple[list[str], list[str]]:
    """(template arguments, function parameters) of ``full`` after its short name; empty when the
    signature cannot be split."""
    if not full or not short:
        return [], []
    at = full.find(short + "<")
    if at < 0:
        at = full.find(short + "(")
    if at < 0:
        return [], []
    i = at + len(short)
    template: list[str] = []
    if full[i] == "<":
        inside = _bracketed(full, i)
        if inside is None:
            return [], []
        template, i = split_top_level(inside[0]), inside[1]
    params: list[str] = []
    if i < len(full) and full[i] == "(":
        inside = _bracketed(full, i)
        if inside is not None:
            params = split_top_level(inside[0])
    return template, params


def _plain(arg: str) -> str:
    return _CAST.sub("", _NAMESPACE.sub("", arg)).strip()


def _differing(lists: Sequence[list[str]]) -> list[int] | None:
    """Positions where the lists differ (all of one length), or None when their lengths differ."""
    if len({len(x) for x in lists}) != 1:
        return None
    return [i for i in range(len(lists[0])) if len({x[i] for x in lists}) > 1]


def _label(short: str, items: list[str], positions: list[int], open_: str, close: str) -> str:
    shown = [_plain(items[i]) for i in positions]
    return f"{short}{open_}{', '.join(shown)}{close}"


#: Short names of launchers whose first template argument names the kernel (see the module doc).
LAUNCHERS = frozenset({"Kernel", "Kernel2", "device_kernel"})
LAUNCHER_ARG_CHARS = 80


def _launched(short: str | None, full: str | None) -> str | None:
    """``Kernel<first template argument>`` for a launcher's signature, else None."""
    if short not in LAUNCHERS:
        return None
    template, _ = signature_parts(short, full)
    if not template:
        return None
    arg = _plain(template[0])
    return f"{short}<{arg if len(arg) <= LAUNCHER_ARG_CHARS else arg[:LAUNCHER_ARG_CHARS - 1] + '…'}>"


def display_names(short: Sequence[str | None], full: Sequence[str | None]) -> list[str]:
    """One label per row (see module doc)."""
    labels = [_launched(s, f) or s or f or "" for s, f in zip(short, full)]
    groups: dict[str, list[int]] = {}
    for i, (s, f) in enumerate(zip(short, full)):
        groups.setdefault(labels[i], []).append(i)
    for name, rows in groups.items():
        if len(rows) < 2 or len({full[i] for i in rows}) < 2:
            continue
        parts = [signature_parts(name, full[i]) for i in rows]
        done = False
        for which, (open_, close) in ((0, ("<", ">")), (1, ("(", ")"))):
            lists = [p[which] for p in parts]
            positions = _differing(lists)
            if positions is None and all(lists):  # different lengths: show them whole
                candidates = [_label(name, x, list(range(len(x))), open_, close) for x in lists]
            elif positions:
                candidates = [_label(name, x, positions, open_, close) for x in lists]
            else:
                continue
            if len(set(candidates)) == len(candidates):
                for i, c in zip(rows, candidates):
                    labels[i] = c
                done = True
                break
        if not done:
            for n, i in enumerate(rows[1:], 2):
                labels[i] = f"{name} #{n}"
    return labels
