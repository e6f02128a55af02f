"""General reading mechanisms of the grader, each on answers that state or deny a misconception in a
way the rubric's phrasings do not spell out (issue 17): the subject carried across clauses and
sentences, absolute claims said in other words, hedged claims."""

from __future__ import annotations

import pytest

from coach.exercises.bank import load_bank


def _flags(item: str, text: str) -> set[str]:
    return {h.concept.id for h in load_bank().question(item).grade(text).flags}


@pytest.mark.parametrize("item, text, flag", [
    # the subject in the sentence before, taken up by "they" / "their" / "it"
    ("hop-14", "FP4 E2M1 has sixteen codes. Like INT4 they are evenly spaced over the range.", "rf-fp4-uniform"),
    ("nw-09", "I would read the NVTX ranges from nvtx_sum. Their length is the GPU time of the work inside.",
     "rf-nvtx-gpu-time"),
    ("hb-04", "Blackwell adds TMEM, 256 KB per SM. It is just a larger register file for each thread.",
     "rf-tmem-registers"),
])
def test_a_misconception_whose_subject_is_said_before_is_read(item, text, flag):
    assert flag in _flags(item, text)


@pytest.mark.parametrize("item, text, flag", [
    # no word referring back: the claim stands on its own words, which do not state the misconception
    ("nw-09", "I would read the NVTX ranges from nvtx_sum. The length of a kernel is its GPU time.",
     "rf-nvtx-gpu-time"),
    # what the context denies it does not supply: "returns nothing" gives no "returns" to "it"
    ("cor-01", "A kernel launch returns nothing, so right after it call cudaGetLastError to catch launch errors.",
     "rf-launch-returns-error"),
    # a claim that denies its words is judged on them alone
    ("hop-14", "FP4 E2M1 has sixteen codes. Unlike INT4 they are not evenly spaced.", "rf-fp4-uniform"),
])
def test_context_supplies_only_a_subject_referred_to_and_affirmed(item, text, flag):
    assert flag not in _flags(item, text)


@pytest.mark.parametrize("item, text, flag", [
    ("srv-13", "More tensor parallelism gives more throughput per GPU, no matter what.", "rf-tp-always-faster"),
    ("perf-03", "No matter what the kernel does, more threads are faster.", "rf-occupancy-always"),
    ("tvc-09", "Push num_stages up: in all cases more pipeline stages are faster.", "rf-more-stages-always"),
    ("srv-07", "A larger token budget per step is better at any load.", "rf-bigger-budget-free"),
])
def test_an_absolute_said_in_other_words_is_always(item, text, flag):
    assert flag in _flags(item, text)


@pytest.mark.parametrize("item, text", [
    ("srv-07", "A larger token budget per step is better at the expected load, up to the TPOT target."),
    ("perf-03", "No matter how high occupancy is, it is not the goal; more threads are not always faster."),
])
def test_a_bounded_or_denied_absolute_is_not(item, text):
    assert not {"rf-bigger-budget-free", "rf-occupancy-always"} & _flags(item, text)


@pytest.mark.parametrize("text", [
    "More tensor parallelism, I would guess, always gives more throughput per GPU.",
    "I think more tensor parallelism probably always gives more throughput per GPU.",
    "More tensor parallelism always gives more throughput per GPU, I believe.",
    "If I remember correctly, more tensor parallelism always gives more throughput per GPU.",
])
def test_a_hedged_misconception_is_asserted(text):
    assert "rf-tp-always-faster" in _flags("srv-13", text)


def test_i_doubt_denies():
    assert "rf-tp-always-faster" not in _flags("srv-13", "I doubt more tensor parallelism always gives more "
                                                         "throughput per GPU.")


@pytest.mark.parametrize("item, text, flag", [
    # a misconception's words in another order, one of its framing words short: "one scale per tensor
    # is enough" said as "per-tensor scaling is enough"
    ("hop-13", "For FP8 training, per-tensor scaling is enough with delayed scaling.", "rf-per-tensor-enough"),
    ("hop-14", "For NVFP4 and MXFP4 alike, per-tensor scaling is enough.", "rf-per-tensor-enough"),
])
def test_a_misconception_in_another_order_is_read(item, text, flag):
    assert flag in _flags(item, text)


