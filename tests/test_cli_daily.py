"""The command line for daily use, run the way the README writes it: each defect found by trying it
as an Nsight and PyTorch user would, and the options that user expects (filters, exports, stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
UNSYNC = DATA / "hygiene_unsync"
DETAILS_CSV = DATA / "ncu_strided_copy" / "nvidia" / "details.csv"
STRIDED_REP = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
SOFTMAX_SQLITE = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"


def coach(*args, stdin=None, input=None, env=None, cwd=ROOT, columns=80):
    """``coach ARGS...`` in a subprocess, at COLUMNS=80 unless told otherwise."""
    e = {**os.environ, "COLUMNS": str(columns), **(env or {})}
    e.pop("COACH_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "coach", *map(str, args)], capture_output=True, text=True,
                          stdin=stdin, input=input, env=e, cwd=cwd)


def one_line_error(r, *words):
    assert r.returncode not in (0, 70), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------
# coach check
# --------------------------------------------------------------------------------------------


def test_check_a_trace_and_its_benchmark_together_as_the_readme_writes_it():
    """`coach check bench.sqlite bench.json`: the export embeds the program (and its times_ms); it
    is the trace, the JSON the benchmark."""
    r = coach("check", UNSYNC / "unsync.sqlite", UNSYNC / "unsync.json", "--json")
    assert r.returncode == 1, r.stderr  # warnings raised: exit 1, as documented
    doc = json.loads(r.stdout)
    flagged = {f["rule_id"] for f in doc["flags"]}
    assert "unsynchronised" in flagged
    sources = {e["source"] for f in doc["flags"] if f["rule_id"] == "unsynchronised" for e in f["evidence"]}
    assert {"benchmark", "Nsight Systems"} <= sources


@pytest.mark.parametrize("export", [UNSYNC / "unsync.sqlite", DATA / "hygiene_warm_l2" / "warm-l2.sqlite"])
def test_check_an_nsys_export_alone_is_no_internal_error(export):
    r = coach("check", export)
    assert r.returncode in (0, 1), r.stderr
    assert "internal error" not in r.stderr and "UnicodeDecodeError" not in r.stderr
    assert export.name in r.stdout


def test_check_binary_file_named_like_a_benchmark_is_one_line(tmp_path):
    bad = tmp_path / "bench.json"
    bad.write_bytes(b'{"times_ms": [1.0, \xd8\xff]}')
    one_line_error(coach("check", bad), str(bad))


# --------------------------------------------------------------------------------------------
# coach load on an ncu --csv --page details export
# --------------------------------------------------------------------------------------------


def test_load_details_csv_shows_the_dram_rate_the_page_prints():
    """The details page prints Memory Throughput 3.87 Tbyte/s (dram__bytes.sum.per_second) and
    DRAM Throughput 80.39%: the rate is the one the .ncu-rep gives, never 0 B/s."""
    r = coach("load", DETAILS_CSV, columns=160)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if "copy_strided" in line)
    assert "3.87 TB/s" in row and "80.4%" in row and "0 B/s" not in r.stdout
    csv_k = json.loads(coach("load", DETAILS_CSV, "--json").stdout)["summary"]["kernels"]
    rep_k = json.loads(coach("load", STRIDED_REP, "--json").stdout)["summary"]["kernels"]
    for c, n in zip(csv_k, rep_k):
        assert c["kernel_name"] == n["kernel_name"]
        # the page prints three digits of the rate and of the duration
        assert c["dram_bytes_per_s"] == pytest.approx(n["dram_bytes_per_s"], rel=6e-3)


# --------------------------------------------------------------------------------------------
# coach ladder --live without a GPU
# --------------------------------------------------------------------------------------------


def test_ladder_live_without_a_gpu_is_one_line_and_leaves_nothing(tmp_path):
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU: --live measures")
    except ImportError:
        pass
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    r = coach("ladder", "softmax", "--live", env={"TMPDIR": str(scratch)})
    one_line_error(r, "--live", "GPU")
    assert r.stdout == ""
    assert list(scratch.iterdir()) == []  # no coach-ladder-* folder left behind


# --------------------------------------------------------------------------------------------
# coach run off a terminal, and as JSON
# --------------------------------------------------------------------------------------------


def test_run_with_no_answer_on_stdin_walks_through(tmp_path):
    with open(os.devnull) as devnull:
        r = coach("run", "7", stdin=devnull)
    assert r.returncode == 0, r.stderr
    assert "aborted" not in r.stdout + r.stderr
    assert "Before and after" in r.stdout and "your answer:" in r.stderr


def test_run_reads_a_piped_answer():
    r = coach("run", "7", input="one block more than a wave: a second, nearly empty wave\n")
    assert r.returncode == 0, r.stderr
    assert "Compare your answer with what a strong one covers" in r.stdout


def test_run_json_gives_the_recorded_numbers():
    r = coach("run", "scenario-07", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    results = json.loads((ROOT / "traces" / "h200" / "scenario-07" / "results.json").read_text())
    assert doc["scenario"] == "scenario-07" and doc["gpu"] == results["gpu"]
    assert doc["diagnosis"][0]["rule_id"] == doc["expected_first_rule"] == "tail-effect"
    slow, fixed = doc["before_after"]["slow"]["ms"], doc["before_after"]["fixed"]["ms"]
    assert doc["speedup"] == pytest.approx(slow / fixed, rel=1e-9)
    assert doc["evidence"] == results["evidence"]


# --------------------------------------------------------------------------------------------
# Clean edges: usage errors, help, doctor
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("roofline", STRIDED_REP), ("load", "--top", "0", STRIDED_REP), ("diff", STRIDED_REP),
                                  ("load", "--no-such-option", STRIDED_REP)])
def test_usage_errors_are_one_line(args):
    assert one_line_error(coach(*args)).startswith("coach: error: ")


def test_unreadable_file_is_one_line(tmp_path, monkeypatch, capsys):
    """An unreadable profile (root reads any file, so the open fails here by hand)."""
    from coach.cli import main

    bad = tmp_path / "locked.ncu-rep"
    bad.write_bytes(STRIDED_REP.read_bytes()[:64])
    real_open = Path.open

    def locked(self, *a, **kw):
        if self == bad:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", locked)
    with pytest.raises(SystemExit) as exit_:
        main(["load", str(bad)])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err.count("\n") == 0
    assert err == f"coach: error: {bad}: cannot be read (Permission denied)"


def _commands():
    from coach.cli import main  # noqa: F401 - registers the commands
    from coach.cli.main import app

    return sorted(c.name or c.callback.__name__.removesuffix("_cmd") for c in app.registered_commands)


def test_help_names_values_not_python_types():
    r = coach("--help")
    assert r.returncode == 0 and "<bool>" not in r.stdout
    for name in ("load", "diagnose", "check", "ladder", "run", "diff", "join"):
        out = coach(name, "--help").stdout
        assert "<list[" not in out and "<int" not in out and "<bool>" not in out and "<Path>" not in out, name
        assert "<float" not in out and "<str>" not in out, name


def test_command_list_reflows_docstrings():
    """The command list wraps each summary at the terminal's width, not at the docstring's breaks:
    a summary's continuation lines are full, not a short line followed by a long one."""
    out = coach("--help").stdout
    body = [line for line in out.splitlines() if line.startswith("│ ")]
    for prev, line in zip(body, body[1:]):
        if line.startswith("│            ") and prev.rstrip(" │").strip():
            # a wrapped line ends near the right edge unless a hard break cut it
            if not line.rstrip(" │").rstrip().endswith("."):
                assert len(prev.rstrip(" │")) > 60, (prev, line)


