"""Concept matching: tolerant of wording, strict about meaning; negated red flags do not count."""

from __future__ import annotations

import pytest

from coach.exercises.grading import Concept, grade, stem

COALESCED = Concept("coalescing", "coalesced access", "Consecutive lanes, consecutive addresses.",
                    ("coalesced", "contiguous accesses by consecutive threads", "128-byte transactions"))
SECTORS = Concept("sectors", "sectors per request", "4 is ideal.", ("sectors per request",), (r"sectors?\s*/\s*request",))
OCCUPANCY_MYTH = Concept("rf-occ", "higher occupancy is always better", "Occupancy only hides latency.",
                         ("higher occupancy is always better", "maximize occupancy"))


@pytest.mark.parametrize("text", [
    "The loads are COALESCED.",
    "it's coalescing now",
    "we coalesce them",
    "contiguous access by consecutive threads",
    "Contiguous accesses made by the consecutive threads!",
    "the warp issues 128 byte transactions",
    "one 128-byte transaction",
])
def test_wording_case_punctuation_plurals_and_filler_words(text):
    assert COALESCED.find(text) is not None


@pytest.mark.parametrize("text", [
    "the threads access memory",
    "coal is black",
])
def test_other_meanings_do_not_match(text):
    assert COALESCED.find(text) is None


def test_patterns_match_what_phrases_cannot():
    assert SECTORS.find("32 sectors/request on the strided kernel") == "sectors/request"


def test_stem_is_consistent_across_word_forms():
    assert stem("coalesced") == stem("coalescing") == stem("coalesce")
    assert stem("bytes") == stem("byte") and stem("latencies") == stem("latency")
    assert stem("GPUs".lower()) == stem("gpu") and stem("stalled") == stem("stalls") == stem("stall")


@pytest.mark.parametrize("text, flagged", [
    ("Higher occupancy is always better, so maximize occupancy.", True),
    ("Higher occupancy is not always better.", False),  # negation inside the phrase
    ("It is a myth that higher occupancy is always better.", False),  # negation before
    ("Maximize occupancy is not the goal here.", False),  # negation right after
    ("That does not matter much, maximize occupancy.", True),  # a comma ends the negation's reach
])
def test_negated_red_flags_do_not_count(text, flagged):
    g = grade(text, [], [OCCUPANCY_MYTH])
    assert bool(g.flags) is flagged


def test_a_negated_signal_is_not_asserted_and_a_dismissed_one_contradicts():
    assert grade("the loads are now coalesced", [COALESCED], []).score == 1
    g = grade("the loads are not coalesced", [COALESCED], [])
    assert g.score == 0 and not g.contradicted
    g = grade("Coalescing doesn't matter here, the caches absorb it.", [COALESCED], [])
    assert g.score == 0 and [h.concept.id for h in g.contradicted] == ["coalescing"] and g.verdict == "fail"


def test_score_is_signals_found_minus_red_flags_and_feedback_explains_each():
    g = grade("The accesses are coalesced. I would maximize occupancy.", [COALESCED, SECTORS], [OCCUPANCY_MYTH])
    assert (g.score, g.max_score, len(g.found), len(g.missed), len(g.flags)) == (0, 2, 1, 1, 1)
    assert g.fraction == 0.0
    fb = g.feedback()
    assert fb[0] == '+ coalesced access: you said "coalesced". Consecutive lanes, consecutive addresses.'
    assert fb[1] == "- missing: sectors per request. 4 is ideal."
    assert fb[2] == ('! red flag: higher occupancy is always better: you said "maximize occupancy". '
                     "Occupancy only hides latency.")
    assert fb[3] == "score 0/2 (1 signal found, 1 red flag): fail"


def test_keyword_and_composite_concepts():
    keys = Concept("k", "line", "", keywords=("pinned", "stream", "overlap"), min_keywords=2)
    assert keys.find("pin the buffers and overlap") == "pinned, overlap"
    assert keys.find("pin the buffers") is None
    both = Concept("both", "soa and why", "", parts=(COALESCED, SECTORS), min_parts=2)
    assert both.find("coalesced; 4 sectors per request") == "coalesced; sectors per request"
    assert both.find("coalesced") is None


def test_a_concept_needs_something_to_match():
    with pytest.raises(ValueError):
        Concept("empty", "nothing", "")
    with pytest.raises(ValueError):
        Concept("bad", "x", "", keywords=("a",), min_keywords=2)


# ---- third round: compounds, "non-", denials that outweigh, plain GPU words ------------------------

COMPUTE_BOUND = Concept("rf-cb", "calling decode compute-bound", "Decode is memory-bound.",
                        ("decode is compute bound",), example="Decode is compute bound.")
WEIGHT_ONLY = Concept("wo", "weight-only quantisation", "Only the weights are stored in low precision.", ("weight-only",),
                      loose_label=False)
STICKY = Concept("sticky", "sticky errors", "The context is unusable.", ("sticky error",), loose_label=False)


def test_a_compound_is_one_word():
    # "bound" of "memory-bound" is not the "bound" of "compute bound"
    assert COMPUTE_BOUND.find("It uses the spare compute of memory-bound decode steps.") is None
    assert COMPUTE_BOUND.find("decode is compute-bound") is not None
    # a synonym written as a compound needs its words together
    assert WEIGHT_ONLY.find("the weights are stored as int4 and only the scales in fp16") is None
    assert WEIGHT_ONLY.find("weight-only int4 with fp16 activations") is not None


def test_non_prefix_is_not_a_negation():
    resets = Concept("resets", "get resets the error", "", ("resets the error",), loose_label=False)
    assert resets.find("cudaGetLastError resets the error it returns (for non-sticky errors)",
                       honour_negation=True) is not None
    assert STICKY.find("it is a non-sticky error", honour_negation=True) is None  # another word


def test_a_denial_outweighs_a_match_of_the_same_words():
    from coach.exercises.bank import load_bank

    # a synonym denied outright outweighs a loose reading of the rest of its sentence
    managed = load_bank().concept("programmer-managed")
    assert managed.find("Shared memory isn't programmer managed, the hardware caches it.", honour_negation=True) is None
    assert managed.find("Shared memory is programmer managed, L1 is a hardware cache.", honour_negation=True) is not None


@pytest.mark.parametrize("text, concept", [
    ("the else-threads are switched off while the if part runs", Concept("m", "masked lanes", "", ("masked",),
                                                                        loose_label=False)),
    ("one kernel pays the start-up cost once", Concept("l", "launch overhead", "", ("launch overhead",),
                                                       loose_label=False)),
    ("it saves the keys and values of earlier tokens", Concept("k", "kv cache", "", ("kv",), loose_label=False)),
    ("everything went into one queue", Concept("s", "one stream", "", ("one stream",), loose_label=False)),
])
def test_plain_words_for_gpu_terms(text, concept):
    assert concept.find(text) is not None


def test_a_memory_generation_is_not_any_dram():
    h200 = Concept("h", "HBM3e", "", ("hbm3e",), loose_label=False)
    assert h200.find("141 GB of HBM3e") is not None
    assert h200.find("the DRAM bandwidth") is None
