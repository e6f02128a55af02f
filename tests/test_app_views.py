"""The dashboard's views without a browser: findings grouped by kernel, the code of each scenario's
fix, the timeline's window summary against coach's own timeline analysis, the walkthrough's state
across reloads, and the local server's host check, headers and compression."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from app_support import RAW_CSV, WALKTHROUGH_ID, dispatch, many_launches_csv, strided_walkthrough, upload

from coach.app import Settings, create_app, finding_groups, server, timeline_view, variant_code
from coach.app.pages import explore, scenario
from coach.app.reports import shipped_traces
from coach.app.walkthrough import ANSWER_STEP, scenario_walkthroughs
from coach.ingest import load

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app(tmp_path):
    return create_app(Settings(walkthroughs=lambda: [strided_walkthrough()], traces_dir=tmp_path / "traces",
                               kernels_dir=tmp_path / "kernels", progress_path=tmp_path / "progress.sqlite"))


# --------------------------------------------------------------------------------------------
# Findings grouped by kernel
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """105 launches of the recorded copy_strided (synthetic: its raw-CSV row repeated, see app_support)."""
    return load(many_launches_csv(tmp_path_factory.mktemp("many") / "copy_x105.csv", 105))


def test_105_launches_of_one_kernel_are_one_group_per_finding(many):
    from coach.app import analysis

    found = [f for f in analysis.findings(many) if not analysis.is_note(f)]
    assert len(found) == 210  # the same two findings in every launch, as diagnose gives them
    groups = finding_groups.group(found, finding_groups.launches_named(many.launches))
    assert [(g.rule_id, g.kernel, len(g.findings)) for g in groups] == [
        ("uncoalesced-global-access", "copy_strided", 105), ("speed-of-light", "copy_strided", 105)]
    top = groups[0]
    assert top.launch_ids == list(range(105))
    assert top.saving_ns == pytest.approx(sum(f.estimated_saving_ns for f in top.findings))
    # every launch has the recorded numbers, so median and range are the one recorded value
    sectors = {r["metric"]: r for r in top.evidence_stats.iter_rows(named=True)}
    first = {e.metric: e.value for e in top.top.evidence}
    for metric, value in first.items():
        if value is not None:
            assert sectors[metric]["median"] == sectors[metric]["min"] == sectors[metric]["max"] == pytest.approx(value)
            assert sectors[metric]["launches"] == 105


def test_groups_keep_launches_that_differ_visible():
    from coach.analyze.findings import Bottleneck, Evidence, Finding

    def f(launch, value, saving):
        return Finding("r", Bottleneck.DRAM, "t", "m", "n", evidence=(Evidence("x", value, "%"),), launch_id=launch,
                       estimated_saving_ns=saving)
    g, = finding_groups.group([f(0, 10.0, 5.0), f(1, 90.0, 50.0), f(2, 20.0, 7.0)], {0: "k", 1: "k", 2: "k"})
    assert g.top.launch_id == 1  # the largest saving is shown in full
    (row,) = g.evidence_stats.iter_rows(named=True)
    assert (row["median"], row["min"], row["max"]) == (20.0, 10.0, 90.0)
    assert finding_groups.id_ranges([0, 1, 2, 3, 7, 9, 10]) == "0–3, 7, 9–10"


def test_the_explorer_draws_105_launches_as_two_cards_on_one_page(app, many):
    report = app.ctx.reports.add("copy_x105.csv", many)
    body, page, pages = explore.findings_view(report, explore.ALL_KERNELS, 0)
    text = json.dumps(body.to_plotly_json(), default=lambda o: o.to_plotly_json(), ensure_ascii=False)
    assert (page, pages) == (0, 1)
    assert text.count('"card finding top"') == 1 and text.count('"card finding"') == 1
    assert "210 findings in 2 groups on 1 kernel" in text
    assert "copy_strided" in text and ": the same finding in 105 launches (IDs 0–104)" in text
    assert "median of 105" in text
    assert len(text) < 40_000  # the page of 210 cards was 1.35 MB
    options = explore.kernel_options(report)
    assert options == [{"label": "all kernels", "value": explore.ALL_KERNELS},
                       {"label": "copy_strided · 105 launches", "value": "k:copy_strided"}]


def test_findings_come_a_page_at_a_time():
    from coach.analyze.findings import Bottleneck, Finding

    found = [Finding(f"rule-{i}", Bottleneck.DRAM, "t", "m", "n", scope=f"k{i}", estimated_saving_ns=100 - i)
             for i in range(finding_groups.PAGE_SIZE * 2 + 1)]
    groups = finding_groups.group(found)
    first, page, pages = finding_groups.page_of(groups, 0)
    last, at, _ = finding_groups.page_of(groups, 99)
    assert (len(first), page, pages) == (finding_groups.PAGE_SIZE, 0, 3) and (len(last), at) == (1, 2)
    assert first[0].rule_id == "rule-0" and last[0].rule_id == f"rule-{finding_groups.PAGE_SIZE * 2}"
    assert explore.pager(1, 3) == ("page 2 of 3", False, False, {"display": "flex"})


def test_the_pager_moves_through_the_findings(app, many):
    report = app.ctx.reports.add("copy_x105.csv", many)
    data = {"token": report.token, "name": report.name}
    out = dispatch(app, "..exp-findings.children", {"exp-kernel-filter.value": "k:copy_strided", "exp-drawn.data": True,
                                                    "exp-page-next.n_clicks": 1, "exp-findings-page.data": 0,
                                                    "exp-shown.data": data}, triggered="exp-page-next.n_clicks")
    assert out["exp-findings-page"]["data"] == 0 and out["exp-page-label"]["children"] == "page 1 of 1"


# --------------------------------------------------------------------------------------------
# The code of each scenario's fix
# --------------------------------------------------------------------------------------------


def test_every_scenario_shows_the_code_its_variants_differ_in():
    walks = {w.id: w.complete() for w in scenario_walkthroughs()}
    assert len(walks) == 20
    for wid, w in walks.items():
        assert w.code, wid
        for change in w.code:
            assert change.slow.strip() and change.fixed.strip() and change.slow != change.fixed, (wid, change.label)


def test_a_kernel_declared_with_launch_bounds_on_its_own_line_is_found():
    text = (ROOT / "scenarios" / "scenario-02-transpose-bank-conflicts" / "transpose.cu").read_text()
    code = variant_code.cuda_function(text, "transpose_tile33")
    assert code.startswith('extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)')
    assert code.splitlines()[1].startswith("transpose_tile33(") and code.rstrip().endswith("}")
    assert "transpose_tile32(" not in code


def test_braces_in_comments_and_strings_do_not_end_a_kernel():
    text = ('// a { stray brace\n__global__ void k(int* p) {\n  const char* s = "}";  /* } */\n'
            "  if (p) { p[0] = 1; }\n}\n__global__ void other() {}\n")
    assert variant_code.cuda_function(text, "k").splitlines()[-1] == "}"
    assert "other" not in variant_code.cuda_function(text, "k")
    assert variant_code.cuda_function(text, "missing") is None


def test_a_program_that_branches_on_its_variant_is_shown_as_each_variant_runs_it():
    text = ('TABLE = {"slow": 1, "fixed": 2}\n\n'
            "def main(args):\n"
            '    n = TABLE[args.variant]\n'
            '    m = 3 if args.variant == "slow" else 4\n'
            '    if args.variant == "fixed":\n'
            "        prepare()\n"
            "        n += 1\n"
            "    else:\n"
            "        pass\n"
            '    if variant == "fixed" and pinned:\n'
            "        pin()\n"
            "    run(n, m)\n")
    slow = variant_code.specialise(text, "slow")
    fixed = variant_code.specialise(text, "fixed")
    assert slow[3:] == ["    n = 1", "    m = 3", "    pass", "    run(n, m)"]
    # a condition that also depends on something else is left as it is
    assert fixed[3:] == ["    n = 2", "    m = 4", "    prepare()", "    n += 1",
                         '    if variant == "fixed" and pinned:', "        pin()", "    run(n, m)"]


def test_the_functions_only_one_variant_calls_come_with_it():
    change = variant_code.program_change(ROOT / "scenarios" / "scenario-11-unfused-chain" / "chain.py",
                                         ROOT / "scenarios" / "scenario-11-unfused-chain" / "chain.py")
    assert "step = unfused" in change.slow and "def unfused(" in change.slow and "def fused_step(" not in change.slow
    assert "step = fused_step" in change.fixed and "fused.launch(x, A, B, C, y)" in change.fixed


# --------------------------------------------------------------------------------------------
# The timeline's window
# --------------------------------------------------------------------------------------------


def test_the_window_summary_is_coach_s_own_busy_time(softmax_nsys_sqlite):
    from coach.analyze.timeline import TimelineAnalysis

    tl = load(softmax_nsys_sqlite)
    ev = timeline_view.events(tl)
    s = timeline_view.window_summary(ev, *tl.span_ns)
    (u,) = TimelineAnalysis(tl).utilisation.iter_rows(named=True)
    (d,) = s["devices"]
    assert d["busy_ns"] == u["busy_ns"]
    assert d["by_kind_ns"] == {k: u[f"{k}_ns"] for k in ("kernel", "memcpy", "memset") if u[f"{k}_ns"]}
    assert s["events"] == ev.count


def test_memsets_get_a_lane_of_their_own_under_their_stream_s_kernels():
    from coach.model import Source, make_timeline

    tl = make_timeline(
        Source("t.sqlite", "nsys-sqlite", "Nsight Systems"),
        kernels=pl.DataFrame({"start_ns": [0], "end_ns": [1000], "dur_ns": [1000], "device_id": [0], "stream_id": [7],
                              "name": ["k"]}),
        memset=pl.DataFrame({"start_ns": [10], "end_ns": [20], "device_id": [0], "stream_id": [7], "bytes": [4]}),
    )
    ev = timeline_view.events(tl)
    assert ev.lanes == ["GPU 0 · stream 7", "GPU 0 · stream 7 · memset"]
    _, bars = timeline_view.figure(ev, 0, 1000)
    assert dict(zip(bars["category"], bars["lane"])) == {"kernel": "GPU 0 · stream 7", "memset": "GPU 0 · stream 7 · memset"}


def test_a_search_finds_events_by_name_and_sums_them(softmax_nsys_sqlite):
    tl = load(softmax_nsys_sqlite)
    ev = timeline_view.events(tl)
    found = timeline_view.search(ev, "SOFTMAX")
    table = timeline_view.matches_table(found)
    kernels = tl.kernels.filter(pl.col("name").str.to_lowercase().str.contains("softmax"))
    row = table.filter(pl.col("category") == "kernel").row(0, named=True)
    assert row["count"] == kernels.height and row["total_ns"] == kernels["dur_ns"].sum()
    assert timeline_view.search(ev, "no such event").count == 0


def test_a_click_on_a_single_event_shows_its_record(softmax_nsys_sqlite):
    tl = load(softmax_nsys_sqlite)
    ev = timeline_view.events(tl)
    k = tl.kernels.sort("start_ns").row(0, named=True)
    _, bars = timeline_view.figure(ev, k["start_ns"], k["end_ns"])
    bar = bars.filter(pl.col("category") == "kernel").row(0, named=True)
    d = timeline_view.details(ev, tl, bar["kind"], bar["row"], bar["start_ns"], bar["end_ns"], bar["lane"])
    assert d["single"] and d["name"] == k["name"] and d["record"]["dur_ns"] == k["dur_ns"]


# --------------------------------------------------------------------------------------------
# The walkthrough across reloads
# --------------------------------------------------------------------------------------------


def test_a_reload_reopens_the_step_and_the_committed_answer():
    saved = {WALKTHROUGH_ID: {"step": 4, "answer": "sectors"}}
    assert scenario.restore(saved, WALKTHROUGH_ID, None) == {"step": 4, "answer": "sectors"}
    assert scenario.restore(saved, WALKTHROUGH_ID, 2) == {"step": 2, "answer": "sectors"}  # the URL's step wins
    # no answer committed: the URL cannot skip the answer step
    assert scenario.restore({}, WALKTHROUGH_ID, 4) == {"step": ANSWER_STEP, "answer": ""}
    assert scenario.wanted_step({"step": "3"}) == 2 and scenario.wanted_step({"step": "99"}) == 5
    assert scenario.wanted_step({"step": "x"}) is None and scenario.wanted_step({}) is None


def test_the_state_callback_restores_from_the_session_and_saves_each_move(app):
    opened = dispatch(app, "..scn-step-store.data", {"scn-saved.data": {WALKTHROUGH_ID: {"step": 3, "answer": "a"}},
                                                     "scn-step-store.data": None, "scn-id.data": WALKTHROUGH_ID,
                                                     "scn-wanted.data": None}, triggered="")
    assert opened["scn-step-store"]["data"] == {"step": 3, "answer": "a"}
    moved = dispatch(app, "..scn-step-store.data", {"scn-next.n_clicks": 1, "scn-step-store.data": {"step": 3, "answer": "a"},
                                                    "scn-saved.data": {}, "scn-id.data": WALKTHROUGH_ID},
                     triggered="scn-next.n_clicks")
    assert moved["scn-saved"]["data"] == {WALKTHROUGH_ID: {"step": 4, "answer": "a"}}


# --------------------------------------------------------------------------------------------
# The explorer's picker, the local server
# --------------------------------------------------------------------------------------------


def test_the_picker_lists_traces_only():
    listed = [t.id for t in shipped_traces(ROOT / "traces")]
    assert listed and not [t for t in listed if t.endswith(".json")]  # results and provenance are not traces
    assert "h200/scenario-14/slow/kineto" in listed and "h200/scenario-01/slow/report.ncu-rep.xz" in listed


def test_a_request_for_another_host_name_is_refused(app):
    client = app.server.test_client()
    assert client.get("/", headers={"Host": "127.0.0.1:8050"}).status_code == 200
    assert client.get("/", headers={"Host": "attacker.example:8050"}).status_code == 400
    assert server.allowed_hosts("0.0.0.0") is None and "10.0.0.5" in server.allowed_hosts("10.0.0.5")


def test_pages_may_not_be_framed_and_load_only_from_the_server(app):
    headers = app.server.test_client().get("/").headers
    assert headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_responses_are_compressed_and_mathjax_is_not_loaded(app):
    client = app.server.test_client()
    page = client.get("/", headers={"Accept-Encoding": "gzip"})
    html = gzip.decompress(page.data).decode()
    assert page.headers["Content-Encoding"] == "gzip"
    assert "async-mathjax" not in html and "plotly" in html
    bundle = next(line.split('src="')[1].split('"')[0] for line in html.split("\n") if "plotly.v" in line)
    js = client.get(bundle, headers={"Accept-Encoding": "gzip"})
    assert js.headers["Content-Encoding"] == "gzip" and len(js.data) < len(gzip.decompress(js.data)) / 2
    plain = client.get(bundle)
    assert "Content-Encoding" not in plain.headers and plain.data == gzip.decompress(js.data)


def test_upload_errors_name_the_file_and_the_report_opens_as_a_pick_does(app, tmp_path):
    status, data = upload(app, RAW_CSV.read_bytes(), "my run.csv")
    assert status == 200 and data["name"] == "my run.csv"
    body = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": data}))
    assert "my run.csv" in body and "copy_strided" in body


def test_a_baseline_comparison_is_coach_diff(app):
    from coach.analyze.diff import diff

    slow = app.ctx.reports.add("slow.ncu-rep", strided_walkthrough().before)
    fixed = app.ctx.reports.add("fixed.ncu-rep", strided_walkthrough().after)
    out = json.dumps(dispatch(app, "exp-compare.children", {"exp-compare-pick.value": f"open:{slow.token}",
                                                            "exp-shown.data": {"token": fixed.token}}), ensure_ascii=False)
    for line in diff(slow.profile, fixed.profile).to_dict()["verdict"]:
        assert json.dumps(line, ensure_ascii=False)[1:-1] in out
    assert "coach diff slow.ncu-rep fixed.ncu-rep" in out


def test_merged_bars_are_as_pale_as_their_lane_was_idle():
    from coach.model import Source, make_timeline

    # 100 memsets of 2 ns, one every 1,000 ns (0.2% busy), and one 50 µs kernel
    starts = list(range(0, 100_000, 1000))
    tl = make_timeline(
        Source("t.sqlite", "nsys-sqlite", "Nsight Systems"),
        kernels=pl.DataFrame({"start_ns": [0], "end_ns": [50_000], "dur_ns": [50_000], "device_id": [0],
                              "stream_id": [7], "name": ["k"]}),
        memset=pl.DataFrame({"start_ns": starts, "end_ns": [s + 2 for s in starts], "device_id": [0] * 100,
                             "stream_id": [7] * 100, "bytes": [4] * 100}),
    )
    fig, bars = timeline_view.figure(timeline_view.events(tl), 0, 100_000, width_px=50)
    memset = next(t for t in fig.data if t.meta == "memset")
    kernel = next(t for t in fig.data if t.meta == "kernel")
    merged = bars.filter(pl.col("category") == "memset")
    assert merged["events"].sum() == 100 and (merged["busy_pct"] < 1).all()
    assert max(memset.marker.opacity) < 0.2 and list(kernel.marker.opacity) == [1.0]