@pytest.mark.slow
def test_help_examples_name_files_that_exist():
    import re

    for name in _commands():
        out = coach(name, "--help", columns=200).stdout
        for path in re.findall(r"\b((?:traces|tests|kernels|scenarios)/[\w./-]+)", out):
            path = path.rstrip(".")
            if "<" in path or "NAME" in path or path.endswith("/"):
                continue
            assert (ROOT / path).exists(), f"coach {name} --help names {path}"


def test_doctor_says_what_it_is_doing_first():
    r = coach("doctor", "--quick")
    assert "checking the GPU tools" in r.stderr.splitlines()[0]


# --------------------------------------------------------------------------------------------
# coach load: filters, sorts, statistics, names, exports, stdin, --brief
# --------------------------------------------------------------------------------------------


def load_json(*args, **kw):
    r = coach("load", *args, "--json", **kw)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_load_from_stdin_is_the_file():
    with open(SOFTMAX_SQLITE, "rb") as fh:
        r = subprocess.run([sys.executable, "-m", "coach", "load", "-", "--json"], stdin=fh, capture_output=True,
                           cwd=ROOT)
    assert r.returncode == 0, r.stderr
    piped, named = json.loads(r.stdout), load_json(SOFTMAX_SQLITE)
    assert piped["path"] == "- (stdin)"
    assert piped["summary"]["top_kernels"] == named["summary"]["top_kernels"]
    one_line_error(coach("load", "-", input=""), "stdin is empty")