def test_a_reordered_match_must_hold_what_makes_the_claim_wrong():
    """Order-free, the words a misconception shares with the model answer do not state it: "divergence
    is when threads of one warp take different branches" is the truth; "blocks" would make it wrong."""
    assert "rf-divergence-blocks" not in _flags("exec-03", "Divergence is when threads of the same warp take "
                                                           "different branches, and each path runs in turn.")


# --------------------------------------------------------------------------------------------
# Numbers held against the worked answer's (coach.exercises.figures)
# --------------------------------------------------------------------------------------------

def _wrong_numbers(item: str, text: str) -> list[str]:
    return [h.quote for h in load_bank().question(item).grade(text).flags if h.concept.id.startswith("wrong-number")]


@pytest.mark.parametrize("item, text, quote", [
    # off by ten: the worked answer reads 68.7 GB at 4.19 TB/s in 16.4 ms
    ("design-04", "The batch holds 68.7 GB of KV cache; at the measured 4.27 TB/s reading it takes about 1.6 ms.",
     "about 1.6 ms"),
    # a counted thing: a 64 x 256 FP32 accumulator is 128 registers per thread, not 32
    ("hop-05", "The 64 x 256 FP32 accumulator is 64 x 256 / 128 = 32 registers per thread.", "32 registers"),
    # a symbol glued to numbers the worked answer glues too: MFU counts 6ND
    ("train-04", "The recompute is one extra forward, 8ND in all, so I would count 12ND in MFU.", "12nd"),
    # a bare number after a colon takes the counted thing named before it: "Sectors per request, ...: 4 is ideal"
    ("nw-14", "For 32-bit loads the ideal is 32 sectors per request.", "32 sectors"),
    # number words and hyphens read as digits and units: "sixteen KB" would be wrong too
    ("tvc-09", "Per stage (128*64 + 64*128) elements of BF16 make 16 KB.", "16 kb"),
    # the same case as the worked one (128 registers per thread), the wrong result
    ("perf-03", "With 65,536 registers per SM, 128 registers per thread allow 1024 threads.", "1024 threads"),
    ("perf-07", "3 x 4 B x 2^28 is 3.22 GB moved; at the datasheet's 3.35 TB/s the floor is about 9.6 ms.",
     "about 9.6 ms"),
])
def test_a_number_off_by_a_factor_is_a_wrong_claim(item, text, quote):
    g = load_bank().question(item).grade(text)
    assert quote in _wrong_numbers(item, text) and g.verdict == "fail"
    line = next(x for x in g.feedback() if x.startswith("! red flag: a number off by a factor"))
    assert f'"{quote}"' in line and "worked answer has" in line  # names the number said and the right one


@pytest.mark.parametrize("item, text", [
    # the right numbers, rounded or in other units
    ("design-04", "The batch holds 68.7 GB of KV cache; at the measured 4.27 TB/s reading it takes about 16 ms."),
    ("design-04", "Per token it is 128 KiB of K and V, so the batch's 64 GiB take about 16 ms at 4.27 TB/s."),
    ("hb-06", "A100 reads about 2.0 TB/s and H100 3.35 TB/s, so about 1.6x."),  # 2.0 TB/s is the datasheet's 2,039 GB/s
    # a number denied, or only supposed, is not asserted
    ("hop-05", "The 64 x 256 FP32 accumulator is not 32 registers per thread: it takes 128."),
    ("hop-05", "If the accumulator were 64 x 64 it would be 32 registers per thread; 64 x 256 takes 128."),
    # an ordinal is no number of a glued symbol; a product is no ratio
    ("train-04", "Recomputation is a 2nd forward: 8ND in all, while MFU still counts 6ND."),
    ("hop-05", "M is 64 per warpgroup: a 64 x 256 tile of FP32 takes 128 registers per thread."),
    # a number in a context the worked answer has no number for is left alone
    ("design-04", "Our previous model served 12 ms per step, so the budget is tight."),
    # and so is one worked out from numbers the worked answer does not hold: another case
    ("design-04", "At batch 1 the cache is 1.07 GB: 1.07 GB / 4.27 TB/s = 0.26 ms at the measured rate."),
    ("perf-03", "128 registers per thread allow 512 threads, 25%; 64 registers allow 1024 threads, 50%."),
    # a number said as an adjective names a thing, it states no amount: "16-byte vector loads"
    ("perf-02", "Raise bytes in flight: 16-byte vector loads give 32 KB per SM."),
])
def test_a_right_or_unasserted_number_is_not(item, text):
    assert not _wrong_numbers(item, text)


