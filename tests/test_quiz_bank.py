"""The interview question bank: size, coverage, completeness, and that its own rubrics work."""

from __future__ import annotations

import re
import statistics
import tomllib
from collections import Counter

import pytest

from coach.errors import InputError
from coach.exercises.bank import BANK_DIR, LEVELS, RED_FLAG_PREFIX, load_bank
from coach.exercises.player import OWN_EXERCISES

#: The topics issue 10 asks for, each with its bank id, and those issue 22 adds (system design,
#: serving, distributed training, compilers), with the least number of questions each must have.
REQUIRED_TOPICS = {
    "perf-model", "execution-model", "coalescing", "shared-memory", "warp-level", "atomics", "streams",
    "tensor-cores", "hopper-blackwell", "triton", "profiling", "debugging", "training", "inference",
    "design", "serving", "distributed", "compilers",
}
MIN_QUESTIONS = {t: 7 for t in REQUIRED_TOPICS} | {"design": 8, "serving": 18, "distributed": 18, "compilers": 18}


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def test_size_coverage_and_levels(bank):
    assert len(bank.questions) >= 240
    per_topic = Counter(q.topic for q in bank.questions)
    assert REQUIRED_TOPICS <= set(per_topic) == set(bank.topics)
    assert all(per_topic[t] >= n for t, n in MIN_QUESTIONS.items()), per_topic
    assert min(per_topic.values()) >= 7
    assert set(Counter(q.level for q in bank.questions)) == set(LEVELS)
    for t in ("serving", "distributed", "compilers"):  # junior to staff within each new topic
        assert {q.level for q in bank.questions if q.topic == t} == set(LEVELS), t


def test_every_question_is_complete_and_ids_are_unique(bank):
    ids = [q.id for q in bank.questions]
    assert len(ids) == len(set(ids))
    for q in bank.questions:
        assert q.question.endswith("?") or q.question.endswith(".")
        assert len(q.answer.split()) >= 50, q.id  # an answer, not a keyword list
        assert q.level in LEVELS and q.signals and q.red_flags and q.sources, q.id
        assert all(not c.id.startswith(RED_FLAG_PREFIX) for c in q.signals)
        assert all(c.id.startswith(RED_FLAG_PREFIX) for c in q.red_flags)


def test_each_model_answer_earns_full_marks(bank):
    """The grader must recognise the bank's own answers: every signal found, no red flag raised."""
    for q in bank.questions:
        g = q.grade(q.answer)
        assert not g.missed, (q.id, [c.id for c in g.missed])
        assert not g.flags, (q.id, [(h.concept.id, h.quote) for h in g.flags])


def test_every_red_flag_fires_on_its_example_and_not_when_negated(bank):
    assert {c for c in bank.concepts if c.startswith(RED_FLAG_PREFIX)} == set(bank.examples)
    for cid, example in bank.examples.items():
        concept = bank.concept(cid)
        assert concept.find(example, honour_negation=True) is not None, cid
        for synonym in concept.synonyms:
            assert concept.find(f"It is not true that {synonym}.", honour_negation=True) is None, (cid, synonym)


NEGATED = re.compile(r"\b(no|not|nothing|never|without)\b")


def test_every_red_flag_has_a_plain_form_that_fires_alone_and_not_when_negated(bank):
    """A misconception said in everyday words is still caught: each plain form, said alone, raises its flag."""
    for cid in bank.examples:
        concept = bank.concept(cid)
        assert concept.paraphrases, cid
        for plain in concept.paraphrases:
            assert concept.find(f"{plain[0].upper()}{plain[1:]}.", honour_negation=True) is not None, (cid, plain)
            if not NEGATED.search(plain):  # "it is not true that ... no ..." reads as the claim itself
                assert concept.find(f"It is not true that {plain}.", honour_negation=True) is None, (cid, plain)


def test_every_concept_is_used(bank):
    used = {c.id for q in bank.questions for c in q.signals + q.red_flags} | {c.id for c in bank.classic}
    for path in OWN_EXERCISES.glob("*.toml"):
        data = tomllib.loads(path.read_text())
        used |= {c for entry in data.get("rubric", []) for c in entry["concepts"]}
        used |= {c for d in data.get("decision", []) for c in d.get("signals", []) + d.get("red_flags", [])}
    assert set(bank.concepts) == used


def test_answers_to_other_topics_score_low(bank):
    """Concepts must be specific: an answer about something else earns little against a question."""
    means = [statistics.mean(q.grade(o.answer).fraction for o in bank.questions if o.topic != q.topic)
             for q in bank.questions]
    assert statistics.mean(means) < 0.05
    assert max(means) < 0.15


def test_a_wrong_answer_scores_below_zero():
    q = load_bank().question("perf-02")
    g = q.grade("Just maximize occupancy: higher occupancy is always better. Use fast math too.")
    assert g.score < 0 and {h.concept.id for h in g.flags} == {"rf-occupancy-always", "rf-fewer-flops-memory-bound"}


def test_select_filters_and_is_reproducible(bank):
    senior = bank.select(level="senior")
    assert senior and all(q.level == "senior" for q in senior)
    picked = bank.select(topic="triton", count=3, seed=11)
    assert len(picked) == 3 and all(q.topic == "triton" for q in picked)
    assert [q.id for q in picked] == [q.id for q in bank.select(topic="triton", count=3, seed=11)]
    with pytest.raises(KeyError):
        bank.select(topic="nope")


def _write(tmp_path, body: str):
    (tmp_path / "t.toml").write_text('topic = "t"\ntitle = "T"\n' + body)
    load_bank.cache_clear()
    try:
        return load_bank(tmp_path)
    finally:
        load_bank.cache_clear()


@pytest.mark.parametrize("body, message", [
    ("[concepts.a]\nlabel = 'A'\nexplain = 'x'\nsynonyms = ['alpha']\n[[questions]]\nid = 'q'\nlevel = 'guru'\n"
     "question = 'Q?'\nanswer = 'A'\nsignals = ['a']\nred_flags = ['a']\n", "level 'guru'"),
    ("[[questions]]\nid = 'q'\nlevel = 'mid'\nquestion = 'Q?'\nanswer = 'A'\nsignals = ['nope']\nred_flags = ['x']\n",
     "unknown concept 'nope'"),
    ("[concepts.rf-x]\nlabel = 'X'\nexplain = 'x'\nsynonyms = ['x']\n", "needs an example sentence"),
    ("[concepts.a]\nlabel = 'A'\nexplain = 'x'\n", "neither synonyms"),
    ("this is = = not toml", "not valid TOML"),
])
def test_a_broken_bank_file_is_one_line_naming_it(tmp_path, body, message):
    with pytest.raises(InputError) as err:
        _write(tmp_path, body)
    assert message in str(err.value) and str(tmp_path / "t.toml") in str(err.value)


def test_the_shipped_bank_folder_is_the_package_data():
    assert BANK_DIR.is_dir() and len(list(BANK_DIR.glob("*.toml"))) == len(load_bank().topics) >= len(REQUIRED_TOPICS)
