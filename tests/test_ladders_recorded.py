"""The ladders recorded on the H200 (traces/h200/ladders/<op>/): invariants every recorded results.json
must keep, the last rungs' numbers pinned from the files, the goals met and missed, and the
`measured` sentences and NOTES.md tables written from them (coach.analyze.ladder_evidence)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from coach import best_rates
from coach.analyze import ladder_evidence as ev
from coach.errors import InputError
from coach.ladders import goal_verdict, ladder_names, load_definition, load_results

ROOT = Path(__file__).resolve().parents[1]
LADDERS_H200 = ROOT / "traces" / "h200" / "ladders"
#: Every recorded results file, nested names (ladders/matmul/fp32/) and other sizes (results.<size>.json) too.
RECORDED = sorted((ROOT / "traces").glob("*/ladders/**/results*.json"))
NAMES = sorted(p.parent.relative_to(LADDERS_H200).as_posix() for p in LADDERS_H200.glob("**/results.json"))
MEMORY = ["gemv", "layernorm", "reduction", "scan", "softmax", "transpose"]


@cache
def recorded(name: str) -> ev.Recorded:
    return ev.recorded(name)


def test_the_six_memory_ladders_are_recorded_on_the_h200():
    assert set(MEMORY) <= set(NAMES) <= set(ladder_names())


def _label(path: Path) -> str:
    parts = path.relative_to(ROOT / "traces").parts
    return f"{parts[0]}/{'/'.join(parts[2:-1])}/{path.name}"


@pytest.mark.parametrize("path", RECORDED, ids=_label)
def test_recorded_results_keep_their_invariants(path):
    res = load_results(path)
    raw = json.loads(path.read_text())
    defn = load_definition(res.ladder)
    assert path.parent.as_posix().endswith(f"/ladders/{res.ladder}") and not res.synthetic
    assert path.name == ("results.json" if res.size_name == defn.main_size else f"results.{res.size_name}.json")
    assert {"date", "driver", "cuda", "torch", "git_commit", "command"} <= set(res.provenance)
    assert [m.key for m in res.rungs] == [r.key for r in defn.rungs], "every rung recorded, in ladder order"
    assert [p.key for p in res.peers] == list(defn.peers)
    model_bytes = {m.bytes for m in (*res.rungs, *res.peers)}
    assert len(model_bytes) == 1 and model_bytes.pop() > 0, "one bytes model for every rung and peer"
    assert len({m.flops for m in (*res.rungs, *res.peers)}) == 1, "one FLOP model for every rung and peer"
    for m in (*res.rungs, *res.peers):
        assert m.status == "ok", f"{m.key}: {m.error}"
        assert m.checks and all(c.passed and c.unwritten == 0 for c in m.checks), m.key
        assert all(c.rel_err is not None and c.rel_err <= c.tolerance for c in m.checks), m.key
        assert 0 < m.p20_s <= m.time_s <= m.p80_s, m.key
    # the ceiling is the calibration that results.json names, raised to the best rate recorded on the
    # GPU where one is higher (coach.best_rates): a measured ceiling is never below a recorded rate
    # (a ladder run before its GPU's calibration had the measurement names none: the stored one is used)
    source = raw["ceiling"]["source"] or "hardware/measured/h200.json"
    calibration = json.loads((ROOT / source).read_text())
    calibrated = calibration["measurements"][res.ceiling_name]["value"]
    assert res.ceiling_calibrated == calibrated
    best = best_rates.read("h200")["rates"].get(res.ceiling_name, {}).get("value")
    assert res.ceiling_value == max(calibrated, best or 0.0)
    assert bool(res.ceiling_note) == (res.ceiling_value > calibrated)
    assert res.ceiling_unit == defn.unit


@pytest.mark.parametrize("name", NAMES)
def test_table_columns_follow_from_the_times(name):
    """The rate is the work model (bytes, or FLOP for a compute-bound ladder) over the time; % of
    ceiling, x prev, x v0 and x base are ratios of the same times."""
    proc = subprocess.run([sys.executable, "-m", "coach", "ladder", name, "--json"], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    raw = json.loads((LADDERS_H200 / name / "results.json").read_text())
    times = [r["time_s"] for r in raw["rungs"]]
    base = next(p["time_s"] for p in raw["peers"] if p["key"] == raw["baseline"])
    ceiling = shown["ceiling"]["value"]  # the measured ceiling (coach.best_rates), at least the calibration
    assert ceiling >= (raw["ceiling"].get("value", raw["ceiling"].get("bytes_per_s")) or 0.0)
    work = "flops" if shown["unit"] == "FLOP/s" else "bytes"
    for i, (row, rec) in enumerate(zip(shown["rungs"], raw["rungs"], strict=True)):
        assert row["rung"] == rec["key"] and row["time_s"] == rec["time_s"]
        assert row["bytes_per_s"] == rec["bytes"] / rec["time_s"] and row["rate"] == rec[work] / rec["time_s"]
        assert row["pct_of_ceiling"] == pytest.approx(100 * rec[work] / rec["time_s"] / ceiling, rel=1e-12)
        assert row["vs_first"] == pytest.approx(times[0] / times[i], rel=1e-12)
        assert row["vs_baseline"] == pytest.approx(base / times[i], rel=1e-12)
        if i == 0:
            assert row["vs_previous"] is None and row["vs_first"] == 1.0
        else:
            assert row["vs_previous"] == pytest.approx(times[i - 1] / times[i], rel=1e-12)
            step = row["vs_baseline"] / shown["rungs"][i - 1]["vs_baseline"]
            assert step == pytest.approx(row["vs_previous"], rel=1e-12)
    chained = math.prod(r["vs_previous"] for r in shown["rungs"][1:])
    assert shown["rungs"][-1]["vs_first"] == pytest.approx(chained, rel=1e-12)


# Pinned from traces/h200/ladders/<op>/results.json (recorded 2026-11-30): rung or peer -> median seconds.
PINNED = {
    "reduction": {"05_single_pass": 0.00025171199440956115, "torch.sum": 0.00025932800769805906,
                  "cupy.sum": 0.00025116801261901853},
    "scan": {"05_lookback_vec4": 0.00019446399807929992, "09_lagged_lookback": 0.0001931840032339096,
             "10_lookback_warp": 0.0002562560141086578, "torch.cumsum": 0.000212351992726326},  # 2026-12-04 21:34
    "transpose": {"06_square_tile": 0.0005481920242309571, "07_banded_order": 0.0005523039996623993,
                  "09_tile_shapes": 0.0005475839972496032, "torch.compile": 0.0005503840148448944,
                  "torch .t().contiguous()": 0.0018585599660873413},  # 2026-12-03 13:29
    "softmax": {"05_triton": 0.00013407999277114868, "04_vec_registers": 0.00013446399569511414,
                "torch.compile": 0.0003112320005893707, "torch.softmax": 0.00041836801171302797},
    "layernorm": {"04_row_in_registers": 0.00013337600231170654, "05_triton": 0.0001361759975552559,
                  "torch.compile": 0.0001868479996919632},
    "gemv": {"02_vec8": 0.0001178240031003952, "03_rows_per_warp": 0.00011974400281906128,
             "04_streaming_loads": 0.00012454400211572646, "torch x @ W.T": 0.00012758399546146393},
}
# ... and the bandwidth each shows, TB/s to two places as `coach ladder` prints it.
PINNED_TBPS = {
    "reduction": {"05_single_pass": 4.27, "torch.sum": 4.14, "cupy.sum": 4.27},
    "scan": {"05_lookback_vec4": 2.76, "09_lagged_lookback": 2.78, "10_lookback_warp": 2.10, "torch.cumsum": 2.53},
    "transpose": {"06_square_tile": 3.92, "07_banded_order": 3.89, "09_tile_shapes": 3.92, "torch.compile": 3.90,
                  "torch .t().contiguous()": 1.16},
    "softmax": {"05_triton": 4.00, "04_vec_registers": 3.99, "torch.compile": 1.72, "torch.softmax": 1.28},
    "layernorm": {"04_row_in_registers": 4.03, "05_triton": 3.94, "torch.compile": 2.87},
    "gemv": {"02_vec8": 3.99, "03_rows_per_warp": 3.92, "04_streaming_loads": 3.77, "torch x @ W.T": 3.68},
}


@pytest.mark.parametrize("name", MEMORY)
def test_pinned_numbers(name):
    res = recorded(name).results
    measured = {m.key: m for m in (*res.rungs, *res.peers)}
    for key, seconds in PINNED[name].items():
        assert measured[key].time_s == seconds, key
        assert round(measured[key].bytes_per_s / 1e12, 2) == PINNED_TBPS[name][key], key


# ladder -> (last rung meets the goal, the rung with the highest bandwidth, the rungs that meet the goal)
GOALS = {
    "reduction": (True, "05_single_pass", {"04_vec4_grid_stride", "05_single_pass"}),
    "scan": (True, "11_segment_carry", {"11_segment_carry", "12_counter_carry"}),
    "transpose": (True, "09_tile_shapes", {"03_four_rows_per_thread", "04_vec4", "05_vec4_two_tiles", "06_square_tile",
                                           "07_banded_order", "08_persistent_pipelined", "09_tile_shapes"}),
    "softmax": (True, "05_triton", {"04_vec_registers", "05_triton"}),
    "layernorm": (True, "04_row_in_registers", {"04_row_in_registers", "05_triton"}),
    "gemv": (False, "02_vec8", {"02_vec8", "03_rows_per_warp"}),
}


@pytest.mark.parametrize("name", MEMORY)
def test_goals_met_and_missed(name):
    rec = recorded(name)
    rate = {row.rung.key: row.result.bytes_per_s for row in rec.rows}
    last_meets, best, meeting = GOALS[name]
    assert (rate[rec.defn.rungs[-1].key] >= rec.defn.goal_bytes_per_s) is last_meets
    assert max(rate, key=rate.get) == best
    assert {k for k, v in rate.items() if v >= rec.defn.goal_bytes_per_s} == meeting


def test_reduction_is_not_slower_than_torch_sum_and_level_with_cub():
    res = recorded("reduction").results
    last = res.rungs[-1].time_s
    assert last < res.peer("torch.sum").time_s
    assert abs(last / res.peer("cupy.sum").time_s - 1) < 0.01


@pytest.mark.parametrize("name", NAMES)
def test_every_rung_says_what_was_measured_and_each_step_back_says_why(name):
    """A rung slower than the one before it, or a last rung short of the goal, is a lesson: it has a why."""
    rec = recorded(name)
    for row in rec.rows:
        assert row.rung.measured, row.rung.key
        if row.vs_previous is not None and row.vs_previous < 1:
            assert row.rung.why, f"{row.rung.key} is slower than the rung before it"
    last = rec.rows[-1]
    if not goal_verdict(rec.defn, list(rec.rows)).meets(last):
        assert last.rung.why, f"{last.rung.key} misses the goal"


@pytest.mark.parametrize("name", NAMES)
def test_measured_sentences_and_notes_tables_match_the_recording(name):
    assert ev.stale(name) == [], f"run: python -m coach.analyze.ladder_evidence write {name}"


def test_measured_sentence_quotes_results_and_profile():
    rec = recorded("gemv")
    text = ev.measured_text(rec, 4)
    res = load_results(LADDERS_H200 / "gemv" / "results.json")
    rung = next(r for r in res.rungs if r.key.startswith("04"))
    pct = 100 * rung.bytes / rung.time_s / res.ceiling_value  # the measured ceiling
    assert text.startswith(f"124.5 us median (p20-p80 123.3-126.4 us), 3.77 TB/s = {pct:.1f}% of the DRAM read ceiling; "
                           "x0.96 over rung 03, x1.02 over torch x @ W.T. Nsight Compute, gemv04_streaming: 118.4 us")
    assert "DRAM 82.9% of peak (3.99 TB/s)" in text and "L2 hit 21.3%" in text
    multi = ev.measured_text(recorded("scan"), 0)
    assert "Nsight Compute, 5 kernels in 864.4 us; the longest, scan00_tiles: 481.2 us" in multi


def test_rung_profiles_take_each_rungs_longest_kernel():
    profiles = recorded("reduction").profiles
    assert set(profiles) == {r.key for r in load_definition("reduction").rungs}
    assert profiles["04_vec4_grid_stride"]["launches"] == 2
    assert profiles["04_vec4_grid_stride"]["kernel_name"] == "reduce_vec4_grid_stride"
    assert profiles["00_interleaved"]["launches"] == 4
    with pytest.raises(InputError, match="no launch in an NVTX range scan/"):
        ev.rung_profiles("scan", ev.profile_folder("reduction"))


TOML = """schema = "coach-ladder/1"
# a comment
[[rungs]]
id = "00"
file = "00_a.cu"
prediction = "fast"
measured = "old"
why = "kept as written"