def test_a_count_the_worked_answer_makes_is_a_kind_of_its_own():
    """"two all-reduces" in the worked answer makes all-reduces a counted thing: four is wrong, two right;
    a count in a "when" clause is an illustration ("when two lanes ..."), not a claim."""
    assert _wrong_numbers("dist-05", "The forward of a layer needs four all-reduces, one per matmul.") == [
        "four all-reduces"]
    assert not _wrong_numbers("dist-05", "The forward of a layer needs two all-reduces, one per block, and the "
                                         "backward two more.")
    assert not _wrong_numbers("smem-01", "When two lanes of one warp read different words of one bank, they are "
                                         "served one after another.")


def test_a_scenario_answer_is_held_against_the_exercise():
    """An exercise's reference is its symptom, its best choices with their reasons and its strong lines:
    scenario 07's sines take 1.06 ms at the special-function rate."""
    from coach.exercises.grading import grade
    from coach.exercises.player import build, scenarios
    from coach.scenarios import find

    ex = build(find("scenario-07"), others=scenarios())
    said = "At the special-function rate the sines alone would take {}, so the launch is far from its floor."
    wrong = [h.quote for h in grade(said.format("10.6 ms"), ex.signals, ex.red_flags, reference=ex.reference).flags]
    assert "10.6 ms" in wrong
    assert not [h for h in grade(said.format("1.06 ms"), ex.signals, ex.red_flags, reference=ex.reference).flags
                if h.concept.id.startswith("wrong-number")]


def test_a_ratio_said_as_an_aside_is_about_the_clause_before():
    """"..., about 5x" has no words of its own: it is the ratio of what the clause before names (hb-06's
    worked answer: 2,039 GB/s to 3.35 TB/s, about 1.6x); "twice", "halves" and "0.5x" are ratios too."""
    from coach.exercises.figures import figures

    assert _wrong_numbers("hb-06", "HBM goes from 2,039 GB/s to 3.35 TB/s, about 5x.") == ["about 5x"]
    assert not _wrong_numbers("hb-06", "HBM goes from 2,039 GB/s to 3.35 TB/s, about 1.7x.")
    assert [(f.kind, f.value) for f in figures("FP8 halves the bytes, twice the rate, 0.5x the time.")] == [
        ("ratio", 0.5), ("ratio", 2.0), ("ratio", 2.0)]


def test_a_number_the_question_gives_is_not_wrong():
    """perf-08 gives 264 and 270 tiles; the worked answer's waves are 2 and 3: repeating the question is right."""
    assert not _wrong_numbers("perf-08", "264 tiles fill two waves of 132 SMs, and 270 tiles need three waves.")


# --------------------------------------------------------------------------------------------
# A short misconception in another order; a claim with its reason
# --------------------------------------------------------------------------------------------

def test_a_three_word_misconception_whole_and_close_is_read_in_any_order():
    """"Padding is always the fix" said as "the fix is padding in all cases": every word, next to each other."""
    assert "rf-padding-always" in _flags("smem-04", "For column reads the fix is padding in all cases.")


def test_three_words_apart_or_denied_are_not_the_misconception():
    # "a block can wait for the block before it" is not "waiting blocks are handed out before ..."
    assert "rf-blocks-ordered" not in _flags("stream-07", "Give the small stream a higher priority so its waiting "
                                                          "blocks are handed out before the big kernel's blocks.")
    assert "rf-padding-always" not in _flags("smem-04", "Padding is not always the fix: swizzling keeps alignment.")
    # three words the model answer itself uses ("pin every host buffer" lost its "every" as framing)
    # say nothing in another order: "copies it on the host into a pinned staging buffer"
    assert "rf-pin-everything" not in _flags("stream-09", "From pageable memory the driver copies the data on the "
                                                          "host into a pinned staging buffer first.")


