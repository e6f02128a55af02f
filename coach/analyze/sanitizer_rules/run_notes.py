"""What a report says about the run itself: clean, cut short, or the tool's own trouble.

A clean report is a finding too, and a narrow one: each tool checks one class of mistake, only in
the kernels that ran, only on the paths this input took. None of them checks arithmetic. So a
clean memcheck run with wrong results points at races (racecheck), uninitialised reads (initcheck),
barrier misuse (synccheck), or at the numbers themselves: precision, the formula, the reference.
"""

from __future__ import annotations

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import RANK_NOTE, ReportContext, ev, finding, plural

SPEC = RuleSpec(id="sanitizer-clean", name="No error found", category=BugClass.CLEAN, table="summary",
                requires=("errors",), doc="A clean report, with what the tool that ran does and does not check.")
INCOMPLETE_SPEC = RuleSpec(id="sanitizer-incomplete", name="Report cut short", category=BugClass.TOOL,
                           table="summary", requires=("complete",), doc="No summary line: the run did not finish.")
TOOL_SPEC = RuleSpec(id="sanitizer-run-error", name="The tool's own error", category=BugClass.TOOL, table="records",
                     requires=("kind",), doc="The tool could not check (no process attached, out of memory, ...).")

#: What a clean run of each tool rules out, and what it leaves open.
CHECKS = {
    "memcheck": ("no access outside an allocation, no misaligned access and no failed CUDA call in the kernels "
                 "that ran", "shared-memory races (racecheck), reads of memory nothing wrote (initcheck), "
                 "barriers in divergent code (synccheck), and overruns that stay inside another allocation"),
    "racecheck": ("no shared-memory slot written and read (or written twice) by different threads without a "
                  "barrier between", "out-of-bounds accesses (memcheck, which racecheck assumes clean), races "
                  "through global memory (no tool checks those), uninitialised reads (initcheck)"),
    "initcheck": ("no read of global memory that nothing wrote", "out-of-bounds accesses (memcheck), races "
                  "(racecheck), shared-memory reads unless --initcheck-address-space shared was given"),
    "synccheck": ("no barrier reached by part of a block or warp, no invalid barrier arguments",
                  "out-of-bounds accesses (memcheck), races (racecheck), uninitialised reads (initcheck)"),
}
ARITHMETIC = ("No tool checks the arithmetic: precision (an FP16 running sum stalls at 2048), a wrong formula, "
              "or inputs this run did not exercise. If the result is still wrong, compare it element by element "
              "with a float64 reference.")


def apply(ctx: ReportContext) -> list[Finding]:
    s = ctx.summary
    out = []
    records = ctx.records
    problems = records.filter(records["kind"] == "sanitizer-error") if records.height else records
    for r in problems.to_dicts():
        out.append(finding(TOOL_SPEC, title=f"compute-sanitizer: {r.get('api_message') or r.get('headline')}",
                           message=(f"The tool reported a problem of its own: {r.get('headline')}. What it checked "
                                    "before that is in the other findings; what it could not check is not."),
                           next_step=("Rerun; for 'No attachable process' raise --launch-timeout, for the tool's "
                                      "own out-of-memory errors add --force-synchronization-limit 1 or check fewer "
                                      "kernels (--kernel-name)."),
                           evidence=[], scope=None, rank=RANK_NOTE, first_record=r["record_id"],
                           details={"records": [r["record_id"]], "lines": []}))
    if not s.get("complete"):
        out.append(finding(INCOMPLETE_SPEC, title="The report stops before the tool's summary",
                           message=(f"No ERROR SUMMARY or RACECHECK SUMMARY line: the run was cut short (a timeout, "
                                    f"a crash, a killed job). What it printed ({plural(records.height, 'record')}) is real; "
                                    "there may be more that it never printed."),
                           next_step="Rerun to the end (a longer timeout, a smaller input) for the full count.",
                           evidence=[], scope=None, rank=RANK_NOTE, first_record=None, details={"lines": []}))
        return out
    device = records.filter(records["kind"].is_in(["memory-access", "hardware-exception", "shared-race",
                                                   "shared-hazard", "uninitialized-read", "barrier",
                                                   "device-malloc", "api-error"])) if records.height else records
    # compute-sanitizer checks the program's exit code too (--check-exit-code, on by default): a
    # program that fails its own check adds "Target application returned an error", which the error
    # count may include. With no record of its own, that one error is the program's, not the tool's.
    exit_only = bool(s.get("target_error")) and not records.height and (s.get("errors") or 0) <= 1
    clean = not device.height and (s.get("errors") in (0, None) or exit_only) \
        and (s.get("hazards_displayed") in (0, None))
    hidden = (s.get("errors") or 0) - (1 if s.get("target_error") else 0)
    if not clean and not records.height and hidden > 0:
        out.append(finding(INCOMPLETE_SPEC, title=f"The summary counts {plural(s.get('errors'), 'error')} the report "
                                                  "does not print",
                           message=("compute-sanitizer counted errors but printed none of them (--print-limit or "
                                    "--print-level held them back), so what they are cannot be read from this report."),
                           next_step="Rerun with --print-limit 0 (and the default --print-level) to see every error.",
                           evidence=[ev("errors", s.get("errors"), "error", "0")], scope=None, rank=RANK_NOTE,
                           first_record=None, details={"lines": []}))
    if clean:
        tool = ctx.tool
        if tool in CHECKS:
            rules_out, leaves = CHECKS[tool]
            message = f"compute-sanitizer {tool} reports 0 errors: {rules_out}. It does not look for {leaves}."
            title = f"Clean under {tool}"
        else:
            message = ("compute-sanitizer reports 0 errors. The report does not say which tool ran (memcheck, "
                       "initcheck and synccheck print the same clean summary), so what it rules out is not known "
                       "from the report alone.")
            title = "Clean: no errors reported"
        if s.get("target_error"):
            message += (" The program itself exited with an error (its own output says why)"
                        + (", which is the one error the summary counts." if s.get("errors") else "."))
        out.append(finding(SPEC, title=title, message=f"{message} {ARITHMETIC}",
                           next_step=("If the results are wrong, run the tools this one does not cover, then compare "
                                      "with a float64 reference; if they are right, this run found nothing to fix."),
                           evidence=[ev("errors", s.get("errors") if s.get("errors") is not None
                                        else s.get("hazards_displayed"), "error", "0")],
                           scope=None, rank=RANK_NOTE, first_record=None,
                           details={"tool": tool, "lines": [], "clean": True}))
    return out
