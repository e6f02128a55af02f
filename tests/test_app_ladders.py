"""The Ladders page and the home page's ladder gallery, over the ladders recorded on the H200
(kernels/<name>/ladder.toml with traces/h200/ladders/<name>/results.json, results.<size>.json and ncu/):
memory-bound ones in bytes/s, and the compute-bound matmul/fp32, matmul/bf16 and attention in FLOP/s.

The pages are fetched through Dash's own endpoint, as the browser fetches them; the pinned numbers
are those of the recorded results (and of ``coach ladder NAME``, which reads the same rows).
"""

from __future__ import annotations

import json
import shutil
from typing import Any, Iterator

import pytest
from app_support import dispatch
from typer.testing import CliRunner

from coach import paths
from coach.app import Settings, create_app
from coach.app import ladder_view as view
from coach.app.app import route
from coach.app.pages import ladders
from coach.cli import app as cli
from coach.ladders import ladder_names, load_definition, load_results, results_path


def share(name: str, key: str, size: str | None = None) -> str:
    """A rung's or peer's rate as a share of the ladder's measured ceiling (the calibration raised to
    the best rate recorded on the GPU, coach.best_rates), as the pages print it."""
    res = load_results(results_path(name, "h200", size=size))
    m = next(x for x in (*res.rungs, *res.peers) if x.key == key)
    return f"{100 * m.rate(res.ceiling_unit) / res.ceiling_value:.1f}%"


def share_value(name: str, key: str) -> float:
    return float(share(name, key)[:-1])


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    return create_app(Settings(walkthroughs=lambda: [],
                               progress_path=tmp_path_factory.mktemp("progress") / "progress.sqlite"))


def page(app, path: str, search: str = "") -> dict:
    return dispatch(app, "..page.children", {"url.pathname": path, "url.search": search})["page"]["children"]


def nodes(tree: Any) -> Iterator[dict]:
    """Every component of a layout as Dash sends it to the browser, depth first."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict) and "props" in node:
            yield node
            stack.append(node["props"].get("children"))


def by_id(tree: Any, ident: str) -> dict:
    found = [n for n in nodes(tree) if n["props"].get("id") == ident]
    assert len(found) == 1, f"{len(found)} components with id {ident!r}"
    return found[0]


def text(tree: Any) -> str:
    """The text a reader sees: every string child, in order."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, list):
            for child in node:
                walk(child)
        elif isinstance(node, dict) and "props" in node:
            walk(node["props"].get("children"))

    walk(tree)
    return " ".join(parts)


def rows(table: Any) -> list[list[str]]:
    """The body rows of the plain table inside ``table``, as the cells' text."""
    body = next(n for n in nodes(table) if n["type"] == "Tbody")
    return [[text(td) for td in tr["props"]["children"]] for tr in body["props"]["children"]]


def graph(tree: Any) -> dict:
    return next(n for n in nodes(tree) if n["type"] == "Graph")["props"]["figure"]