@pytest.mark.parametrize("item, text, flag", [
    # the claim in one clause, the words that make it wrong in its reason
    ("train-07", "Nothing else is needed: upgrading will fix it, since a faster GPU raises MFU directly.",
     "rf-faster-gpu-helps"),
    # ", so it ..." refers back to the claim before (the comma and the "so" are one cut, not an empty claim)
    ("exec-05", "L1 is a separate 256 KB cache next to shared memory, so it costs the L1 nothing.", "rf-l1-separate"),
])
def test_a_claim_and_its_reason_are_one_argument(item, text, flag):
    assert flag in _flags(item, text)


def test_a_denied_reason_denies_the_argument():
    assert "rf-faster-gpu-helps" not in _flags("train-07", "Upgrading will not fix it, since a faster GPU does not "
                                                           "remove the idle gaps.")


def test_reasons_and_consequences_join_their_claim():
    from coach.exercises.grading import _sentences

    (s,) = _sentences("Since blocks are launched in order, block t-1 is running, so it is safe.")
    assert len({w.argument for w in s.words}) == 1
    (s,) = _sentences("Blocks run in any order, and block t-1 may not be running.")
    assert len({w.argument for w in s.words}) == 2


@pytest.mark.parametrize("item, text, flag", [
    # plain words for the thesaurus's terms: a "setting" is a knob, "right away" immediately
    ("hop-04", "The swizzle mode is just a performance setting.", "rf-swizzle-optional"),
    ("hb-08", "After the copy is issued the data is there right away.", "rf-async-no-wait"),
])
def test_plain_words_for_a_misconceptions_terms(item, text, flag):
    assert flag in _flags(item, text)


def test_at_once_is_not_immediately():
    """"more data requested at once" (together) is not "the data is there immediately"."""
    assert "rf-async-no-wait" not in _flags("coal-08", "Each thread keeps more data requested at once, which is what "
                                                       "covers the memory latency.")


@pytest.mark.parametrize("item, text, verdict", [
    # a word said twice counts where it is nearest the rest of the claim: "block" opens the sentence,
    # and the claim ("blocks start in index order, so ... running") comes later
    ("atom-06", "A block may spin on the block before it, because blocks start in index order, so the one before is "
                "always running by then.", "rf-blocks-ordered"),
    ("atom-06", "Blocks are not scheduled in index order, so the block before may never run; take a tile id from an "
                "atomic counter instead.", "not rf-blocks-ordered"),
])
def test_a_misconception_is_read_where_its_words_are_closest(item, text, verdict):
    if verdict.startswith("not "):
        assert verdict[4:] not in _flags(item, text)
    else:
        assert verdict in _flags(item, text)


# --------------------------------------------------------------------------------------------
# Denied requirements
# --------------------------------------------------------------------------------------------

def _contradicted(item: str, text: str) -> list[str]:
    return [h.concept.label for h in load_bank().question(item).grade(text).contradicted]


@pytest.mark.parametrize("item, text, signal", [
    # "no need to" governs its whole clause: "... at the start or before any block exits"
    ("hop-08", "Blocks write each other's bins through map_shared_rank; there is no need to call cluster.sync() at the "
               "start or before any block exits.", "cluster.sync() is needed"),
    # a denied requirement contradicts its signal though another of its terms is only negated, not found
    ("comp-17", "Wrapping it in torch.library is not what avoids the graph break, and you do not need a fake "
                "implementation.", "A custom op needs a fake (meta) implementation"),
])
def test_a_denied_requirement_contradicts_its_signal(item, text, signal):
    assert any(c.startswith(signal) for c in _contradicted(item, text))


@pytest.mark.parametrize("item, text", [
    ("hop-08", "Each block owns a slice of bins in its shared memory and does atomicAdd on the remote bins through "
               "map_shared_rank; cluster.sync() is needed before the first remote access and before any block exits."),
    ("comp-17", "Register it with torch.library and give it a fake implementation so the compiler can propagate shapes; "
                "then it is traced as a single node, without a graph break."),
])
def test_a_requirement_said_is_not_denied(item, text):
    assert not _contradicted(item, text) and load_bank().question(item).grade(text).verdict == "pass"


# --------------------------------------------------------------------------------------------
# Contrary claims: what a half-right answer says instead of a fact, said of the fact's subject
# --------------------------------------------------------------------------------------------

from coach.exercises.grading import Concept, grade  # noqa: E402

