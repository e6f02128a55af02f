"""The roofline figure and `coach roofline`: every number drawn is a number of the table."""

from __future__ import annotations

import json
import math

import plotly.io as pio
import polars as pl
import pytest
from test_roofline import HGMMA_BF16, SASS, with_metrics

from coach.analyze.roofline import roofline, with_hardware
from coach.analyze.roofline_plot import LEVEL_COLORS, figure
from coach.cli import main
from coach.ingest import load


@pytest.fixture(scope="module")
def prof(strided_ncu_rep):
    return load(strided_ncu_rep)


@pytest.fixture(scope="module")
def rl(prof):
    return roofline(prof)


@pytest.fixture(scope="module")
def worked(prof):
    """Synthetic FP32 and BF16-tensor rates on the real report (not a measurement): points to draw."""
    before = roofline(with_metrics(prof, {SASS.format("ffma"): 1000.0}))
    after = roofline(with_metrics(prof, {SASS.format("ffma"): 3000.0, HGMMA_BF16.format("off"): 40000.0}))
    return before, after


def traces(fig, role: str, **meta):
    return [t for t in fig.data if (t.meta or {}).get("role") == role and all(t.meta.get(k) == v for k, v in meta.items())]


def test_roofs_are_the_ceilings(rl):
    fig = figure(rl)
    roofs = traces(fig, "roof")
    drawn = {(t.meta["kind"], t.meta["name"]): t for t in roofs}
    ceilings = {(r["kind"], r["name"]): r["peak_per_s"] for r in rl.ceilings.iter_rows(named=True)}
    # every level's bandwidth; FP32 alone for compute when no kernel does floating-point work
    assert set(drawn) == {("bandwidth", "DRAM"), ("bandwidth", "L2"), ("bandwidth", "L1"), ("compute", "fp32")}
    for key, t in drawn.items():
        assert t.meta["peak_per_s"] == ceilings[key]
        if key[0] == "bandwidth":  # a diagonal y = B x
            assert [y / x for x, y in zip(t.x, t.y)] == pytest.approx([ceilings[key]] * 2, rel=1e-12)
        else:
            assert list(t.y) == [ceilings[key]] * 2
    assert drawn[("bandwidth", "DRAM")].name == "DRAM 4.81 TB/s" and drawn[("compute", "fp32")].name == "FP32 67 TFLOP/s"
    assert drawn[("bandwidth", "L2")].line.color == LEVEL_COLORS["L2"]


def test_bandwidth_panel_is_the_table(rl):
    fig = figure(rl)
    for level in ("DRAM", "L2", "L1"):
        (bar,) = traces(fig, "bandwidth", level=level)
        expected = rl.table.filter((pl.col("level") == level) & (pl.col("precision") == "fp32")).sort("launch_id")
        assert list(bar.y) == expected["kernel_name"].to_list()
        assert list(bar.x) == expected["bandwidth_pct"].to_list()
        assert [c[0] for c in bar.customdata] == expected["launch_id"].to_list()
    # no floating-point work: no points, and the figure says why
    assert traces(fig, "point") == []
    notes = " ".join(a.text for a in fig.layout.annotations)
    assert "No floating-point work: copy_strided and copy_coalesced" in notes


def test_axes_have_units_and_log_scales(rl):
    fig = figure(rl)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text == "Arithmetic intensity [FLOP/byte]"
    assert fig.layout.yaxis.title.text == "Performance [FLOP/s]"
    assert fig.layout.xaxis2.title.text == "Achieved traffic [% of peak bandwidth]"
    assert fig.layout.title.text == "Roofline on the NVIDIA H200"
    assert fig.layout.template.layout.font.family.startswith("Inter")