def recorded_here() -> list[str]:
    return [n for n in ladder_names() if results_path(n).is_file()]


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["ladder", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def words(tree: Any) -> str:
    """``text`` with runs of spaces made one."""
    return " ".join(text(tree).split())


# --------------------------------------------------------------------------------------------
# /ladders
# --------------------------------------------------------------------------------------------


def test_the_overview_has_a_row_per_recorded_ladder_with_where_it_ended(app):
    out = page(app, "/ladders")
    table = rows(by_id(out, "lad-overview"))
    assert len(table) == len(recorded_here()) >= 9
    titles = {load_definition(n).title: n for n in recorded_here()}
    assert [r[0] for r in table] == list(titles)
    softmax = table[list(titles.values()).index("softmax")]
    assert softmax == ["Row softmax of a 32768 x 4096 bf16 matrix", "NVIDIA H200", "6",
                       "05 Triton, one program per row", "134.1 µs", "4.00 TB/s", share("softmax", "05_triton"), "4.82×",
                       "2.32× torch.compile", "goal met"]
    scan = table[list(titles.values()).index("scan")]
    assert scan[5:] == ["3.56 TB/s", share("scan", load_definition("scan").rungs[-1].key), "5.77×", "1.41× torch.cumsum",
                        "goal met"]
    gemv = table[list(titles.values()).index("gemv")]
    assert gemv[-1] == "goal missed"
    links = [n["props"]["href"] for n in nodes(by_id(out, "lad-overview")) if n["type"] == "Link"]
    assert links == [f"/ladders/{n}?gpu=h200" for n in titles.values()]


def test_the_overview_shows_compute_ladders_in_flop_per_s_and_the_sizes_that_meet_the_goal(app):
    out = page(app, "/ladders")
    names = [load_definition(n).name for n in recorded_here()]
    table = dict(zip(names, rows(by_id(out, "lad-overview"))))
    assert table["matmul/bf16"] == ["BF16 matrix multiplication on the tensor cores, 8192^3", "NVIDIA H200", "11",
                                    "10 epilogue through shared memory and TMA stores", "1.657 ms",
                                    "663.6 TFLOP/s", share("matmul/bf16", "10_wgmma_tma_store"), "2.89×", "0.97× cublas.bf16",
                                    "goal met"]
    assert table["matmul/fp32"][4:9] == ["2.969 ms", "46.29 TFLOP/s", share("matmul/fp32", load_definition("matmul/fp32").rungs[-1].key),
                                         "92.91×", "0.90× cublas.fp32"]
    # the goal column of a ladder measured at several sizes: met at the main one, and where else
    assert " ".join(table["matmul/fp32"][9].split()) == "goal met at h200; met at 2 of 2 sizes"
    assert " ".join(table["attention"][9].split()) == "goal met at h200; met at 4 of 4 sizes"


def test_the_overview_chart_has_each_ladder_as_a_share_of_its_ceiling(app):
    fig = graph(by_id(page(app, "/ladders"), "lad-body"))
    traces = {t["meta"]["ladder"]: t for t in fig["data"]}
    assert list(traces) == recorded_here()
    last = share_value("reduction", "05_single_pass")
    assert last <= 100.0  # no rung beats a measured ceiling (the best rate recorded on the GPU)
    assert traces["reduction"]["x"][-1] == "05" and traces["reduction"]["y"][-1] == pytest.approx(last, abs=0.05)
    assert fig["layout"]["yaxis"]["range"][1] > last  # reduction's last rung is drawn, not clipped
    # a compute-bound ladder's share is of its FLOP ceiling: matmul/bf16's rung 05 beats cuBLAS's 681.1 TFLOP/s
    bf16 = traces["matmul/bf16"]
    assert bf16["x"][5] == "05" and bf16["y"][5] == pytest.approx(share_value("matmul/bf16", "05_tma_persistent"), abs=0.05)
    assert bf16["customdata"][5] == ["TMA descriptors, persistent grid", "692.4 TFLOP/s"]
    assert {t["meta"]["unit"] for t in traces.values()} == {"B/s", "FLOP/s"}
    assert all((t["line"]["dash"] == "dash") == (t["meta"]["unit"] == "FLOP/s") for t in traces.values())


# --------------------------------------------------------------------------------------------
# /ladders/<name>
# --------------------------------------------------------------------------------------------


def test_the_rung_table_is_coach_ladder_s(app):
    cli_rows = json.loads(CliRunner().invoke(cli, ["ladder", "softmax", "--json"]).stdout)["rungs"]
    table = rows(by_id(page(app, "/ladders/softmax", "?gpu=h200"), "lad-rungs"))
    assert [r[:2] for r in table] == [[c["rung"][:2], c["title"]] for c in cli_rows]
    for r, c in zip(table, cli_rows):
        assert r[5] == f"{c['pct_of_ceiling']:.1f}%"
        assert r[7] == f"{c['vs_first']:.2f}×" and r[8] == f"{c['vs_baseline']:.2f}×"
    assert table[0][2:] == ["646.6 µs", "645.9 µs – 647.5 µs", "830 GB/s", share("softmax", "00_three_kernels"), "–", "1.00×", "0.65×",
                            "24.8%", "50.8%"]
    assert table[5][2:6] == ["134.1 µs", "133.5 µs – 135.2 µs", "4.00 TB/s", share("softmax", "05_triton")]


def test_a_step_that_made_things_slower_is_highlighted(app):
    body = next(n for n in nodes(by_id(page(app, "/ladders/softmax"), "lad-rungs")) if n["type"] == "Tbody")
    marked = [text(tr["props"]["children"][0]) for tr in body["props"]["children"] if tr["props"].get("className") == "hl"]
    assert marked == ["03"]  # warp-shuffle merge: 264.0 µs after online softmax's 243.2 µs, 0.92×


def test_each_rung_shows_its_prediction_beside_what_was_measured_and_why(app):
    out = page(app, "/ladders/softmax")
    defn = load_definition("softmax")
    for rung in defn.rungs:
        card = text(by_id(out, f"rung-{rung.key}"))
        for words in (rung.title, rung.change, rung.reason, rung.prediction, rung.measured, rung.why):
            assert words in card
    assert "2.39× the previous rung" in text(by_id(out, "rung-01_fused_block_per_row"))
    assert "0.92× the previous rung" in text(by_id(out, "rung-03_online_shuffle"))


def test_the_peers_are_timed_against_the_last_rung(app):
    table = rows(by_id(page(app, "/ladders/softmax"), "lad-peers"))
    assert table == [["torch.softmax", "418.4 µs", "417.8 µs – 418.8 µs", "1.28 TB/s", share("softmax", "torch.softmax"), "3.12×"],
                     ["torch.compile", "311.2 µs", "311.0 µs – 311.5 µs", "1.72 TB/s", share("softmax", "torch.compile"), "2.32×"]]


def test_the_chart_draws_each_rung_the_peers_and_the_measured_ceiling(app):
    rec = view.recorded_ladders(app.ctx)[recorded_here().index("softmax")].recorded
    fig = graph(by_id(page(app, "/ladders/softmax"), "lad-trajectory"))
    traces = {t["meta"]["role"]: t for t in fig["data"]}
    assert traces["rungs"]["x"] == ["00", "01", "02", "03", "04", "05"]
    assert traces["rungs"]["y"] == [r.result.bytes_per_s for r in rec.rows]
    assert traces["rungs"]["y"][-1] == pytest.approx(4.00e12, rel=2e-3)
    assert traces["ncu"]["y"] == [rec.profiles[r.rung.key]["dram_bytes_per_s"] for r in rec.rows]
    assert traces["peers"]["x"] == ["torch.softmax", "torch.compile"]
    lines = {s["y0"] for s in fig["layout"]["shapes"]}
    assert lines == {rec.results.ceiling_bytes_per_s, rec.defn.goal_bytes_per_s}
    assert rec.results.ceiling_bytes_per_s >= 4191160650465.186 and rec.defn.goal_bytes_per_s == 3.4e12
    steps = graph(by_id(page(app, "/ladders/softmax"), "lad-steps"))["data"][0]
    assert steps["x"] == ["01", "02", "03", "04", "05"] and steps["text"][2] == "0.92×"


def test_a_goal_met_and_a_goal_missed(app):
    met = by_id(page(app, "/ladders/softmax"), "lad-goal")
    assert "The last rung, 05 (Triton, one program per row), reaches 4.00 TB/s: met." in text(met)
    missed = by_id(page(app, "/ladders/gemv"), "lad-goal")
    assert "The last rung, 04 (streaming loads for W), reaches 3.77 TB/s: missed." in text(missed)
    assert "The fastest, rung 02 (16-byte loads), reaches 3.99 TB/s: met." in text(missed)  # the last is not the fastest
    notes = next(n for n in nodes(missed) if n["type"] == "Details")
    assert notes["props"]["open"] is True
    # gemv misses its goal with its last rung, though rungs 02 and 03 reached it
    assert "missed. Reached by rung 02, 03." in text(by_id(page(app, "/ladders/gemv"), "lad-goal"))


def test_an_unknown_ladder_says_so_and_links_the_others(app):
    out = page(app, "/ladders/nope")
    assert "No recorded ladder 'nope'" in text(out)
    assert {n["props"]["href"] for n in nodes(out) if n["type"] == "Link"} >= {f"/ladders/{n}" for n in recorded_here()}


def test_a_nested_ladder_name_routes_to_its_page_and_makes_plain_ids():
    item = view.Listing("matmul/fp32", "h200", None, "kernels/matmul/fp32/ladder.toml: broken")
    assert route(ladders.href(item).split("?")[0]) == (ladders, "matmul/fp32")
    assert view.slug(item.name) == "matmul-fp32"
    out = ladders.ladder_page("matmul/fp32", "h200", None, [item])
    assert "matmul/fp32: kernels/matmul/fp32/ladder.toml: broken" in str(out)


# --------------------------------------------------------------------------------------------
# /ladders/<name>: a compute-bound ladder, at each of its sizes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["matmul/bf16", "matmul/fp32", "attention"])
def test_a_compute_ladder_s_rung_table_is_coach_ladder_s_in_flop_per_s(app, name):
    cli_rows = cli_json(name)["rungs"]
    table = rows(by_id(page(app, f"/ladders/{name}"), "lad-rungs"))
    assert [r[:2] for r in table] == [[c["rung"][:2], c["title"]] for c in cli_rows]
    for r, c in zip(table, cli_rows):
        value, unit = r[4].split()
        assert unit in ("GFLOP/s", "TFLOP/s")  # four significant digits: 498.2 GFLOP/s, 46.29 TFLOP/s
        assert float(value) * (1e9 if unit == "GFLOP/s" else 1e12) == pytest.approx(c["rate"], rel=5e-4)
        assert r[5] == f"{c['pct_of_ceiling']:.1f}%" and r[8] == f"{c['vs_baseline']:.2f}×"


def test_a_compute_rung_shows_its_busiest_pipe_and_its_tensor_and_fma_pipes(app):
    table = rows(by_id(page(app, "/ladders/matmul/bf16"), "lad-rungs"))
    assert table[5] == ["05", "TMA descriptors, persistent grid", "1.588 ms", "1.566 ms – 1.606 ms", "692.4 TFLOP/s",
                        share("matmul/bf16", "05_tma_persistent"), "1.03×", "3.01×", "1.02×", "tensor 97.3%", "97.3%", "3.1%"]
    fp32 = rows(by_id(page(app, "/ladders/matmul/fp32"), "lad-rungs"))
    # the CUDA-core ladder: loads crowd the LSU pipe until register blocking; then the FMA pipe, tensor idle
    assert [r[9] for r in fp32] == ["lsu 6.0%", "lsu 72.7%", "lsu 73.0%", "lsu 51.7%", "fma 48.4%", "fma 55.4%",
                                    "fma 64.2%", "fma 72.0%"]
    assert fp32[7][2:] == ["2.969 ms", "2.968 ms – 2.972 ms", "46.29 TFLOP/s", share("matmul/fp32", load_definition("matmul/fp32").rungs[-1].key), "1.12×", "92.91×", "0.90×",
                           "fma 72.0%", "0.1%", "72.0%"]


def test_a_compute_goal_is_a_rate_and_a_share_of_the_baseline_for_the_last_and_the_fastest_rung(app):
    bf16 = words(by_id(page(app, "/ladders/matmul/bf16"), "lad-goal"))
    assert "(needs 580 TFLOP/s and ×0.85 of cublas.bf16)" in bf16
    # the last rung (the hand-written wgmma kernel) is not the fastest (Triton's rung 05): a second sentence
    assert ("The last rung, 10 (epilogue through shared memory and TMA stores), reaches 663.6 TFLOP/s, "
            "×0.97 of cublas.bf16: met.") in bf16
    assert "The fastest, rung 05 (TMA descriptors, persistent grid), reaches 692.4 TFLOP/s, ×1.02 of cublas.bf16: met." in bf16
    fp32 = words(by_id(page(app, "/ladders/matmul/fp32"), "lad-goal"))
    assert "reaches 46.29 TFLOP/s, ×0.90 of cublas.fp32: met." in fp32 and "The fastest" not in fp32
    # causal attention: at a size other than the main one only the share of SDPA is judged; the last rung
    # is also the fastest there: no second sentence
    causal = words(by_id(page(app, "/ladders/attention", "?gpu=h200&size=h200_causal"), "lad-goal"))
    assert "(needs ×0.75 of torch.sdpa)" in causal
    assert ("The last rung, 09 (three consumer warp groups at D64, configuration chosen per shape by timing), reaches "
            "533.4 TFLOP/s, ×1.03 of torch.sdpa: met.") in causal and "The fastest" not in causal


def test_the_attention_peers_are_the_sdpa_backends_of_the_same_run(app):
    table = rows(by_id(page(app, "/ladders/attention"), "lad-peers"))
    assert table == [["torch.sdpa", "1.859 ms", "1.842 ms – 1.862 ms", "591.5 TFLOP/s", share("attention", "torch.sdpa"), "1.01×"],
                     ["torch.sdpa.flash", "3.267 ms", "3.212 ms – 3.382 ms", "336.5 TFLOP/s", share("attention", "torch.sdpa.flash"),
                      "1.78×"],
                     ["torch.sdpa.cudnn", "1.883 ms", "1.861 ms – 1.939 ms", "584.0 TFLOP/s", share("attention", "torch.sdpa.cudnn"),
                      "1.02×"]]


def test_a_compute_chart_draws_flop_rates_the_ceiling_the_goal_and_its_share_of_the_baseline(app):
    rec = view.recorded_ladders(app.ctx)[recorded_here().index("matmul/bf16")].recorded
    fig = graph(by_id(page(app, "/ladders/matmul/bf16"), "lad-trajectory"))
    traces = {t["meta"]["role"]: t for t in fig["data"]}
    assert set(traces) == {"rungs", "peers"}  # no Nsight Compute FLOP rate was recorded to set beside them
    assert traces["rungs"]["y"] == [r.result.flop_per_s for r in rec.rows]
    assert traces["rungs"]["text"][5] == "692.4 TFLOP/s" and traces["peers"]["text"] == ["681.1 TFLOP/s"]
    cublas = rec.results.peer("cublas.bf16").flop_per_s
    assert {s["y0"] for s in fig["layout"]["shapes"]} == {rec.results.ceiling_value, 5.8e14, 0.85 * cublas}
    assert rec.results.ceiling_value >= 683001164887645.6  # the calibration, raised to the best recorded rate
    assert fig["layout"]["yaxis"]["ticksuffix"] == "FLOP/s"


def test_each_compute_rung_sits_on_the_roofline_at_its_flops_over_its_dram_bytes(app):
    rec = view.recorded_ladders(app.ctx)[recorded_here().index("matmul/fp32")].recorded
    fig = graph(by_id(page(app, "/ladders/matmul/fp32"), "lad-roofline"))
    roofs = {t["meta"]["source"]: t["meta"] for t in fig["data"] if t["meta"]["role"] == "roof"}
    from coach.analyze import hardware as hw

    # the measured roof: DRAM and the FP32 matmul rate, each the calibration raised to the best recorded rate
    measured = (hw.ceilings("h200").bandwidth["dram"].value, rec.results.ceiling_value)
    assert (roofs["measured"]["bandwidth"], roofs["measured"]["flop_per_s"]) == measured
    assert measured[0] >= 4194828280369.6514 and measured[1] >= 51123904740184.73
    assert (roofs["datasheet"]["bandwidth"], roofs["datasheet"]["flop_per_s"]) == (4.8e12, 67e12)
    rungs = next(t for t in fig["data"] if t["meta"]["role"] == "rungs")
    assert rungs["text"] == [r.rung.id for r in rec.rows] and rungs["y"] == [r.rate for r in rec.rows]
    # 137.4 GFLOP over the DRAM bytes Nsight Compute counted: 8.52 GB for the naive rung, 0.66 GB for the last
    assert rungs["x"][0] == pytest.approx(16.12, abs=0.01) and rungs["x"][7] == pytest.approx(209.2, abs=0.1)
    assert rungs["customdata"][0][2] == "8.52 GB"
    compulsory = fig["layout"]["shapes"][0]
    assert compulsory["x0"] == pytest.approx(4096 / 6)  # 2 * 4096^3 FLOP over 3 * 4096^2 * 4 bytes
    assert all(x < compulsory["x0"] for x in rungs["x"])


def test_a_ladder_measured_at_several_sizes_links_each_with_its_goal(app):
    out = page(app, "/ladders/attention")
    sizes = by_id(out, "lad-sizes")
    links = [n for n in nodes(sizes) if n["type"] == "Link"]
    assert [text(n) for n in links] == ["h200: goal met", "h200_causal: goal met", "h200_d64: goal met",
                                        "h200_d64_causal: goal met"]
    assert [n["props"]["href"] for n in links] == ["/ladders/attention?gpu=h200"] + [
        f"/ladders/attention?gpu=h200&size={s}" for s in ("h200_causal", "h200_d64", "h200_d64_causal")]
    assert [n["props"]["className"] for n in links] == ["active", "", "", ""]
    assert "No roofline" not in text(out) and by_id(out, "lad-roofline")
    assert "lad-sizes" not in str(page(app, "/ladders/matmul/bf16"))  # measured at one size: no links


def test_another_size_shows_its_own_numbers_and_says_what_was_profiled_at_the_main_size(app):
    out = page(app, "/ladders/matmul/fp32", "?gpu=h200&size=h200_8192")
    cli_rows = cli_json("matmul/fp32", "--size", "h200_8192")["rungs"]
    table = rows(by_id(out, "lad-rungs"))
    assert [r[5] for r in table] == [f"{c['pct_of_ceiling']:.1f}%" for c in cli_rows]
    last = load_definition("matmul/fp32").rungs[-1].key
    assert table[7][2:] == ["23.41 ms", "23.41 ms – 23.42 ms", "46.96 TFLOP/s", share("matmul/fp32", last, "h200_8192"),
                            "1.11×", "93.69×", "0.92×",
                            "–", "–", "–"]  # no Nsight Compute at this size
    assert [n["props"]["className"] for n in nodes(by_id(out, "lad-sizes")) if n["type"] == "Link"] == ["", "active"]
    assert "Measured at size h200_8192: m 8192, n 8192, k 8192" in text(out)
    assert "No roofline at this size" in text(by_id(out, "lad-roofline"))
    assert "written from the main size, h200" in text(out) and "(results.h200_8192.json, ncu/)" in text(out)
    assert "reaches 46.96 TFLOP/s, ×0.92 of cublas.fp32: met." in words(by_id(out, "lad-goal"))


def test_an_unrecorded_size_says_which_are(app):
    out = page(app, "/ladders/attention", "?size=h200_huge")
    assert "no results recorded at size 'h200_huge' (files there: results.h200_causal.json" in text(out)
    assert by_id(out, "lad-sizes")  # the recorded sizes are still a click away


def test_each_compute_rung_card_has_its_words_and_its_busiest_pipe(app):
    out = page(app, "/ladders/matmul/bf16")
    for rung in load_definition("matmul/bf16").rungs:
        card = text(by_id(out, f"rung-{rung.key}"))
        for words_ in (rung.title, rung.change, rung.reason, rung.prediction, rung.measured, rung.why):
            assert words_ in card
    assert "busiest pipe: tensor 97.3%" in text(by_id(out, "rung-05_tma_persistent"))
    assert "692.4 TFLOP/s" in text(by_id(out, "rung-05_tma_persistent"))


# --------------------------------------------------------------------------------------------
# Home
# --------------------------------------------------------------------------------------------


def test_home_has_a_tile_per_recorded_ladder_leading_to_its_page(app):
    out = page(app, "/")
    tiles = [n for n in nodes(by_id(out, "home-ladders")) if str(n["props"].get("id", "")).startswith("tile-ladder-")]
    assert [t["props"]["id"] for t in tiles] == [f"tile-ladder-{n.replace('/', '-')}" for n in recorded_here()]
    softmax = by_id(out, "tile-ladder-softmax")
    assert softmax["props"]["href"] == "/ladders/softmax?gpu=h200"
    assert (f"Last rung 05, Triton, one program per row: 134.1 µs, 4.00 TB/s ({share('softmax', '05_triton')} of the measured ceiling), "
            "4.82× over rung 00.") in text(softmax)
    assert "goal met" in text(by_id(out, "tile-ladder-scan"))
    assert "goal missed" in text(by_id(out, "tile-ladder-gemv"))
    bf16 = by_id(out, "tile-ladder-matmul-bf16")
    assert bf16["props"]["href"] == "/ladders/matmul/bf16?gpu=h200"
    assert ("Last rung 10, epilogue through shared memory and TMA stores: 1.657 ms, 663.6 TFLOP/s "
            f"({share('matmul/bf16', '10_wgmma_tma_store')} of the measured ceiling), ×0.97 of cublas.bf16, 2.89× over rung 00.") in text(bf16)
    assert "2 sizes" in text(by_id(out, "tile-ladder-matmul-fp32")) and "sizes" not in text(bf16)


# --------------------------------------------------------------------------------------------
# What cannot be read
# --------------------------------------------------------------------------------------------


@pytest.fixture
def copied(tmp_path) -> Settings:
    """softmax and scan as recorded, and transpose defined but not recorded, in a folder of their own."""
    kernels, traces = tmp_path / "kernels", tmp_path / "traces"
    for name in ("softmax", "scan", "transpose"):
        shutil.copytree(paths.kernels_dir() / name, kernels / name)
    for name in ("softmax", "scan"):
        shutil.copytree(results_path(name).parent, results_path(name, root=traces).parent)
    return Settings(kernels_dir=kernels, traces_dir=traces, walkthroughs=lambda: [],
                    progress_path=tmp_path / "progress.sqlite")


def test_a_broken_recording_is_one_line_and_the_others_are_still_shown(copied):
    results_path("scan", root=copied.traces_dir).write_text("{not json")
    app = create_app(copied)
    out = page(app, "/ladders")
    assert "scan: " in text(out) and "results.json: cannot be read as JSON" in text(out)
    assert [r[0] for r in rows(by_id(out, "lad-overview"))] == ["Row softmax of a 32768 x 4096 bf16 matrix"]
    assert "Defined but not recorded yet: transpose." in text(out)
    assert "results.json: cannot be read as JSON" in text(page(app, "/ladders/scan"))
    home = page(app, "/")
    assert [n["props"]["id"] for n in nodes(home) if str(n["props"].get("id", "")).startswith("tile-ladder-")] == [
        "tile-ladder-softmax"]


def test_results_of_another_ladder_are_refused(copied):
    softmax = results_path("softmax", root=copied.traces_dir)
    shutil.copy(softmax, results_path("scan", root=copied.traces_dir))
    out = page(create_app(copied), "/ladders/scan")
    assert "holds results of ladder 'softmax', not 'scan'" in text(out)


def test_without_recordings_the_page_names_the_defined_ladders(copied):
    shutil.rmtree(copied.traces_dir)
    out = page(create_app(copied), "/ladders")
    assert "No ladder results are recorded yet" in text(out)
    assert "3 ladders are defined under kernels/ (scan, softmax, transpose)" in text(out)


@pytest.fixture
def fp32_copy(tmp_path) -> Settings:
    """matmul/fp32 as recorded (a nested ladder, two sizes), in a folder of its own."""
    kernels, traces = tmp_path / "kernels", tmp_path / "traces"
    shutil.copytree(paths.kernels_dir() / "matmul" / "fp32", kernels / "matmul" / "fp32")
    shutil.copytree(results_path("matmul/fp32").parent, results_path("matmul/fp32", root=traces).parent)
    return Settings(kernels_dir=kernels, traces_dir=traces, walkthroughs=lambda: [],
                    progress_path=tmp_path / "progress.sqlite")


def test_results_in_another_unit_than_the_ladder_s_are_refused(fp32_copy):
    path = results_path("matmul/fp32", root=fp32_copy.traces_dir)
    doc = json.loads(path.read_text())
    doc["ceiling"] = {"name": "dram_read_bandwidth_bytes_per_s", "unit": "bytes/s", "value": 4.19e12}
    path.write_text(json.dumps(doc))
    app = create_app(fp32_copy)
    assert "is measured in bytes/s but ladder 'matmul/fp32' in FLOP/s" in text(page(app, "/ladders"))
    assert "record it again" in text(page(app, "/ladders/matmul/fp32"))


def test_a_size_without_its_results_file_is_not_offered(fp32_copy):
    results_path("matmul/fp32", root=fp32_copy.traces_dir, size="h200_8192", main="h200").unlink()
    app = create_app(fp32_copy)
    out = page(app, "/ladders/matmul/fp32")
    assert "lad-sizes" not in str(out) and "46.29 TFLOP/s" in text(by_id(out, "lad-rungs"))
    assert "no results recorded at size 'h200_8192'" in text(page(app, "/ladders/matmul/fp32", "?size=h200_8192"))


def test_a_rung_card_at_another_size_says_its_words_are_of_the_main_size(app):
    """The badges are the page's size; the ladder.toml words under them were written at the main size."""
    other = page(app, "/ladders/attention", "?gpu=h200&size=h200_d64")
    card = text(by_id(other, "rung-09_gluon_tuned"))
    assert "Measured at the main size, h200" in card
    main = text(by_id(page(app, "/ladders/attention"), "rung-09_gluon_tuned"))
    assert "Measured" in main and "Measured at the main size" not in main
