"""The bank's topics on correctness debugging, Triton versus CUDA, Hopper/Blackwell in depth and the
Nsight workflow: they load, are complete, and their rubrics grade plain-language answers as intended."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections import Counter

import pytest

from coach.exercises.bank import BANK_DIR, LEVELS, RED_FLAG_PREFIX, load_bank

#: topic id -> (question id prefix, minimum number of questions)
TOPICS = {
    "correctness": ("cor-", 16),
    "triton-vs-cuda": ("tvc-", 14),
    "hopper-advanced": ("hop-", 17),
    "nsight-workflow": ("nw-", 16),
}


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def _own_concepts(topic: str) -> dict[str, dict]:
    return tomllib.loads((BANK_DIR / f"{topic}.toml").read_text(encoding="utf-8"))["concepts"]


def test_the_topics_load_with_their_questions_and_levels(bank):
    per_topic = Counter(q.topic for q in bank.questions)
    for topic, (prefix, least) in TOPICS.items():
        assert topic in bank.topics and bank.topics[topic].title, topic
        assert per_topic[topic] >= least, (topic, per_topic[topic])
        qs = bank.select(topic=topic)
        assert all(q.id.startswith(prefix) for q in qs), topic
        assert {q.level for q in qs} >= {"mid", "senior"} and {q.level for q in qs} <= set(LEVELS)
    assert {q.level for q in bank.questions if q.topic in TOPICS} == set(LEVELS)  # junior to staff


def test_ids_are_unique_across_the_bank(bank):
    ids = Counter(q.id for q in bank.questions)
    assert [i for i, n in ids.items() if n > 1] == []


def test_each_new_question_has_signals_a_red_flag_with_an_example_and_sources(bank):
    for q in bank.questions:
        if q.topic not in TOPICS:
            continue
        assert len(q.signals) >= 2 and len(q.red_flags) >= 1, q.id
        assert all(bank.examples.get(c.id) for c in q.red_flags), q.id
        assert q.sources and all(s.strip() for s in q.sources), q.id
        assert len(q.answer.split()) >= 80, q.id  # a senior engineer's answer, not a sketch


def test_each_concept_is_one_labelled_claim_with_several_ways_to_say_it():
    for topic in TOPICS:
        for cid, raw in _own_concepts(topic).items():
            ways = len(raw.get("synonyms", [])) + len(raw.get("patterns", []))
            assert ways >= 3, (topic, cid, ways)
            assert raw["label"].strip() and raw["explain"].strip(), (topic, cid)
            assert ";" not in raw["label"], (topic, cid)  # one claim, not a list of them
            if cid.startswith(RED_FLAG_PREFIX):
                assert raw["example"].strip(), (topic, cid)


@pytest.mark.parametrize("qid, answer, expect", [
    ("tri-08", "I'd drop to CUDA when I need warp-level primitives such as shuffles or ballots; when the control "
               "flow is data dependent per thread, because in Triton divergence is expressed with masks and lanes "
               "idle; when I need inline PTX for an instruction Triton does not expose; or when the Python launcher "
               "overhead dominates a tiny kernel.",
     {"no-lane-level-access", "divergence-as-masks", "inline-ptx-cuda", "triton-launch-overhead"}),
    ("cor-04", "A device side assert fired inside a kernel, usually a target out of range in the loss. Errors are "
               "asynchronous, so rerun with CUDA_LAUNCH_BLOCKING=1 or run it on the CPU to get a readable error.",
     {"device-assert", "bad-index-input", "async-errors", "launch-blocking", "cpu-repro"}),
    ("hop-01", "TMA and clusters are compute capability 9.0 features, so plain sm_90 is enough. wgmma needs sm_90a "
               "and tcgen05 needs sm_100a; arch specific code is not forward compatible.",
     {"tma-cluster-sm90", "sm90a", "tcgen05-sm100a", "arch-specific-not-forward"}),
    ("nw-05", "The memory number in SOL is the max over the memory units, not just DRAM, so L1 or shared memory "
              "is probably the limiter, for example bank conflicts.",
     {"sol-memory-is-max", "l1-or-smem-limiter"}),
])
def test_a_plain_language_answer_earns_the_signals_it_names(bank, qid, answer, expect):
    g = bank.question(qid).grade(answer)
    assert {h.concept.id for h in g.found} >= expect and not g.flags


@pytest.mark.parametrize("qid, answer, flags", [
    # "X, just use Y" in one sentence: both phrases hold a verb, so the sentence states them
    ("tri-08", "Triton has warp shuffles too, just use tl.shfl. Triton is always slower than CUDA anyway.",
     {"rf-triton-has-shuffles", "rf-triton-always-slower", "rf-no-lane-level-access-contrary-1"}),
    ("cor-09", "Setting the seed makes it deterministic.", {"rf-seed-enough", "rf-deterministic-flags-contrary-1"}),
    ("hop-01", "TMA requires sm_90a, and tcgen05 runs on Hopper too.", {"rf-tma-needs-90a", "rf-tcgen05-on-hopper"}),
    ("nw-05", "90% memory throughput means DRAM is saturated, so we need more bandwidth.", {"rf-memory-pct-is-dram"}),
])
def test_a_misconception_scores_below_zero(bank, qid, answer, flags):
    g = bank.question(qid).grade(answer)
    assert {h.concept.id for h in g.flags} == flags and g.verdict == "fail"


def test_tri_08_names_the_concrete_reasons_to_switch(bank):
    q = bank.question("tri-08")
    assert {"no-lane-level-access", "divergence-as-masks", "inline-ptx-cuda",
            "triton-launch-overhead"} <= {c.id for c in q.signals}
    # the old, thin answer no longer earns full marks
    thin = ("Triton abstracts threads and warps, which buys productivity, but you lose low level control; "
            "drop to CUDA or CUTLASS for custom synchronisation or new hardware features.")
    assert q.grade(thin).missed


def test_quiz_topics_lists_the_new_topics(tmp_path):
    env = {"COACH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0]}
    r = subprocess.run([sys.executable, "-m", "coach", "quiz", "--topics", "--json"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    counts = {t["topic"]: t["questions"] for t in json.loads(r.stdout)}
    for topic, (_, least) in TOPICS.items():
        assert counts[topic] >= least, topic