def test_points_and_arrows_are_the_table(worked):
    before, after = worked
    fig = figure(before, compare=after)
    for run, rl in (("before", before), ("after", after)):
        for level in ("DRAM", "L2", "L1"):
            (pts,) = traces(fig, "point", run=run, level=level)
            drawn = {(c[0], c[5]): (x, y) for c, x, y in zip(pts.customdata, pts.x, pts.y)}
            table = rl.table.filter((pl.col("level") == level) & (pl.col("flop") > 0))
            assert drawn == {(r["launch_id"], r["precision"]): (r["intensity_flop_per_byte"], r["flop_per_s"]) for r in table.iter_rows(named=True)}
            # names on hover, not on the chart (they pile up); the shape says the precision
            assert pts.text is None and pts.mode == "markers"
            assert sorted(c[4] for c in pts.customdata) == sorted(table["kernel_name"].to_list())
            assert [s for s in pts.marker.symbol] == [
                ("star" if c[5].startswith("tensor_") else "circle") + ("-open" if run == "before" else "")
                for c in pts.customdata]
    # the BF16 tensor roof appears once a kernel uses the tensor pipe
    assert {t.meta["name"] for t in traces(fig, "roof", kind="compute")} == {"fp32", "tensor_bf16"}
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == 2 * 3  # two kernels x three levels with FP32 work on both sides
    b = before.table.filter(pl.col("precision") == "fp32")
    a = after.table.filter(pl.col("precision") == "fp32")
    # annotations on log axes are placed in log10 units
    starts = sorted(v for x in arrows for v in (10 ** x.ax, 10 ** x.ay))
    ends = sorted(v for x in arrows for v in (10 ** x.x, 10 ** x.y))
    assert starts == pytest.approx(sorted([*b["intensity_flop_per_byte"], *b["flop_per_s"]]), rel=1e-12)
    assert ends == pytest.approx(sorted([*a["intensity_flop_per_byte"], *a["flop_per_s"]]), rel=1e-12)


def test_compare_bars_put_each_kernels_runs_together(worked):
    before, after = worked
    (bar,) = traces(figure(before, compare=after), "bandwidth", level="DRAM")
    assert list(bar.y) == ["copy_strided · before", "copy_coalesced · before", "copy_strided · after", "copy_coalesced · after"]
    fig = figure(before, compare=after)
    assert list(fig.layout.yaxis2.categoryarray) == [
        "copy_strided · before", "copy_strided · after", "copy_coalesced · before", "copy_coalesced · after"]


def test_extra_ceilings_are_labelled_with_their_source(rl):
    extra = pl.DataFrame({
        "device_id": [0], "gpu": ["NVIDIA H200"], "kind": ["bandwidth"], "name": ["DRAM"],
        "peak_per_s": [4.25e12], "source": ["measured"], "note": ["copy kernel, triton do_bench, 2026-11-30"],
    })
    fig = figure(rl.with_ceilings(extra))
    (measured,) = traces(fig, "roof", source="measured")
    assert measured.name == "DRAM 4.25 TB/s (measured)" and measured.line.dash == "dot"
    assert "triton do_bench" in measured.hovertemplate


def test_report_without_cache_levels_says_so(prof):
    thin = roofline(with_metrics(prof, drop=r"^(lts__lts2xbar|l1tex__lsu_writeback)"))
    fig = figure(thin)
    assert {t.meta["level"] for t in traces(fig, "bandwidth")} == {"DRAM"}
    assert "Not in the report: L2 and L1 traffic." in " ".join(a.text for a in fig.layout.annotations)


# --------------------------------------------------------------------------------------------
# coach roofline
# --------------------------------------------------------------------------------------------

def run_cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_cli_html(strided_ncu_rep, tmp_path, capsys, rl):
    out = tmp_path / "roofline.html"
    assert run_cli(["roofline", str(strided_ncu_rep), "--out", str(out)]) == 0
    html = out.read_text()
    assert html.startswith("<!doctype html>") and "Plotly.newPlot" in html and "Arithmetic intensity" in html
    for pct in rl.table.filter(pl.col("level") == "DRAM")["bandwidth_pct"].unique():  # the table's numbers, drawn
        assert repr(pct) in html
    printed = capsys.readouterr().out
    assert "copy_strided" in printed and "80.4" in printed and "54.3" in printed
    assert "fewer than ~14 FP32 FLOPs per DRAM byte" in printed
    assert [p.name for p in tmp_path.iterdir()] == ["roofline.html"]  # no temporary left behind