_LIMIT = Concept("limit", "past the recompile limit the frame runs eagerly", "It falls back to eager.",
                 ("recompile limit",),
                 contrary=(Concept("rf-limit-contrary-1", "past the limit torch.compile raises an error",
                                   "In fact: it falls back to eager.", ("raises an error", "job dies"),
                                   loose_label=False, anchor=("recompile limit", "cache size limit")),))


def _contrary_flags(text: str) -> list[str]:
    return [h.quote for h in grade(text, [_LIMIT], [], classic=False).flags]


@pytest.mark.parametrize("text", [
    "Once it hits the cache size limit torch.compile raises an error and the job dies.",
    "Past the recompile limit, torch.compile raises an error.",
    # the subject in the sentence before, referred back to
    "There is a recompile limit. Past it torch.compile raises an error.",
    # a hedge still asserts
    "I think once you reach the recompile limit it raises an error.",
])
def test_a_contrary_claim_said_of_the_subject_is_a_red_flag(text):
    assert _contrary_flags(text)


@pytest.mark.parametrize("text", [
    "Past the recompile limit it does not raise an error; it falls back to eager.",
    "Past the recompile limit it runs eagerly rather than raising an error.",
    "People often think the recompile limit raises an error; it doesn't.",
    # another subject: a bad input raises an error, which says nothing of the limit
    "A shape mismatch in the model raises an error.",
    # a contrast is another argument: the limit is named in one, the error in the other
    "The recompile limit makes the frame run eagerly, while a missing kernel raises an error.",
    # no word refers back to the sentence that names the subject
    "There is a recompile limit. A bad input raises an error.",
])
def test_a_contrary_claim_denied_or_of_another_subject_is_not(text):
    assert not _contrary_flags(text)


def test_a_contrary_claim_feedback_names_the_misconception_and_the_fact():
    g = load_bank().question("comp-04").grade(
        "Guards check shapes and a failed guard recompiles; mark_dynamic gives one graph with symbolic sizes. Once it "
        "hits the recompile limit, torch.compile throws an error and the job dies.")
    assert g.verdict == "fail"
    line = next(x for x in g.feedback() if x.startswith("! red flag: Past the recompile limit"))
    assert 'you said "throws an error"' in line and "In fact: Past a recompile limit (8 by default)" in line


def test_a_signals_contrary_claims_are_graded_wherever_the_signal_is():
    """A scenario rubric line mapped to a bank signal grades that signal's contrary claims too."""
    from tests.test_grading_agreement import grade_item

    g = grade_item("scenario-01", "The loads are uncoalesced: ncu shows one sector per request, so switch to a "
                                  "structure of arrays.")
    assert any(h.concept.id == "rf-sectors-per-request-contrary-1" for h in g.flags), [h.concept.id for h in g.flags]


@pytest.mark.parametrize("raw, error", [
    ('[concepts.a.contrary]\nclaim = "x"', "must be a list of tables"),
    ('[[concepts.a.contrary]]\nclaim = "it errors"\nsays = ["crashes"]', "needs two words besides filler words"),
    ('[[concepts.a.contrary]]\nsays = ["raises an error"]', "needs a claim"),
    ('[[concepts.a.contrary]]\nclaim = "it errors"', "needs says"),
    ('[[concepts.a.contrary]]\nclaim = "it errors"\nsays = ["raises an error"]\ncolour = "red"', "must be a table of"),
])
def test_a_malformed_contrary_claim_is_a_one_line_error(tmp_path, raw, error):
    from coach.errors import InputError

    (tmp_path / "t.toml").write_text(
        'topic = "t"\ntitle = "T"\n[concepts.a]\nlabel = "a fact"\nexplain = "why"\nsynonyms = ["the fact"]\n' + raw,
        encoding="utf-8")
    from coach.exercises.bank import load_bank as load

    with pytest.raises(InputError, match=error):
        load(tmp_path)