def test_two_template_instances_are_named_apart():
    r = coach("load", SOFTMAX_SQLITE, columns=160)
    rows = [line for line in r.stdout.splitlines() if line.startswith("vectorized_elementwise_kernel")]
    assert len(rows) == 2 and len({row.split()[0] for row in rows}) == 2, rows
    assert any("CUDAFunctorOnSelf_add<float>" in row for row in rows)
    assert any("MulFunctor<float>" in row for row in rows)


def test_load_stats_are_the_summary_columns_nsys_stats_prints():
    """--stats shows count, total, avg, median, min, max, stddev: the columns timeline_summary computes
    (tests/test_summary_vs_nsys_stats.py checks them against nsys stats)."""
    doc = load_json(SOFTMAX_SQLITE)
    top = doc["summary"]["top_kernels"][0]
    r = coach("load", SOFTMAX_SQLITE, "--stats", columns=160)
    header = next(line for line in r.stdout.splitlines() if line.startswith("kernel "))
    assert header.split() == ["kernel", "count", "total", "avg", "med", "min", "max", "stddev", "%", "time"]
    row = next(line for line in r.stdout.splitlines() if line.startswith(top["name"]))
    assert f"{top['median_ns'] / 1e3:.2f} us" in row and f"{top['stddev_ns']:.0f} ns" in row
    assert f"{top['max_ns'] / 1e3:.2f} us" in row and f"{top['min_ns'] / 1e3:.2f} us" in row


@pytest.mark.parametrize("sort,column,descending", [("count", "count", True), ("max", "max_ns", True),
                                                    ("median", "median_ns", True), ("name", "name", False)])
def test_load_sort(sort, column, descending):
    kernels = load_json(SOFTMAX_SQLITE, "--sort", sort)["summary"]["top_kernels"]
    values = [k[column] for k in kernels]
    assert values == sorted(values, reverse=descending)


def test_load_kernel_filter_on_both_kinds():
    kernels = load_json(SOFTMAX_SQLITE, "--kernel", "elementwise")["summary"]["top_kernels"]
    assert {k["name"] for k in kernels} == {"vectorized_elementwise_kernel", "distribution_elementwise_grid_stride_kernel"}
    assert sum(k["count"] for k in kernels) == 7 and sum(k["time_pct"] for k in kernels) == pytest.approx(100)
    ncu = load_json(STRIDED_REP, "--kernel", "^copy_strided$")["summary"]["kernels"]
    assert [k["kernel_name"] for k in ncu] == ["copy_strided"] and ncu[0]["total_ns"] == 1_179_872.0
    one_line_error(coach("load", SOFTMAX_SQLITE, "--kernel", "gemm"), "no kernel matches", "cunn_SoftMaxForwardReg")


def test_load_nvtx_range_keeps_the_work_launched_inside():
    whole = load_json(SOFTMAX_SQLITE)
    step0 = load_json(SOFTMAX_SQLITE, "--nvtx", "^step0$")
    rest = load_json(SOFTMAX_SQLITE, "--nvtx", "^step[12]$")
    assert [r["text"] for r in step0["summary"]["nvtx"]] == ["step0"]
    count = lambda d: sum(k["count"] for k in d["summary"]["top_kernels"])  # noqa: E731
    # the three steps launch the same kernels; the set-up before step0 launches the rest
    assert count(step0) == 3 and count(rest) == 6 and count(whole) == 11
    assert step0["summary"]["memcpy"][0]["count"] + rest["summary"]["memcpy"][0]["count"] == 3
    one_line_error(coach("load", SOFTMAX_SQLITE, "--nvtx", "nope"), "no NVTX range matches", "step0")