def test_cli_json_holds_the_table_and_the_figure(strided_ncu_rep, tmp_path):
    out = tmp_path / "roofline.json"
    assert run_cli(["roofline", str(strided_ncu_rep), "--compare", str(strided_ncu_rep), "--kernel", "strided", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    table = pl.DataFrame(doc["roofline"])
    assert table["kernel_name"].unique().to_list() == ["copy_strided"]
    assert doc["ridges"][0].startswith("On the NVIDIA H200")
    fig = pio.from_json(json.dumps(doc["figure"]))
    (bar,) = traces(fig, "bandwidth", level="DRAM")
    dram = table.filter((pl.col("level") == "DRAM") & (pl.col("precision") == "fp32"))["bandwidth_pct"].item()
    assert list(bar.x) == [dram, dram]  # before and after: the same report twice
    assert not any(isinstance(v, float) and math.isnan(v) for r in doc["roofline"] for v in r.values())


def test_cli_png_or_a_one_line_reason(strided_ncu_rep, tmp_path, capsys):
    out = tmp_path / "roofline.png"
    code = run_cli(["roofline", str(strided_ncu_rep), "--out", str(out)])
    if code == 0:
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:  # kaleido or its Chrome is not there: one line, exit 3, nothing written
        err = capsys.readouterr().err.strip()
        assert code == 3 and "\n" not in err and "kaleido" in err
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "{tmp}/r.svg"], "--out must end in .html, .png, .json"),
        (["--out", "{tmp}/nowhere/r.html"], "--out names a folder that does not exist"),
        (["--out", "{tmp}/r.html", "--kernel", "gemm("], "--kernel: 'gemm(' is not a regular expression"),
        (["--out", "{tmp}/r.html", "--kernel", "^gemm"], "has no launch to place on the roofline whose kernel name matches '^gemm'"),
    ],
)
def test_cli_errors_are_one_line(strided_ncu_rep, tmp_path, capsys, args, message):
    code = run_cli(["roofline", str(strided_ncu_rep), *[a.format(tmp=tmp_path) for a in args]])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_hardware_roofs_are_labelled_with_where_they_came_from(worked):
    _, after = worked  # uses the BF16 tensor pipe
    both = with_hardware(after)
    fig = figure(both)
    drawn = {(t.meta["source"], t.meta["kind"], t.meta["name"]): t for t in traces(fig, "roof")}
    ceilings = {(r["source"], r["kind"], r["name"]): r for r in both.ceilings.iter_rows(named=True)}
    for key in (("measured", "bandwidth", "DRAM"), ("measured", "compute", "tensor_bf16"), ("datasheet", "compute", "tensor_bf16")):
        t, c = drawn[key], ceilings[key]
        assert t.meta["peak_per_s"] == c["peak_per_s"]
        assert t.name.endswith(f"({key[0]})") and c["note"] in t.hovertemplate
    bf16 = ceilings[("measured", "compute", "tensor_bf16")]["peak_per_s"]  # 679 TFLOP/s in hardware/measured/h200
    assert drawn[("measured", "compute", "tensor_bf16")].name == f"BF16 tensor {bf16 / 1e12:.3g} TFLOP/s (measured)"
    assert drawn[("measured", "compute", "tensor_bf16")].line.dash == "dot"
    assert drawn[("datasheet", "bandwidth", "DRAM")].line.dash == "dash"
    # compute roofs only for precisions in use: no FP64 or FP8 lines
    assert {k[2] for k in drawn if k[1] == "compute"} == {"fp32", "tensor_bf16"}


# --------------------------------------------------------------------------------------------
# The roof of the pipe that binds, many launches of one kernel, a report without traffic
# --------------------------------------------------------------------------------------------


