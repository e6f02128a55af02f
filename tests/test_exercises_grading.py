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


# ---- fourth round: who asserts a misconception, denied requirements, claims over clauses, classics ----

FENCE_MYTH = Concept("rf-fence", "assuming an atomic orders the surrounding memory operations", "Atomics are relaxed.",
                     ("atomic acts as a fence",), example="The atomic acts as a fence, so the data is visible.")
AGREE = Concept("agree", "the swizzle modes must agree", "Or the results are silently wrong.", ("must agree",))


@pytest.mark.parametrize("text, flagged", [
    ("The atomic acts as a fence, so B sees the data.", True),
    ("I think the atomic acts as a fence.", True),  # a hedge is still the candidate's claim
    ("People often assume the atomic acts as a fence; it doesn't.", False),
    ("A common mistake is to think the atomic acts as a fence.", False),
    ("The naive version assumes the atomic acts as a fence.", False),
    ("You might think the atomic acts as a fence, but it orders nothing else.", False),
    ("The atomic acts as a fence. Wrong: it is relaxed.", False),  # taken back at once
    ("The atomic acts as a fence. That is why B sees the data once the flag is set.", True),
    ("The atomic acts as a fence, which is wrong.", False),
])
def test_a_misconception_named_to_be_rejected_is_not_asserted(text, flagged):
    assert bool(grade(text, [], [FENCE_MYTH], classic=False).flags) is flagged


@pytest.mark.parametrize("text", [
    "The modes don't have to agree. A mismatch just runs slower.",
    "There's no need for the modes to agree, any swizzle works.",
])
def test_a_denied_requirement_contradicts_the_signal(text):
    mismatch = Concept("agree2", "the swizzle modes must agree", "", ("must agree", "mismatch"))
    g = grade(text, [mismatch], [], classic=False)
    assert g.contradicted and g.verdict == "fail"


@pytest.mark.parametrize("text", ["You don't need scale factors with E5M2.", "I don't think you need scale factors."])
def test_you_dont_need_x_dismisses_x(text):
    scale = Concept("scale", "FP8 needs scaling factors", "", ("scale factors",))
    assert grade(text, [scale], [], classic=False).contradicted


def test_have_to_reads_as_must():
    assert AGREE.find("The two modes have to agree.", honour_negation=True) is not None


LOCAL_MYTH = Concept("rf-local", "thinking local memory is on-chip", "It lives in DRAM.", ("local memory is on chip",),
                     example="Local memory is on chip.")


@pytest.mark.parametrize("text, flagged", [
    ("Local memory, which is the per-thread on-chip storage, is fast.", True),  # a relative clause goes on
    ("Local memory is slow, the on-chip storage is shared memory.", False),  # a new clause, a new subject
])
def test_a_clause_that_refers_back_continues_the_claim(text, flagged):
    assert bool(grade(text, [], [LOCAL_MYTH], classic=False).flags) is flagged


def test_a_condition_and_its_consequence_are_one_claim():
    roof = Concept("rf-roof", "calling a kernel below its roof at the limit", "", (),
                   paraphrases=("any point under the roof is at the hardware limit",), example="Under the roof is the limit.")
    assert grade("If the point is under the roof, the kernel is at the hardware limit.", [], [roof], classic=False).flags


def test_every_word_of_a_misconception_in_one_claim_states_it_in_any_order():
    sep = Concept("rf-sep", "thinking L1 and shared memory are separate", "", (),
                  paraphrases=("the l1 cache and shared memory are separate memories",), example="L1 and shared memory are separate.")
    assert grade("L1 is a separate 256 KB cache next to shared memory.", [], [sep], classic=False).flags
    assert not grade("L1 is not a separate cache next to shared memory.", [], [sep], classic=False).flags


def test_an_absolute_misconception_needs_its_always():
    faster = Concept("rf-smem", "copying data to shared memory always speeds a kernel up", "", (),
                     paraphrases=("shared memory always makes a kernel faster",), example="Shared memory is always faster.")
    assert not grade("Shared-memory atomics make the kernel faster here.", [], [faster], classic=False).flags
    assert grade("Shared memory always makes a kernel faster.", [], [faster], classic=False).flags


def test_classic_misconceptions_are_graded_on_every_rubric_and_counted_once():
    from coach.exercises.bank import load_bank

    bank = load_bank()
    assert "rf-occupancy-always" in {c.id for c in bank.classic}
    q = bank.question("tri-02")  # a Triton question whose rubric does not name occupancy
    assert "rf-occupancy-always" not in {c.id for c in q.red_flags}
    g = q.grade("num_warps is the warps per program. Always maximise occupancy, higher occupancy is always better.")
    assert "rf-occupancy-always" in {h.concept.id for h in g.flags} and g.verdict == "fail"
    # said in the words of a rubric's own flag, the classic one is not counted again
    g = grade("Higher occupancy is always better.", [], [OCCUPANCY_MYTH])
    assert [h.concept.id for h in g.flags] == ["rf-occ"]