def test_load_time_window():
    whole = load_json(SOFTMAX_SQLITE)
    early, late = load_json(SOFTMAX_SQLITE, "--end", "300"), load_json(SOFTMAX_SQLITE, "--start", "300")
    for table in ("kernels", "api", "memcpy"):
        assert early["summary"]["counts"][table] + late["summary"]["counts"][table] == whole["summary"]["counts"][table]
    assert late["summary"]["counts"]["kernels"] > 0 and early["summary"]["counts"]["kernels"] > 0
    one_line_error(coach("load", STRIDED_REP, "--start", "1"), "no time axis")
    one_line_error(coach("load", SOFTMAX_SQLITE, "--start", "5", "--end", "2"), "not after")


def test_load_csv_and_parquet_hold_every_kernel_row(tmp_path):
    import polars as pl

    csv, parquet = tmp_path / "k.csv", tmp_path / "k.parquet"
    r = coach("load", SOFTMAX_SQLITE, "--top", "2", "--csv", csv, "--parquet", parquet)
    assert r.returncode == 0, r.stderr
    doc = load_json(SOFTMAX_SQLITE)
    a, b = pl.read_csv(csv), pl.read_parquet(parquet)
    assert a.height == b.height == doc["summary"]["counts"]["kernels"] - 6  # 11 launches of 5 kernels
    assert a["total_ns"].to_list() == b["total_ns"].to_list() == [k["total_ns"] for k in doc["summary"]["top_kernels"]]
    assert a["display_name"].n_unique() == a.height
    both = tmp_path / "both.csv"
    assert coach("load", SOFTMAX_SQLITE, STRIDED_REP, "--csv", both).returncode == 0
    rows = pl.read_csv(both)
    assert set(rows["path"]) == {str(SOFTMAX_SQLITE), str(STRIDED_REP)}
    bad = coach("load", SOFTMAX_SQLITE, "--csv", tmp_path / "no" / "such" / "k.csv")
    one_line_error(bad, "cannot be written")
    assert not (tmp_path / "no").exists()


def test_load_brief_is_short():
    full, brief = coach("load", SOFTMAX_SQLITE), coach("load", SOFTMAX_SQLITE, "--brief")
    assert brief.returncode == 0
    assert "API calls by time" in full.stdout and "API calls by time" not in brief.stdout
    assert "Kernels by time" in brief.stdout and "First findings" in brief.stdout
    assert len(brief.stdout.splitlines()) < len(full.stdout.splitlines()) / 2


# --------------------------------------------------------------------------------------------
# 80 columns: every line fits, numbers whole
# --------------------------------------------------------------------------------------------

