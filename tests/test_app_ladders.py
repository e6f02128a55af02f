"""The Ladders page and the home page's ladder gallery, over the ladders recorded on the H200
(kernels/<name>/ladder.toml with traces/h200/ladders/<name>/results.json and ncu/).

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
from coach.ladders import ladder_names, load_definition, results_path


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


# --------------------------------------------------------------------------------------------
# /ladders
# --------------------------------------------------------------------------------------------


def test_the_overview_has_a_row_per_recorded_ladder_with_where_it_ended(app):
    out = page(app, "/ladders")
    table = rows(by_id(out, "lad-overview"))
    assert len(table) == len(recorded_here()) >= 6
    titles = {load_definition(n).title: n for n in recorded_here()}
    assert [r[0] for r in table] == list(titles)
    softmax = table[list(titles.values()).index("softmax")]
    assert softmax == ["Row softmax of a 32768 x 4096 bf16 matrix", "NVIDIA H200", "6",
                       "05 Triton, one program per row", "134.1 µs", "4.00 TB/s", "95.5%", "4.82×",
                       "2.32× torch.compile", "goal met"]
    scan = table[list(titles.values()).index("scan")]
    assert scan[5:] == ["2.76 TB/s", "65.8%", "4.48×", "1.09× torch.cumsum", "goal missed"]
    links = [n["props"]["href"] for n in nodes(by_id(out, "lad-overview")) if n["type"] == "Link"]
    assert links == [f"/ladders/{n}?gpu=h200" for n in titles.values()]


def test_the_overview_chart_has_each_ladder_as_a_share_of_its_ceiling(app):
    fig = graph(by_id(page(app, "/ladders"), "lad-body"))
    traces = {t["meta"]["ladder"]: t for t in fig["data"]}
    assert list(traces) == recorded_here()
    assert traces["reduction"]["x"][-1] == "05" and traces["reduction"]["y"][-1] == pytest.approx(101.7, abs=0.05)
    assert fig["layout"]["yaxis"]["range"][1] > 101.7  # reduction's last rung is drawn, not clipped


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
    assert table[0][2:] == ["646.6 µs", "645.9 µs – 647.5 µs", "830 GB/s", "19.8%", "–", "1.00×", "0.65×",
                            "24.8%", "50.8%"]
    assert table[5][2:6] == ["134.1 µs", "133.5 µs – 135.2 µs", "4.00 TB/s", "95.5%"]


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
    assert table == [["torch.softmax", "418.4 µs", "417.8 µs – 418.8 µs", "1.28 TB/s", "30.6%", "3.12×"],
                     ["torch.compile", "311.2 µs", "311.0 µs – 311.5 µs", "1.72 TB/s", "41.2%", "2.32×"]]


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
    assert lines == {rec.results.ceiling_bytes_per_s, rec.defn.goal_bytes_per_s} == {4191160650465.186, 3.4e12}
    steps = graph(by_id(page(app, "/ladders/softmax"), "lad-steps"))["data"][0]
    assert steps["x"] == ["01", "02", "03", "04", "05"] and steps["text"][2] == "0.92×"


def test_a_goal_met_and_a_goal_missed(app):
    met = by_id(page(app, "/ladders/softmax"), "lad-goal")
    assert "The last rung, 05 (Triton, one program per row), reaches 4.00 TB/s: met." in text(met)
    missed = by_id(page(app, "/ladders/scan"), "lad-goal")
    assert "reaches 2.76 TB/s: missed." in text(missed)
    notes = next(n for n in nodes(missed) if n["type"] == "Details")
    assert notes["props"]["open"] is True and "What limits it" in text(notes)
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
    out = ladders.ladder_page("matmul/fp32", "h200", [item])
    assert "matmul/fp32: kernels/matmul/fp32/ladder.toml: broken" in str(out)


# --------------------------------------------------------------------------------------------
# Home
# --------------------------------------------------------------------------------------------


def test_home_has_a_tile_per_recorded_ladder_leading_to_its_page(app):
    out = page(app, "/")
    tiles = [n for n in nodes(by_id(out, "home-ladders")) if str(n["props"].get("id", "")).startswith("tile-ladder-")]
    assert [t["props"]["id"] for t in tiles] == [f"tile-ladder-{n}" for n in recorded_here()]
    softmax = by_id(out, "tile-ladder-softmax")
    assert softmax["props"]["href"] == "/ladders/softmax?gpu=h200"
    assert ("Last rung 05, Triton, one program per row: 134.1 µs, 4.00 TB/s (95.5% of the measured ceiling), "
            "4.82× over rung 00.") in text(softmax)
    assert "goal missed" in text(by_id(out, "tile-ladder-scan"))


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
