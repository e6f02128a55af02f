"""The Python API (coach.api) and its notebook display: the same numbers as the command line, and
the example notebook (examples/notebook.ipynb) executed in a Jupyter kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import coach

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TIMELINE = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"
STRIDED = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def cli_json(*args):
    r = subprocess.run([sys.executable, "-m", "coach", *map(str, args), "--json"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_import_coach_stays_light():
    r = subprocess.run([sys.executable, "-c", "import sys, coach; print('polars' in sys.modules)"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip() == "False"


def test_load_and_summary_match_coach_load():
    profile = coach.load(TIMELINE)
    assert isinstance(profile.kernels, pl.DataFrame) and profile.kernels.height == 11
    top = coach.summary(profile)["top_kernels"]
    assert top.drop("display_name").to_dicts() == cli_json("load", TIMELINE)["summary"]["top_kernels"]
    part = coach.load(TIMELINE, kernel="SoftMax")
    assert part.kernels["name"].unique().to_list() == ["cunn_SoftMaxForwardReg"]


def test_diagnose_matches_coach_diagnose():
    findings = coach.diagnose(STRIDED)
    cli = [f for k in cli_json("diagnose", STRIDED)["kernels"] for f in k["findings"] + k["not_checked"]]
    assert sorted(f.rule_id for f in findings) == sorted(f["rule_id"] for f in cli)
    frame = findings.frame
    assert frame.height == len(findings) and frame["rule_id"][0] == findings[0].rule_id
    assert coach.diagnose(STRIDED, kernel="coalesced").frame["scope"].unique().to_list() == ["copy_coalesced"]


def test_diff_gives_frames():
    slow, fixed = ROOT / "traces/h200/scenario-01/slow/ncu", ROOT / "traces/h200/scenario-01/fixed/ncu"
    d = coach.diff(slow, fixed, fix="coalesce")
    cli = cli_json("diff", slow, fixed, "--fix", "coalesce")
    assert d.fix_verdict == cli["headline"]["fix_verdict"] == "matches"
    assert isinstance(d.movements, pl.DataFrame) and d.movements.height == len(cli["movements"])


def test_html_display():
    profile = coach.load(TIMELINE)
    page = profile._repr_html_()
    assert str(TIMELINE) in page and "<table" in page and "cunn_SoftMaxForwardReg" in page
    assert "CUDAFunctorOnSelf_add&lt;float&gt;" in page  # the two template instances named apart, escaped
    findings = coach.diagnose(profile)
    assert findings[0].title in findings._repr_html_() or findings[0].title.replace("&", "&amp;") in findings._repr_html_()
    assert "next:" in findings[0]._repr_html_()
    ncu = coach.load(STRIDED)._repr_html_()
    assert "copy_strided" in ncu and "2 launches profiled" in ncu


def test_errors_are_coach_errors(tmp_path):
    from coach.errors import CoachError

    bad = tmp_path / "empty.sqlite"
    bad.write_bytes(b"")
    with pytest.raises(CoachError, match="is empty"):
        coach.load(bad)
    with pytest.raises(CoachError, match="no kernel matches"):
        coach.load(TIMELINE, kernel="gemm")


@pytest.mark.slow
def test_example_notebook_runs_in_a_kernel():
    nbformat = pytest.importorskip("nbformat", reason="the dev extra installs nbformat, nbclient and ipykernel")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("torch_softmax_nvtx.sqlite" in h and "<table" in h for h in html)  # the profile's own display
    assert any("findings, ranked" in h for h in html)