AT_80 = [
    (("load", STRIDED_REP), ["3.87 TB/s", "1.18 ms", "198.08 us", "copy_coalesced"]),
    (("load", DETAILS_CSV), ["3.87 TB/s", "80.4%"]),
    # a measured DRAM share of 0.000078% of peak (a compute-bound kernel) is not printed as "0.0%"
    (("load", ROOT / "traces/h200/scenario-07/slow/ncu"), ["3.74 MB/s 0.000078%", "1 launch profiled"]),
    (("load", SOFTMAX_SQLITE, "--stats"), ["171.14 us", "57.06 us", "cunn_SoftMaxForwardReg", "132.93 ms"]),
    (("join", DATA / "joined_strided_copy" / "strided_copy.sqlite", DATA / "joined_strided_copy" / "strided_copy_ncu"),
     ["217.1 us", "197.8 us", "copy_coalesced"]),
    (("diff", ROOT / "traces/h200/scenario-01/slow/ncu", ROOT / "traces/h200/scenario-01/fixed/ncu"),
     ["704.64M", "12.88 GB", "3.22 GB", "sector/request", "+201%"]),
    # a kernel's mangled name is one word wider than the table leaves: it folds, the times beside it
    # stay whole (they were squeezed to one character a line), and a change is signed in its unit
    (("diff", ROOT / "traces/h200/scenario-14/slow/nsys", ROOT / "traces/h200/scenario-14/fixed/nsys"),
     ["1,500 x, 9.88 ms", "-4.02 ms", "+2.63 ms", "-462.61 ms", "-61.41 ms"]),
    (("check", UNSYNC / "unsync.sqlite", UNSYNC / "unsync.json"), ["52.8%", "bandwidth_bytes_per_s = 56.08 TB/s"]),
    (("ladder", "softmax"), ["646.6 us", "1,981", "4,004", "93.7"]),  # % of the best recorded copy rate, 4.27 TB/s
    (("run", "15", "--no-interactive"), ["47.38 ms", "6.81 ms", "6.96x", "54.55 GB/s"]),
    (("diagnose", STRIDED_REP, "--top", "1"), ["copy_strided"]),
    (("gpus",), ["a100-sxm4-40gb", "1.555", "494.5", "2026-11-30"]),
    (("load", DATA / "nsys_ranks"), ["rank5 is the slowest"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("args,whole", AT_80, ids=lambda x: x[0] if isinstance(x, tuple) else None)
def test_output_fits_80_columns_and_keeps_numbers_whole(args, whole):
    r = coach(*args, columns=80)
    assert r.returncode in (0, 1), r.stderr
    too_wide = [line for line in r.stdout.splitlines() if len(line.rstrip()) > 80]
    assert not too_wide, too_wide
    for token in whole:
        assert token in r.stdout, (token, r.stdout)


def test_ladder_brief():
    full, brief = coach("ladder", "matmul"), coach("ladder", "matmul", "--brief")
    assert brief.returncode == 0, brief.stderr
    assert "predicted:" in full.stdout and "predicted:" not in brief.stdout
    assert brief.stdout.count("goal:") == full.stdout.count("goal:") >= 2  # one per ladder of the family
    assert len(brief.stdout.splitlines()) < len(full.stdout.splitlines()) / 3


# --------------------------------------------------------------------------------------------
# --csv / --parquet on diagnose, join and diff
# --------------------------------------------------------------------------------------------


def test_diagnose_csv_and_parquet_are_the_json_findings(tmp_path):
    import polars as pl

    csv, parquet = tmp_path / "f.csv", tmp_path / "f.parquet"
    assert coach("diagnose", STRIDED_REP, "--csv", csv, "--parquet", parquet).returncode == 0
    doc = json.loads(coach("diagnose", STRIDED_REP, "--json").stdout)
    want = [(k["kernel"], f["rule_id"]) for k in doc["kernels"] for f in k["findings"] + k["not_checked"]]
    for frame in (pl.read_csv(csv), pl.read_parquet(parquet)):
        assert list(zip(frame["kernel"], frame["rule_id"])) == want
    first = pl.read_parquet(parquet).row(0, named=True)
    assert first["estimated_saving_ns"] == doc["kernels"][0]["findings"][0]["estimated_saving_ns"]
    assert json.loads(first["evidence"]) == doc["kernels"][0]["findings"][0]["evidence"]


def test_join_and_diff_exports(tmp_path):
    import polars as pl

    nsys, ncu = DATA / "joined_strided_copy" / "strided_copy.sqlite", DATA / "joined_strided_copy" / "strided_copy_ncu"
    out = tmp_path / "joined.parquet"
    assert coach("join", nsys, ncu, "--parquet", out).returncode == 0
    joined = json.loads(coach("join", nsys, ncu, "--json").stdout)["kernels"]
    assert pl.read_parquet(out)["total_ns"].to_list() == [k["total_ns"] for k in joined]
    slow, fixed = ROOT / "traces/h200/scenario-01/slow/ncu", ROOT / "traces/h200/scenario-01/fixed/ncu"
    moves = tmp_path / "moves.csv"
    assert coach("diff", slow, fixed, "--csv", moves).returncode == 0
    doc = json.loads(coach("diff", slow, fixed, "--json").stdout)
    frame = pl.read_csv(moves)
    assert frame.height == len(doc["movements"])
    assert frame["after"].to_list() == pytest.approx([m["after"] for m in doc["movements"]], nan_ok=True)