def test_a_contrary_claim_may_not_be_one_of_its_signals_own_phrases(tmp_path):
    """A right answer says the fact's own phrases too ("MN-major" in "FP8 needs K-major operands, so an
    MN-major B is transposed first"), so such a phrase asserts no misconception: an error at load time,
    also with filler words between."""
    from coach.errors import InputError
    from coach.exercises.bank import load_bank as load

    (tmp_path / "t.toml").write_text(
        'topic = "t"\ntitle = "T"\n[concepts.a]\nlabel = "FP8 needs K-major"\nexplain = "why"\n'
        'synonyms = ["k-major", "mn-major"]\n[[concepts.a.contrary]]\nclaim = "FP8 takes any layout"\n'
        'says = ["any layout", "the mn major"]\n', encoding="utf-8")
    with pytest.raises(InputError, match="says 'the mn major' is one of the signal's own phrases"):
        load(tmp_path)


def test_a_red_flag_cannot_carry_contrary_claims(tmp_path):
    from coach.errors import InputError
    from coach.exercises.bank import load_bank as load

    (tmp_path / "t.toml").write_text(
        'topic = "t"\ntitle = "T"\n[concepts.rf-a]\nlabel = "a myth"\nexplain = "why"\nsynonyms = ["the myth"]\n'
        'example = "the myth"\n[[concepts.rf-a.contrary]]\nclaim = "x"\nsays = ["raises an error"]\n', encoding="utf-8")
    with pytest.raises(InputError, match="belong to a signal"):
        load(tmp_path)


def test_every_contrary_claim_is_said_of_a_subject_with_a_reason():
    bank = load_bank()
    contrary = [x for c in bank.concepts.values() for x in c.contrary]
    assert len(contrary) >= 600
    # every question grades at least one contrary claim of its signals
    assert all(any(c.contrary for c in q.signals) for q in bank.questions)
    assert all(x.anchor and x.explain.startswith("In fact: ") and x.id.startswith("rf-") for x in contrary)


# --------------------------------------------------------------------------------------------
# Bottleneck classes: a scenario answer held against the recorded diagnosis
# --------------------------------------------------------------------------------------------

def _class_flags(item: str, text: str) -> set[str]:
    from tests.test_grading_agreement import grade_item

    return {h.concept.id.removeprefix(f"rf-{item}-class-") for h in grade_item(item, text).flags
            if "-class-" in h.concept.id}


@pytest.mark.parametrize("item, text, flag", [
    # a memory-bound GEMV called compute-bound, and the fix of that class
    ("scenario-12", "The GEMV is compute-bound, so the fix is to use the tensor cores.", "cause-compute"),
    ("scenario-12", "The GEMV is compute-bound, so the fix is to use the tensor cores.", "fix-more-flops"),
    # more occupancy for a launch-bound loop of tiny kernels
    ("scenario-13", "Each kernel is tiny; raise occupancy with larger blocks.", "fix-more-occupancy"),
    # pinned memory for shared-memory bank conflicts
    ("scenario-02", "Pin the host memory so the copies are faster.", "fix-pinned-memory"),
    # a CPU-bound input pipeline called memory-bound on the GPU
    ("scenario-18", "The step is memory-bound on the GPU.", "cause-memory"),
])
def test_a_claim_of_another_bottleneck_class_is_a_red_flag(item, text, flag):
    assert flag in _class_flags(item, text)


@pytest.mark.parametrize("item, text", [
    ("scenario-12", "The GEMV is not compute-bound; tensor cores won't help at batch 1."),
    ("scenario-12", "First check whether it is compute-bound or memory-bound."),
    ("scenario-12", "At one FLOP per byte it is far below what the chip needs to be compute-bound."),
    # the class the scenario records, or one that fits it
    ("scenario-10", "The kernel is compute-bound on the FMA pipe: move the matmul onto the tensor cores."),
    ("scenario-09", "It is latency-bound: raise occupancy or the bytes in flight per thread."),
    ("scenario-13", "The loop is launch-bound: capture the step in a CUDA graph."),
])
def test_a_denied_asked_or_fitting_class_claim_is_not(item, text):
    assert not _class_flags(item, text)


def test_every_class_named_in_the_claims_file_exists_and_every_scenario_has_class_claims():
    from coach.exercises.bottlenecks import _claims
    from coach.exercises.player import scenarios
    from tests.test_grading_agreement import _exercise

    assert {kind for kind, _ in _claims()} == {"cause", "fix"}
    for s in scenarios():  # the performance scenarios: each records its bottleneck class
        ex = _exercise(s.id)
        assert ex.class_flags and all(c.explain and s.bottleneck.value in c.explain for c in ex.class_flags), s.id
