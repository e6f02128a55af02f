"""``diagnose`` and ``coach diagnose``: dispatch, missing evidence, and the command line.

The "nulled" profiles here are synthetic variants of the recorded H200 report: columns are set to
null to stand in for older GPUs and Nsight Compute versions that lack those metrics.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import replace

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.cli import main
from coach.ingest import load
from coach.model import LAUNCH_METRICS, Source, make_timeline, save


@pytest.fixture(scope="module")
def recorded(strided_ncu_rep):
    return load(strided_ncu_rep)


def nulled(profile, *columns: str):
    """Synthetic: the recorded profile with ``columns`` null, as a report lacking those metrics."""
    return replace(profile, launches=profile.launches.with_columns(
        [pl.lit(None, dtype=profile.launches.schema[c]).alias(c) for c in columns]))


def by_kernel(findings, kernel):
    return [f for f in findings if f.scope == kernel and not is_not_checked(f)]


def notes(findings, kernel):
    return {f.rule_id: f for f in findings if f.scope == kernel and is_not_checked(f)}


def test_missing_bank_conflict_counters_are_named(recorded):
    found = diagnose(nulled(recorded, "shared_bank_conflicts"))
    note = notes(found, "copy_strided")["not-checked:shared-bank-conflicts"]
    assert note.message == ("Could not check shared-memory bank conflicts: "
                            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum + "
                            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum (shared_bank_conflicts) "
                            "is not in this report.")
    # the rest of the diagnosis is unchanged, and notes come after every finding
    assert by_kernel(found, "copy_strided")[0].rule_id == "uncoalesced-global-access"
    first_note = next(i for i, f in enumerate(found) if is_not_checked(f))
    assert all(is_not_checked(f) for f in found[first_note:])


def test_without_useful_bytes_per_sector_the_strided_kernel_is_still_uncoalesced(recorded):
    old = nulled(recorded, "global_load_bytes_per_sector", "global_store_bytes_per_sector",
                 "l2_global_sectors", "l2_global_sectors_ideal", "thread_inst_pred_on_per_warp_inst")
    top = by_kernel(diagnose(old), "copy_strided")[0]
    assert top.rule_id == "uncoalesced-global-access"
    assert top.details["ideal_sectors_per_request"] is None and "The access width is not in the report" in top.message
    assert top.details["ideal_sectors_per_request_range"] == [4, 16] and top.details["excess_is_lower_bound"]
    assert not [f for f in by_kernel(diagnose(old), "copy_coalesced") if f.rule_id == "uncoalesced-global-access"]


def test_without_speed_of_light_every_subtree_runs_and_the_root_is_named(recorded):
    found = diagnose(nulled(recorded, "sm_throughput_pct", "memory_throughput_pct"))
    assert by_kernel(found, "copy_strided")[0].rule_id == "uncoalesced-global-access"
    note = notes(found, "copy_strided")["not-checked:speed-of-light"]
    assert "sm__throughput.avg.pct_of_peak_sustained_elapsed (sm_throughput_pct)" in note.message
    assert "gpu__compute_memory_throughput" in note.message


def test_a_report_with_no_metrics_gives_notes_not_a_crash(recorded):
    nothing = nulled(recorded, *LAUNCH_METRICS)
    # Nsight Compute's own warnings still back findings of their kind: UncoalescedGlobalAccess on the
    # strided copy, CPIStall on both (without the root's verdict, every subtree is looked into)
    backed = [f for f in diagnose(nothing) if not is_not_checked(f)]
    assert sorted((f.scope, f.rule_id, f.details["from_ncu_rule"]) for f in backed) == [
        ("copy_coalesced", "warp-stalls", "CPIStall"), ("copy_strided", "uncoalesced-global-access",
                                                        "UncoalescedGlobalAccess"),
        ("copy_strided", "warp-stalls", "CPIStall")]
    found = diagnose(replace(nothing, rules=nothing.rules.clear()))  # and without its rule results
    assert found and all(is_not_checked(f) for f in found)
    # one note per launch and rule, and the chain rule's over the profile (it could judge no launch)
    assert {f.scope for f in found} == {"copy_strided", "copy_coalesced", "2 launches"}
    assert all(f.details["missing"] or f.details["needs"] for f in found)


def test_empty_profile(recorded):
    empty = replace(recorded, launches=recorded.launches.clear(), rules=recorded.rules.clear())
    assert diagnose(empty) == []


def test_timeline_without_timeline_rules_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "coach.analyze.timeline_rules", None)  # as if the package were absent
    (note,) = diagnose(make_timeline(Source(path="synthetic.sqlite", format="nsys-sqlite", tool="Nsight Systems")))
    assert is_not_checked(note) and "timeline rules are not part of this version" in note.message


def test_timeline_goes_to_the_timeline_rules(monkeypatch):
    fake = types.ModuleType("coach.analyze.timeline_rules")
    fake.run_all = lambda timeline: ["timeline findings for " + timeline.source.path]
    monkeypatch.setitem(sys.modules, "coach.analyze.timeline_rules", fake)
    tl = make_timeline(Source(path="synthetic.sqlite", format="nsys-sqlite", tool="Nsight Systems"))
    assert diagnose(tl) == ["timeline findings for synthetic.sqlite"]


# ---- coach diagnose --------------------------------------------------------------------------

def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(["diagnose", *args])
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json(capsys, strided_ncu_rep):
    code, out, _ = run_cli(capsys, str(strided_ncu_rep), "--json")
    assert code == 0
    report = json.loads(out)
    kernels = {k["kernel"]: k for k in report["kernels"]}
    strided = kernels["copy_strided"]
    top = strided["findings"][0]
    assert top["rule_id"] == "uncoalesced-global-access" and top["category"] == "memory-access-pattern"
    assert {e["metric"]: e["value"] for e in top["evidence"]}["load_sectors_per_request"] == 32.0
    assert strided["duration_ns"] == 1_179_872.0 and strided["not_checked"] == []
    coalesced = [f["category"] for f in kernels["copy_coalesced"]["findings"]]
    assert coalesced[0] == "latency" and "dram-bandwidth" in coalesced  # the cause, then the DRAM-bound root


def test_cli_top_and_kernel_filter(capsys, strided_ncu_rep):
    code, out, _ = run_cli(capsys, str(strided_ncu_rep), "--json", "--top", "1", "--kernel", "coal")
    report = json.loads(out)
    assert code == 0 and [k["kernel"] for k in report["kernels"]] == ["copy_coalesced"]
    assert len(report["kernels"][0]["findings"]) == 1


def test_cli_rich_output(capsys, strided_ncu_rep):
    code, out, _ = run_cli(capsys, str(strided_ncu_rep))
    assert code == 0
    out = " ".join(out.split())  # the console wraps long lines at the terminal's width
    for text in ("copy_strided", "[memory-access-pattern] Uncoalesced global loads: 32 sectors per request, ideal 4",
                 "load_sectors_per_request", "gain model:", "next:", "matching Nsight Compute rule: UncoalescedGlobalAccess",
                 "where Nsight Compute differs:", "[dram-bandwidth] DRAM-bandwidth-bound kernel at 54% of peak"):
        assert text in out, text


def test_cli_lists_what_it_could_not_check(capsys, recorded, tmp_path):
    folder = save(nulled(recorded, "shared_bank_conflicts", "local_load_sectors"), tmp_path / "older")
    code, out, _ = run_cli(capsys, str(folder))
    assert code == 0
    out = " ".join(out.split())
    assert "not checked: Could not check shared-memory bank conflicts" in out
    assert "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum (local_load_sectors)" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--kernel", "no_such_kernel"], "no kernel matches --kernel 'no_such_kernel'"),
    (["--kernel", "("], "--kernel: not a regular expression"),
])
def test_cli_bad_filter_is_one_line(capsys, strided_ncu_rep, args, message):
    code, out, err = run_cli(capsys, str(strided_ncu_rep), *args)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_cli_unreadable_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(b"not a report")
    code, out, err = run_cli(capsys, str(bad))
    assert code != 0 and out == "" and err.startswith("coach: error:") and err.count("\n") == 1
