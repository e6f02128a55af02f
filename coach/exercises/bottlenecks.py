"""Claims about the bottleneck class, held against a scenario's recorded diagnosis.

Every performance scenario records what limits its slow version (``[expected] bottleneck``: a
``coach.analyze.findings.Bottleneck``). An answer that names another class as the cause ("it is
compute-bound" of a kernel streaming DRAM at its roof) or proposes a remedy of a class that cannot
act on the recorded one (tensor cores for a memory-bound GEMV, more occupancy for a launch-bound
loop, pinned memory for bank conflicts) is wrong whatever else it gets right. The claims and the
classes each fits are data (``data/bottlenecks.toml``)::

    [[cause]]                       # a class named as what limits the work
    name = "compute"
    claim = "Names the arithmetic (a compute-bound kernel) as what limits it"
    does = "the arithmetic units"   # what it blames, for feedback
    fits = ["compute-fma", ...]     # the classes of which it is right (or near enough)
    says = ["compute bound", ...]   # the phrases that assert it
    patterns = ['...']              # optional: regular expressions, where a phrase cannot say it

    [[fix]]                         # a remedy of one class
    name = "more-flops"
    claim = "Proposes more arithmetic throughput ... as the fix"
    acts_on = "the arithmetic rate"
    helps = ["compute-fma", ...]    # the classes it acts on
    says = ["use tensor cores", ...]

Each claim that does not fit a scenario's class is a red flag of that scenario's rubric
(``contrary_claims``), matched as every claim is (``coach.exercises.grading``): denied ("it is not
compute-bound", "tensor cores won't help"), asked ("whether it is compute-bound"), supposed or said
as someone else's, it asserts nothing.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from coach.analyze.findings import Bottleneck
from coach.errors import InputError
from coach.exercises.grading import Concept

CLAIMS_FILE = Path(__file__).resolve().parent / "data" / "bottlenecks.toml"
_KEYS = {"cause": {"name", "claim", "does", "fits", "says"}, "fix": {"name", "claim", "acts_on", "helps", "says"}}
_OPTIONAL = {"patterns"}  # regular expressions over the normalised sentence, where a phrase cannot say it


@lru_cache(maxsize=4)
def _claims(path: Path = CLAIMS_FILE) -> tuple[tuple[str, dict], ...]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(path, f"cannot be read as TOML ({err})") from None
    out = []
    classes = {b.value for b in Bottleneck}
    for kind, keys in _KEYS.items():
        for i, raw in enumerate(data.get(kind, []), 1):
            where = f"{kind} {raw.get('name', i)!r}"
            if not keys <= set(raw) <= keys | _OPTIONAL:
                raise InputError(path, f"{where} needs the keys {sorted(keys)} (and may have {sorted(_OPTIONAL)})")
            listed = raw["fits" if kind == "cause" else "helps"]
            if unknown := set(listed) - classes:
                raise InputError(path, f"{where} names unknown bottleneck classes {sorted(unknown)}")
            if not raw["says"] or not all(isinstance(s, str) and s.strip() for s in raw["says"]):
                raise InputError(path, f"{where} needs phrases in says")
            out.append((kind, raw))
    return tuple(out)


def contrary_claims(bottleneck: Bottleneck, words: str, *, prefix: str = "scenario") -> tuple[Concept, ...]:
    """The class claims that are wrong for a scenario whose recorded class is ``bottleneck``
    (``words``: that class in words, for feedback), as red flags."""
    out = []
    for kind, raw in _claims():
        fits = raw["fits"] if kind == "cause" else raw["helps"]
        if bottleneck.value in fits:
            continue
        if kind == "cause":
            why = (f"The recorded diagnosis is {words} ({bottleneck.value}), not {raw['does']}: the profile's "
                   "evidence says which unit limits the work, and it is not this one.")
        else:
            why = (f"It acts on {raw['acts_on']}, but the recorded diagnosis is {words} ({bottleneck.value}): "
                   "a fix must act on what limits the work, or the time the profile shows stays.")
        out.append(Concept(f"rf-{prefix}-class-{kind}-{raw['name']}", raw["claim"], why, tuple(raw["says"]),
                           tuple(raw.get("patterns", ())), loose_label=False))
    return tuple(out)
