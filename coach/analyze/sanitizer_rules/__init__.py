"""Correctness diagnosis from compute-sanitizer reports: one small rule per error class.

Each rule is a module with ``SPEC`` (a ``RuleSpec``) and ``apply(ctx) -> list[Finding]``, where
``ctx`` is a ``ReportContext`` (the report's tables and its summary row). A rule groups the
records it knows by kernel and source line, so a thousand threads faulting at one line make one
finding, and says in its message what the records mean, the line to fix and how to fix it.

    from coach.analyze.sanitizer_rules import run_all
    findings = run_all(report)             # the first names what to fix first

Ranking: device errors (an out-of-bounds access, a race, an uninitialised read, a divergent
barrier, a hardware fault) first, in the order the tool printed them, errors before warnings;
then the API errors they caused (a cudaMemcpy reporting a kernel's illegal address); then the API
errors of their own; leaks; and last what the report says about the run (clean, cut short).
"""

from __future__ import annotations

import importlib
import math
from types import ModuleType

from coach.analyze.findings import Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import FIRST_RECORD, RANK, context
from coach.model import SanitizerReport

ORDER = ("out_of_bounds", "race", "uninitialized", "barrier", "device_fault", "api_error", "leak", "run_notes")
RULES: dict[str, ModuleType] = {name: importlib.import_module(f"{__name__}.{name}") for name in ORDER}


def specs() -> list[RuleSpec]:
    out = []
    for module in RULES.values():
        out += [v for k, v in vars(module).items() if k.endswith("SPEC") and isinstance(v, RuleSpec)]
    return out


def run_all(report: SanitizerReport) -> list[Finding]:
    ctx = context(report)
    found = [f for module in RULES.values() for f in module.apply(ctx)]
    return sorted(found, key=lambda f: (f.details.get(RANK, math.inf),
                                        math.inf if f.details.get(FIRST_RECORD) is None else f.details[FIRST_RECORD]))
