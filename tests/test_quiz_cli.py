"""`coach quiz` and `coach drill` from the command line: grading, JSON, errors, and saved attempts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def coach(tmp_path, *args, stdin=subprocess.DEVNULL):
    env = {"COACH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0]}
    return subprocess.run([sys.executable, "-m", "coach", *args], capture_output=True, text=True, env=env, stdin=stdin)


def test_quiz_grades_and_records(tmp_path):
    r = coach(tmp_path, "quiz", "--id", "perf-01", "--json", "--answer",
              "Intensity is FLOPs per byte. Roofline: min(peak, AI x BW). Below the ridge point it is memory-bound, "
              "so I would use fast math.")
    assert r.returncode == 0, r.stderr
    (res,) = json.loads(r.stdout)
    assert (res["score"], res["max_score"]) == (3, 4)
    assert [f["concept"] for f in res["found"]] == ["arithmetic-intensity", "roofline-min", "ridge-point",
                                                    "bound-classification"]
    assert [f["concept"] for f in res["red_flags"]] == ["rf-fewer-flops-memory-bound"]
    assert res["feedback"][-1] == "score 3/4 (4 signals found, 1 red flag): fail"
    assert res["verdict"] == "fail"
    progress = json.loads(coach(tmp_path, "progress", "--json").stdout)
    assert progress["attempts"] == 1 and progress["by_topic"][0]["best"] == 0.75


def test_quiz_rich_output_keeps_brackets(tmp_path):
    r = coach(tmp_path, "quiz", "--id", "smem-02", "--no-save", "--answer", "pad the tile to tile[32][33]")
    assert r.returncode == 0, r.stderr
    assert 'you said "33"' in r.stdout or "tile[32][33]" in r.stdout
    assert "Padding the tile to tile[32][33]" in r.stdout  # the model answer, printed as written


def test_quiz_topics_and_show(tmp_path):
    topics = json.loads(coach(tmp_path, "quiz", "--topics", "--json").stdout)
    assert len(topics) >= 22 and sum(t["questions"] for t in topics) >= 240
    assert next(t for t in topics if t["topic"] == "design")["questions"] >= 8
    listed = coach(tmp_path, "quiz", "--topics").stdout.splitlines()
    assert listed[-1].split()[:2] == ["all", str(sum(t["questions"] for t in topics))]
    shown = json.loads(coach(tmp_path, "quiz", "--show", "--topic", "atomics", "--level", "staff", "--json").stdout)
    assert [q["id"] for q in shown] == ["atom-06"]


def test_design_questions_show_their_follow_ups_after_the_answer(tmp_path):
    shown = json.loads(coach(tmp_path, "quiz", "--show", "--topic", "design", "--count", "20", "--json").stdout)
    assert len(shown) >= 8 and all(len(q["follow_ups"]) >= 3 for q in shown)
    r = coach(tmp_path, "quiz", "--id", "design-06", "--no-save", "--answer", "GQA: 8 KV heads, so 2 x layers x kv heads.")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.index("Model answer:") < out.index("Sources:") < out.index("Follow-ups an interviewer asks:")
    assert "  - How would multi-head latent attention" in out
    plain = json.loads(coach(tmp_path, "quiz", "--id", "perf-01", "--show", "--json").stdout)
    assert plain[0]["follow_ups"] == []


@pytest.mark.parametrize("args, message", [
    (("quiz", "--topic", "nope"), "--topic: unknown topic 'nope'; use one of atomics, coalescing"),
    (("quiz", "--level", "guru"), "--level: unknown level 'guru'"),
    (("quiz", "--id", "zz-99"), "--id: no question 'zz-99'"),
    (("quiz", "--count", "2", "--answer", "x"), "1 answer(s) given, but there are more questions"),
    (("quiz",), "no answers given and no terminal to ask on"),
    (("drill", "--kind", "nope", "--answer", "1"), "unknown drill kind 'nope'"),
    (("plan", "--days", "400"), "--days: 400 is out of range; use 1 to 365"),
])
def test_errors_are_one_line(tmp_path, args, message):
    r = coach(tmp_path, *args)
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_drill_grades_a_hand_checked_example(tmp_path):
    shown = json.loads(coach(tmp_path, "drill", "--kind", "decode-floor", "--gpu", "h200", "--seed", "3", "--show",
                             "--json").stdout)
    # 8B parameters, INT4 (0.5 B per weight), 2 x H200: 4e9 B / (2 x 4.8e12 B/s) = 0.4167 ms: 2,400 tokens/s
    assert shown[0]["answer"] == pytest.approx(2400.0) and "8B-parameter model with INT4" in shown[0]["question"]
    r = coach(tmp_path, "drill", "--kind", "decode-floor", "--gpu", "h200", "--seed", "3", "--answer", "2.2k tok/s", "--json")
    (res,) = json.loads(r.stdout)
    assert res["correct"] is True and res["given"] == pytest.approx(2200.0)
    assert res["feedback"][0] == "right: you said 2,200 tokens/s, the answer is 2,400 tokens/s (8% low; tolerance ±20%)"
    progress = json.loads(coach(tmp_path, "progress", "--json").stdout)
    assert progress["by_topic"] == [{"kind": "drill", "topic": "inference", "attempts": 1, "best": 1.0, "last": 1.0,
                                     "recent": 1.0, "last_at": progress["by_topic"][0]["last_at"]}]
