"""`coach load` on every real recording in tests/data: the numbers a user sees first."""

import json
import subprocess
import sys

import pytest


def load_json(*paths):
    r = subprocess.run([sys.executable, "-m", "coach", "load", "--json", *map(str, paths)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_strided_copy_report(strided_ncu_rep):
    s = load_json(strided_ncu_rep)
    assert s["kind"] == "kernel-profile" and s["summary"]["device"]["name"] == "NVIDIA H200"
    strided = next(k for k in s["summary"]["kernels"] if k["kernel_name"] == "copy_strided")
    assert strided["total_ns"] == 1_179_872.0  # 1.18 ms
    assert strided["dram_read_bytes"] == 4_294_982_144.0  # 4.29 GB read from DRAM
    assert s["findings"][0]["rule_id"] == "uncoalesced-global-access"


def test_nsys_export(softmax_nsys_sqlite):
    s = load_json(softmax_nsys_sqlite)
    counts = s["summary"]["counts"]
    assert (counts["kernels"], counts["nvtx"], counts["memcpy"]) == (11, 3, 4)
    assert [r["text"] for r in s["summary"]["nvtx"]] == ["step0", "step1", "step2"]
    dtoh = s["summary"]["memcpy"][0]
    assert dtoh["kind"] == "DtoH" and dtoh["count"] == 4 and dtoh["pageable"] == 3
    assert s["findings"][0]["rule_id"] == "pageable-memcpy"


def test_kineto_trace(softmax_kineto_json):
    s = load_json(softmax_kineto_json)
    assert s["summary"]["counts"]["kernels"] == 6
    top = s["summary"]["top_kernels"][0]
    assert top["name"] == "cunn_SoftMaxForwardReg" and top["count"] == 3


def test_several_files_give_a_list(strided_ncu_rep, softmax_kineto_json):
    s = load_json(strided_ncu_rep, softmax_kineto_json)
    assert [x["kind"] for x in s] == ["kernel-profile", "timeline"]


@pytest.mark.parametrize("content,expect", [
    (b"", "is empty"),
    (b"hello, world\n", "is not a profile coach reads"),
    (b"SQLite format 3\x00" + b"\x00" * 200, "SQLite"),
    (b"NVR\x00" + b"\x07" * 100, "truncated or damaged"),
    (b'{"traceEvents": [', "JSON"),
])
def test_bad_input_is_one_line_and_nonzero(tmp_path, content, expect):
    f = tmp_path / "bad.file"
    f.write_bytes(content)
    r = subprocess.run([sys.executable, "-m", "coach", "load", str(f)], capture_output=True, text=True)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and expect in lines[0], r.stderr
    assert "Traceback" not in r.stderr
