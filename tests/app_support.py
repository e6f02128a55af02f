"""Shared by the dashboard's tests: a walkthrough over the recorded strided/coalesced copy pair.

The two kernels of tests/data/ncu_strided_copy (recorded on an H200, see its PROVENANCE.md) are a
slow kernel and its fix; the words below play the part a scenario's files play, so the stepper can
be walked end to end on real profiles.
"""

from __future__ import annotations

import re
from pathlib import Path

from coach.app.walkthrough import Walkthrough, kernel_pair, launch
from coach.ingest import load

DATA = Path(__file__).parent / "data" / "ncu_strided_copy"
REPORT = DATA / "copy_strided_vs_coalesced.ncu-rep"
SOURCE = DATA / "copy_strided_vs_coalesced.cu"
WALKTHROUGH_ID = "strided-copy"

EVIDENCE = (
    dict(label="global load sectors", metric="global_load_sectors", healthy="4 per request: 32 threads x 4 bytes",
         key=True),
    dict(label="global load requests", metric="global_load_requests", healthy="n / 32: one per warp"),
    dict(label="DRAM traffic", metric="dram_bytes", unit="B", healthy="8 bytes per element (read + write)", key=True),
    dict(label="DRAM throughput", metric="dram_throughput_pct", unit="%", healthy="high, on useful bytes"),
    dict(label="duration", metric="duration_ns", unit="ns"),
)


def kernel_source(name: str) -> str:
    """The ``__global__`` function ``name`` from the recorded program's source."""
    text = SOURCE.read_text()
    m = re.search(rf"__global__ void {name}\(.*?\n}}\n", text, re.S)
    assert m, name
    return m.group(0)


def strided_walkthrough() -> Walkthrough:
    profile = load(REPORT)
    return kernel_pair(
        before=launch(profile, 0),
        after=launch(profile, 1),
        evidence=EVIDENCE,
        id=WALKTHROUGH_ID,
        title="A gather that reads every 33rd float",
        level="beginner",
        symptom="A copy of 2^26 floats through an index with stride 33 takes far longer than a plain copy of the "
                "same array. Both move 512 MiB of useful data. Why is one so much slower?",
        question="What would you check first in the Nsight Compute report, and what number would confirm it?",
        bottleneck="memory-access-pattern",
        fix_summary="Read consecutive elements in consecutive threads, so a warp's 32 loads fall in four 32-byte sectors.",
        fix_details="With stride 33 each thread of a warp touches its own sector: 32 sectors per request, of which "
                    "4 bytes each are used.",
        hints=("Compare sectors per request with the 4 a coalesced 4-byte load needs.",),
        strong=("Checks global load sectors per request.", "Compares DRAM bytes with the useful bytes."),
        red_flags=("Raises occupancy for a kernel whose problem is bytes per request.",),
        slow_source=kernel_source("copy_strided"),
        fixed_source=kernel_source("copy_coalesced"),
        source_label="copy kernel (CUDA C++)",
    )


RAW_CSV = DATA / "nvidia" / "raw.csv"


def many_launches_csv(path: Path, launches: int) -> Path:
    """A synthetic ``ncu --csv --page raw`` report of ``launches`` launches of copy_strided, written to
    ``path``: the recorded launch 0 of nvidia/raw.csv (header, units, its row) repeated with the IDs
    0, 1, ... A profile of one kernel launched many times, as a training loop gives, built from a
    real row; every launch has the recorded numbers, so every launch raises the same findings."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(RAW_CSV.read_text())))
    header, units, first = rows[0], rows[1], rows[2]
    assert header[0] == "ID" and first[0] == "0" and "copy_strided" in first[header.index("Kernel Name")]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(units)
    for i in range(launches):
        writer.writerow([str(i), *first[1:]])
    path.write_text(out.getvalue())
    return path


def data_url(payload: bytes) -> str:
    """A file as dcc.Upload hands it to a callback."""
    import base64

    return "data:application/octet-stream;base64," + base64.b64encode(payload).decode()


def upload(app, payload: bytes, name: str, header: bool = True):
    """A file sent as the explorer's page sends it (assets/coach.js): its bytes as one POST's body.
    Returns (status, answer)."""
    from coach.app.pages.explore import UPLOAD_HEADER, UPLOAD_PATH

    headers = {UPLOAD_HEADER: "1"} if header else {}
    resp = app.server.test_client().post(UPLOAD_PATH, query_string={"name": name}, data=payload, headers=headers,
                                         content_type="application/octet-stream")
    return resp.status_code, resp.get_json()


def dispatch(app, output: str, values: dict[str, object], triggered: str | None = None) -> dict:
    """Run the callback whose output key starts with ``output`` through Dash's own HTTP endpoint,
    as the browser would; ``values`` maps "id.property" to the value of each input and state."""
    key = next(k for k in app.callback_map if k.lstrip(".").startswith(output.lstrip(".")))
    spec = app.callback_map[key]

    def items(deps):
        return [{"id": d["id"], "property": d["property"], "value": values.get(f"{d['id']}.{d['property']}")}
                for d in deps]

    multi = key.startswith("..")
    parts = [p.split(".", 1) for p in (key[2:-2].split("...") if multi else [key])]
    outputs = [{"id": i, "property": prop} for i, prop in parts]
    body = {
        "output": key,
        "outputs": outputs if multi else outputs[0],
        "inputs": items(spec["inputs"]),
        "state": items(spec["state"]),
        "changedPropIds": [] if triggered == "" else [triggered or next(iter(values))],  # "": the initial call
    }
    resp = app.server.test_client().post("/_dash-update-component", json=body)
    if resp.status_code == 204:
        return {}
    assert resp.status_code == 200, resp.data[:500]
    return resp.get_json()["response"]