[[rungs]]
id = "01"
file = "01_b.cu"
prediction = "faster"
"""


def test_with_measured_replaces_or_inserts_and_keeps_the_rest():
    new = ev.with_measured(TOML, {"00": 'new "quoted"', "01": "first"})
    assert new.count("measured =") == 2 and "# a comment" in new and 'why = "kept as written"' in new
    assert 'prediction = "fast"\nmeasured = "new \\"quoted\\""\nwhy' in new
    assert new.endswith('prediction = "faster"\nmeasured = "first"\n')
    assert ev.with_measured(new, {"00": 'new "quoted"', "01": "first"}) == new
    with pytest.raises(InputError, match="rung 01: no single-line prediction"):
        ev.with_measured(TOML.replace('prediction = "faster"\n', ""), {"01": "x"})


def test_with_table_fills_between_the_markers_only():
    notes = f"# Notes\n\n{ev.TABLE_BEGIN}\nold table\n{ev.TABLE_END}\n\nprose\n"
    assert ev.with_table(notes, "| a |") == f"# Notes\n\n{ev.TABLE_BEGIN}\n| a |\n{ev.TABLE_END}\n\nprose\n"
    with pytest.raises(InputError, match="no results table"):
        ev.with_table("# Notes\n", "| a |")


def test_write_into_a_copy_reproduces_the_committed_files(tmp_path):
    """`write` on a copy whose measured lines and table were emptied puts back the committed text."""
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels" / "gemv", kernels / "gemv")
    toml, notes = kernels / "gemv" / "ladder.toml", kernels / "gemv" / "NOTES.md"
    committed = toml.read_text(), notes.read_text()
    toml.write_text("".join(line for line in committed[0].splitlines(keepends=True) if not line.startswith("measured")))
    begin, end = committed[1].index(ev.TABLE_BEGIN), committed[1].index(ev.TABLE_END)
    notes.write_text(committed[1][:begin + len(ev.TABLE_BEGIN)] + "\n" + committed[1][end:])
    assert ev.stale("gemv", kernels=kernels) == [toml, notes]
    assert ev.write("gemv", kernels=kernels) == [toml, notes]
    assert (toml.read_text(), notes.read_text()) == committed
    assert ev.write("gemv", kernels=kernels) == []


def test_check_command_exits_zero_on_the_recording():
    proc = subprocess.run([sys.executable, "-m", "coach.analyze.ladder_evidence", "check"], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def _rate_t(name: str, key: str, results: str = "results.json") -> float:
    """A recorded rung's or peer's rate in T units (TFLOP/s or TB/s, by the ladder's ceiling), as
    `coach ladder` prints it."""
    res = load_results(LADDERS_H200 / name / results)
    m = next(m for m in (*res.rungs, *res.peers) if m.key == key)
    return (m.flops if res.ceiling_unit == "FLOP/s" else m.bytes) / m.time_s / 1e12


def test_readme_quotes_the_recorded_rates_of_the_new_ladders():
    """The README's figures for the FP8, decode-attention and transpose ladders are the recordings'
    (rate of the rung named, the peer, their ratio), as `coach ladder` prints them."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    rate = _rate_t
    fp8, fp8_peer = rate("matmul/fp8", "06_warp_specialized"), rate("matmul/fp8", "scaled_mm.fast_accum")
    assert f"{fp8:,.0f} TFLOP/s | torch._scaled_mm (cuBLASLt, fast accumulation): {fp8_peer:,.0f}" in readme
    assert f"{100 * fp8 / fp8_peer:.0f}% |" in readme
    dec, sdpa = rate("decode_attention", "06_fused_combine"), rate("decode_attention", "torch.sdpa")
    assert f"{dec:.2f} TB/s ({dec / sdpa:.2f}x SDPA, the fastest peer: {sdpa:.2f} TB/s)" in readme
    tr, comp = rate("transpose", "09_tile_shapes"), rate("transpose", "torch.compile")
    assert f"transpose {tr:.2f} TB/s (rung 09; torch.compile {comp:.2f}, {tr / comp:.2f}x)" in readme
    assert f"scan {rate('scan', '09_lagged_lookback'):.2f} TB/s (rung 09;" in readme


def test_readme_quotes_the_recorded_rates_of_the_compute_ladders():
    """The README's row for each compute ladder is its recording: last rung, fastest rung, library, shares."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    rate = _rate_t
    last, fastest, cublas = (rate("matmul/bf16", k) for k in ("10_wgmma_tma_store", "05_tma_persistent", "cublas.bf16"))
    assert (f"| {last:,.0f} TFLOP/s (fastest: Triton rung 05, {fastest:,.0f}) | cuBLAS BF16: {cublas:,.0f} | "
            f"85% of cuBLAS: met, {100 * last / cublas:.0f}% (fastest {100 * fastest / cublas:.0f}%) |") in readme
    att = {size: (rate("attention", "09_gluon_tuned", f), rate("attention", "torch.sdpa", f))
           for size, f in (("main", "results.json"), ("causal", "results.h200_causal.json"),
                           ("d64", "results.h200_d64.json"), ("d64c", "results.h200_d64_causal.json"))}
    share = {k: f"{100 * r / s:.0f}%" for k, (r, s) in att.items()}
    assert (f"| {att['main'][0]:,.0f} TFLOP/s (causal {att['causal'][0]:,.0f}; fastest: rung 08, "
            f"{rate('attention', '08_gluon_overlap'):,.0f}) | SDPA: {att['main'][1]:,.0f} "
            f"(causal {att['causal'][1]:,.0f}) | 75% of SDPA: met, {share['main']} (causal {share['causal']}; "
            f"D64 {share['d64']}, D64 causal {share['d64c']}) |") in readme