def test_a_kernel_bound_by_the_special_function_unit_gets_that_pipe_s_roof():
    from coach.paths import traces_dir

    # scenario-06, recorded on the H200: material_response, its XU pipe 93.5% busy, FP32 at 4% of peak
    prof = load(traces_dir() / "h200" / "scenario-06" / "slow" / "ncu")
    rl = roofline(prof)
    (row,) = rl.pipe_roofs.iter_rows(named=True)
    xu = prof.launches["xu_pipe_active_pct"].item()
    fp32 = rl.table.filter((pl.col("level") == "DRAM") & (pl.col("precision") == "fp32"))["flop_per_s"].item()
    assert row["pipe"] == "XU (special-function) pipe" and row["pipe_pct"] == xu == pytest.approx(93.52, abs=0.01)
    assert row["roof_flop_per_s"] == pytest.approx(fp32 / (xu / 100), rel=1e-12)
    (roof,) = traces(figure(rl), "pipe-roof")
    assert list(roof.y) == [row["roof_flop_per_s"]] * 2 and roof.name.startswith("XU pipe roof, material_response: 2.92 TFLOP/s")
    assert "XU (special-function) pipe roof of material_response" in roof.hovertemplate
    # its point sits at 93.5% of that roof, far under the FP32 one: the chart says so both ways
    assert fp32 / roof.y[0] == pytest.approx(xu / 100)


def test_a_memory_bound_copy_has_no_pipe_roof(rl):
    assert rl.pipe_roofs.is_empty() and traces(figure(rl), "pipe-roof") == []


def _repeated(profile, n: int):
    """The real launch 0, repeated ``n`` times under new launch ids (synthetic: one kernel launched often)."""
    from coach.model import make_kernel_profile

    def rep(df):
        first = df.filter(pl.col("launch_id") == 0)
        return pl.concat([first.with_columns(launch_id=pl.lit(i, pl.Int64)) for i in range(n)])
    return make_kernel_profile(profile.source, launches=rep(profile.launches), metrics=rep(profile.metrics),
                               rules=rep(profile.rules), devices=profile.devices)


def test_a_kernel_launched_many_times_is_one_point_at_its_median(prof):
    many = roofline(_repeated(with_metrics(prof, {SASS.format("ffma"): 1000.0}), 105))
    fig = figure(many)
    (dram,) = traces(fig, "point", level="DRAM")
    assert len(dram.x) == 1 and dram.customdata[0][4] == "copy_strided (median of 105 launches)"
    assert dram.customdata[0][7] == 105 and "the median of 105 launches" in dram.customdata[0][6]
    table = many.table.filter((pl.col("level") == "DRAM") & (pl.col("precision") == "fp32"))
    assert dram.x[0] == pytest.approx(table["intensity_flop_per_byte"].median())
    (bar,) = traces(fig, "bandwidth", level="DRAM")
    assert list(bar.y) == ["copy_strided (median of 105 launches)"]
    assert [t.meta["precision"] for t in traces(fig, "precision")] == ["fp32"]


def test_a_report_without_memory_traffic_still_draws_its_compute_roofs_and_says_why(prof):
    thin = roofline(with_metrics(prof, drop=r"^(dram__bytes|lts__lts2xbar|l1tex__lsu_writeback)"))
    assert thin.table.is_empty()
    fig = figure(thin)
    assert {t.meta["name"] for t in traces(fig, "roof")} == {"fp32"}
    assert "Not in the report: DRAM, L2 and L1 traffic." in " ".join(a.text for a in fig.layout.annotations)


def test_a_report_with_nothing_to_draw_says_so_in_the_chart(prof):
    bare = roofline(with_metrics(prof, drop=r"^(dram__|lts__|l1tex__|sm__|smsp__)"))
    fig = figure(bare)
    assert traces(fig, "roof") == []
    assert any(a.text.startswith("Nothing to draw") for a in fig.layout.annotations)
