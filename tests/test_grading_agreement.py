"""The grader against labelled candidate answers: agreement per kind of answer (issue 17).

``tests/data/grading/answers.toml`` was written before the grader was tuned and tuned against;
``heldout.toml`` was written after the grader was finished and never used to tune it;
``heldout3.toml`` was written before the grader's third round of changes, over questions and
scenarios the others do not cover, and scored only before and after that round;
``heldout2.toml`` was written before the grader's second round of changes, over the topics the
other two sets do not cover (compilers, correctness, distributed training, Hopper, Nsight workflow,
serving, Triton vs CUDA), and never used to tune it; ``heldout4.toml`` was written before the
fourth round, over 66 questions and scenarios no other set covers, weighted toward misconceptions,
paraphrases and negations, scored once before that round (its unseen number) and studied in it;
``heldout5.toml`` was written after the fourth round, before any grader output on it was seen, and
scored once as a final unseen check; ``heldout6.toml`` was written after the fifth round (alternative
phrasings for every red flag), before any grader output on it was seen, and scored once: the fifth
round's unseen number; ``heldout7.toml`` was written before the sixth round (claims carried across
clauses, reordered claims, directions and factors, hedges), over 47 questions no other set covers,
weighted toward misconceptions said mid-text, before any grader output on it was seen, and scored
once: the unseen number before that round; ``heldout8.toml`` was written after the sixth round, over 42
questions heldout7 does not cover, before any grader output on it was seen, and scored once: the
sixth round's unseen number; ``heldout9.toml`` was written on 2026-12-04 without reading the grader's code,
over 40 items the other sets use least (the correctness scenarios 21-26 among them), before any grader
output on it was seen, and scored once before the seventh round and once after it. heldout7 and heldout8
were studied in the seventh round (numbers held against the worked answer's, a claim read with its reasons
and consequences, denied requirements over their clause), so neither is unseen any more. The eighth round
(contrary claims: what a half-right answer says instead of a signal's fact, said of the fact's subject,
written for 638 of the bank's 663 signals from what candidates commonly believe; claims of a bottleneck
class other than a scenario's recorded one; the tempting fixes of that class) was built after heldout7
to heldout9 were seen, so none of the three is unseen for it; ``heldout10.toml`` was written on 2026-12-07
without reading the grader's code, over 40 items the other sets use least, before any grader output on it
was seen, and scored once before the eighth round and once after it (the round's unseen number); one false
flag on its strong answers was then looked at and mended, so it is seen for that. All are scored the same way: an ``unsure``
verdict (the grader asks the person to mark themselves) counts as a disagreement, whatever the expected
verdict.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from coach.exercises.bank import load_bank
from coach.exercises.grading import Grade, grade

DATA = Path(__file__).parent / "data" / "grading"
KINDS = ("strong", "paraphrase", "salad", "misconception", "negated")
#: What the issue asks: the share of answers of each kind the grader must agree with.
FLOORS = {"strong": 0.95, "paraphrase": 0.80, "salad": 0.95, "misconception": 0.95, "negated": 0.95}
OVERALL = 0.90
SETS = ("answers.toml", "heldout.toml", "heldout2.toml", "heldout3.toml", "heldout4.toml", "heldout5.toml",
        "heldout6.toml", "heldout7.toml", "heldout8.toml", "heldout9.toml", "heldout10.toml")


@lru_cache(maxsize=None)
def _exercise(scenario_id: str):
    """The exercise ``coach exercise`` builds: a bug hunt for a correctness scenario, else a performance one."""
    from coach import correctness

    if correctness.is_correctness(scenario_id):
        from coach.exercises.correctness import build as build_hunt

        return build_hunt(correctness.find(scenario_id), others=correctness.all_scenarios())
    from coach.exercises.player import build, scenarios
    from coach.scenarios import find

    return build(find(scenario_id), others=scenarios())


def grade_item(item: str, text: str) -> Grade:
    """An answer graded the way ``coach quiz`` (a bank id) or ``coach exercise`` (a scenario id) grades it."""
    if item.startswith("scenario-"):
        ex = _exercise(item)
        return grade(text, ex.signals, ex.red_flags, reference=ex.reference)
    return load_bank().question(item).grade(text)


def load(name: str) -> list[dict]:
    return tomllib.loads((DATA / name).read_text(encoding="utf-8"))["answers"]


def agreement(answers: list[dict]) -> tuple[dict[str, tuple[int, int]], list[tuple[dict, str]]]:
    """Per kind (and "overall"): (agreeing, total); and the answers the grader disagrees with."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong = []
    for a in answers:
        verdict = grade_item(a["item"], a["text"]).verdict
        ok = verdict == a["expect"]
        for key in (a["kind"], "overall"):
            counts[key][0] += ok
            counts[key][1] += 1
        if not ok:
            wrong.append((a, verdict))
    return {k: (v[0], v[1]) for k, v in counts.items()}, wrong


def report(name: str) -> str:
    counts, wrong = agreement(load(name))
    lines = [f"{name}:"] + [f"  {k:13} {counts[k][0]:3}/{counts[k][1]:3} = {counts[k][0] / counts[k][1]:.0%}"
                            for k in (*KINDS, "overall") if k in counts]
    lines += [f"  disagrees: {a['item']} {a['kind']} expected {a['expect']}, got {v}: {a['text'][:70]!r}"
              for a, v in wrong]
    return "\n".join(lines)


ISSUE_EXAMPLES = [  # issue 17's own examples, each with the verdict a careful grader gives
    ("stream-04", "launch overhead capture replay static shapes cudagraphexecupdate", "fail"),
    ("perf-02", "little's law ilp float4 occupancy is not the goal", "fail"),
    ("scenario-12", "a GPU with twice the FLOP rate will double decode speed ... the ridge point and decode floor are "
                    "not relevant", "fail"),
    ("perf-03", "Raise occupancy to 100%, more threads are always faster.", "fail"),
    ("hb-03", "Cast to FP8 directly without any scale, the tensor cores are twice as fast.", "fail"),
]


@pytest.mark.parametrize("item, text, verdict", ISSUE_EXAMPLES)
def test_the_issues_examples(item, text, verdict):
    assert grade_item(item, text).verdict == verdict


def test_attention_is_irrelevant_contradicts_the_attention_signal():
    g = grade_item("train-01", "6ND: 2ND forward and 4ND backward. Attention is irrelevant.")
    assert "attention-term" in {h.concept.id for h in g.contradicted} and g.verdict == "fail"


def test_numbers_in_a_scenario_line_are_parsed():
    """'265 blocks on 132 SMs' states the launch statistics line's 265 blocks (issue 17)."""
    g = grade_item("scenario-07", "The launch has 265 blocks on 132 SMs, 2 per SM: one wave plus a lone block.")
    assert any(h.concept.id == "scenario-07-strong-1" for h in g.found)


def test_every_scenario_red_flag_is_graded():
    """Every red flag of every scenario is a claim mapped to the bank's misconceptions, with a reason."""
    from coach.exercises.player import scenarios

    unmapped = [(s.id, r.text) for s in scenarios() for r in _exercise(s.id).rubric_flags
                if r.how != "mapped" or r.concept is None or not r.concept.explain]
    assert not unmapped, unmapped


def test_every_question_red_flag_is_a_bank_misconception():
    bank = load_bank()
    for q in bank.questions:
        assert q.red_flags and all(c.id in bank.examples and c.explain for c in q.red_flags), q.id


@pytest.mark.parametrize("item, text, flag", [
    ("scenario-03", "ptxas reports no spills, so local memory is not involved; lower -maxrregcount to fix the spills.",
     "rf-no-spills-no-local"),
    ("scenario-07", "Launch the 265th integral separately so the rest finish in one wave.", "rf-tail-block-separately"),
    ("scenario-14", "Replace loss.item() with print(loss): print does not synchronise.", "rf-print-no-sync"),
])
def test_a_scenario_misconception_is_named_in_the_feedback(item, text, flag):
    g = grade_item(item, text)

    def ids(c):
        return {c.id} | set().union(*(ids(p) for p in c.parts)) if c.parts else {c.id}

    assert g.verdict == "fail"
    hit = next(h for h in g.flags if flag in ids(h.concept))
    line = next(x for x in g.feedback() if x.startswith(f"! red flag: {hit.concept.label.rstrip('.')}"))
    assert len(line.split(f'"{hit.quote}".', 1)[1].strip()) > 20, line  # the misconception, quoted, and why


def test_every_red_flag_has_alternative_phrasings():
    """Every red flag of the bank (so every question's and scenario's, and every classic one) says its
    wrong claim in two to four other ways (``also``), matched like its paraphrases."""
    import glob

    from coach.exercises.bank import BANK_DIR

    short = []
    for f in sorted(glob.glob(str(BANK_DIR / "*.toml"))):
        for cid, raw in tomllib.loads(Path(f).read_text(encoding="utf-8")).get("concepts", {}).items():
            if cid.startswith("rf-") and not 2 <= len(raw.get("also", [])) <= 4:
                short.append(cid)
    assert not short, short
    bank = load_bank()
    c = bank.concept("rf-fix-top-stall")
    assert all(a in c.paraphrases for a in tomllib.loads((BANK_DIR / "nsight-workflow.toml").read_text(
        encoding="utf-8"))["concepts"]["rf-fix-top-stall"]["also"])


#: Sets whose strong answers still trip a red flag, each with what it trips: scored, not yet fixed.
UNSEEN_FALSE_FLAGS = {
    "heldout9.toml": "scenario-19's strong answer names elementwise_kernel as the short name of the copy kernels "
                     "and trips scenario-19-flag-1",
    "heldout10.toml": "two paraphrases trip a red flag: scenario-08's 'wide loads' (scenario-08-flag-2) and hb-04's "
                      "'four-byte' (wrong-number-1)",
}


def _strong_answers(sets=None) -> list[tuple[str, str, str]]:
    """The strong and paraphrased answers of ``sets`` (with the bank's model answers when None: every set but
    those in UNSEEN_FALSE_FLAGS)."""
    out = [(q.id, "model answer", q.answer) for q in load_bank().questions] if sets is None else []
    for name in sets or [n for n in SETS if n not in UNSEEN_FALSE_FLAGS]:
        if (DATA / name).is_file():
            out += [(a["item"], f"{name} {a['kind']}", a["text"]) for a in load(name)
                    if a["kind"] in ("strong", "paraphrase")]
    return out


def _flags_fired(answers) -> list[tuple[str, str, str, str]]:
    """(item, where, red flag, quote) for every red flag the grader reads in ``answers``."""
    return [(item, where, h.concept.id, h.quote) for item, where, text in answers for h in grade_item(item, text).flags]


def test_no_red_flag_fires_on_a_strong_answer():
    """No red flag, no alternative phrasing of one and no classic misconception is read in the bank's
    model answers or in any set's strong and paraphrased answers: each alternative was checked so."""
    fired = _flags_fired(_strong_answers())
    assert not fired, fired


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=why, strict=True))
                                  for n, why in UNSEEN_FALSE_FLAGS.items()])
def test_no_red_flag_fires_on_an_unseen_strong_answer(name):
    fired = _flags_fired(_strong_answers([name]))
    assert not fired, fired


@pytest.mark.parametrize("item, text, verdict", [
    # a supposition asserts nothing: "it would be", "what if", "if we had"
    ("inf-02", "Per token 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 320 KiB; the cache grows with batch x "
               "context. With all 64 heads it would be 8x that, which is why GQA matters.", "not rf-query-heads-kv"),
    ("inf-02", "Size the KV cache with all 64 heads: 2 x 80 layers x 64 heads x 128 x 2 bytes per token.",
     "rf-query-heads-kv"),
    # a count is not "every call": "after 8 recompiles it gives up" is not "recompiles every call"
    ("comp-04", "Guards check the input shapes; a failed guard recompiles. After 8 recompiles of the same function "
                "it gives up and runs it eagerly.", "not rf-compile-every-call"),
    ("comp-04", "torch.compile recompiles the model on every call, which is why the first steps are slow.",
     "rf-compile-every-call"),
    # a possessive is its noun
    ("prof-08", "An op's CPU time is how long it ran on the GPU.", "rf-cpu-time-is-gpu"),
    # "whatever X, Y" is one claim, as "if X, Y" is
    ("nw-06", "Whatever stall dominates, fix that first.", "rf-fix-top-stall"),
    # "anything" is "any"
    ("nw-08", "Kernel replay works for anything, so use it on the NCCL kernels too.", "rf-replay-any-kernel"),
    # a claim said of only a few is not the general claim
    ("atom-07", "Reduce in shared memory first so there are only a few thousand atomics on the address, which is "
                "cheap.", "not rf-atomics-free"),
])
def test_general_reading_of_red_flags(item, text, verdict):
    ids = {i for h in grade_item(item, text).flags for i in _flag_ids(h.concept)}
    if verdict.startswith("not "):
        assert verdict[4:] not in ids, ids
    else:
        assert verdict in ids, ids


def _flag_ids(c) -> set[str]:
    return {c.id}.union(*(_flag_ids(p) for p in c.parts)) if c.parts else {c.id}


def test_the_sets_are_well_formed():
    for name in SETS:
        if not (DATA / name).is_file():
            continue
        bank = load_bank()
        for a in load(name):
            assert a["kind"] in KINDS and a["expect"] in ("pass", "fail"), a
            assert a["expect"] == ("pass" if a["kind"] in ("strong", "paraphrase") else "fail"), a
            if not a["item"].startswith("scenario-"):
                bank.question(a["item"])


@pytest.mark.parametrize("name", [
    # Each set's comment comes before it. Measured before and after the sixth round (claims that refer
    # back, absolutes in other words, hedges, misconceptions in any order): answers.toml and
    # heldout.toml to heldout5.toml unchanged but for heldout.toml's misconceptions, 29/30 before,
    # 30/30 after; heldout6.toml and heldout7.toml as noted with them. Measured before and after the
    # seventh round (a number off by a factor from the worked answer's for the same quantity, a claim
    # with its reasons as one argument, short misconceptions in any order, denied requirements over
    # their clause, a few plain words): answers.toml to heldout6.toml unchanged in every kind;
    # heldout7.toml and heldout8.toml as noted with them. Measured before and after the eighth round
    # (contrary claims anchored to a fact's subject, bottleneck-class claims, tempting fixes):
    # answers.toml, heldout.toml and heldout2.toml unchanged in every kind; the others as noted with them.
    "answers.toml",
    # When the grader was first finished: strong 97%, paraphrase 63%, salad 97%, misconception 93%,
    # negated 100%, overall 90%. After plain-language paraphrases for every bank concept: strong 97%,
    # paraphrase 77%, salad 97%, misconception 93%, negated 100%, overall 93%. After the third round
    # (looser plain-word matching, denials that outweigh overlapping matches, compounds as one word,
    # the thesaurus's new GPU words): strong 97%, paraphrase 87%, salad 97%, misconception 97%,
    # negated 97%, overall 95%. After the fourth: salad 100%, overall 95%, the rest unchanged.
    "heldout.toml",
    # When the set was written, before the grader's second round: strong 100%, paraphrase 32%, salad
    # 100%, misconception 100%, negated 88%, overall 84%. After it: strong 100%, paraphrase 60%, salad
    # 100%, misconception 100%, negated 96%, overall 91%. After the third: strong 100%, paraphrase 92%,
    # salad 100%, misconception 100%, negated 96%, overall 98%. After the fourth: negated 100%,
    # overall 98%, the rest unchanged.
    "heldout2.toml",
    # When the set was written, before the grader's third round: strong 95%, paraphrase 77%, salad
    # 100%, misconception 86%, negated 90%, overall 90%. After it (scored once): strong 95%,
    # paraphrase 82%, salad 100%, misconception 86%, negated 95%, overall 92%. After the fourth
    # (studied in it): strong 95%, paraphrase 82%, salad 100%, misconception 95%, negated 95%,
    # overall 93%. After the eighth: negated 100% (21/21), overall 96%, the rest unchanged.
    "heldout3.toml",
    # When the set was written, before the grader's fourth round (the unseen number): strong 85%,
    # paraphrase 97%, salad 100%, misconception 74%, negated 90%, overall 87%. After it (misconceptions
    # named to be rejected, denied requirements, claims over clauses, the classic misconceptions
    # graded everywhere, order-free whole claims): strong 95%, paraphrase 97%, salad 100%,
    # misconception 89%, negated 100%, overall 95%. After the fifth (alternative phrasings for every
    # red flag, suppositions and counts, 'whatever X, Y' as one claim): strong 100%, misconception
    # 92%, overall 97%, the rest unchanged. After the eighth: misconception 100% (38/38), overall 100%,
    # the rest unchanged; two of those (CUDA-graph outputs kept as "ordinary tensors", FSDP's traffic "the
    # same as DDP") are caught by contrary phrasings added after reading them.
    "heldout4.toml",
    # Written after the fourth round and scored once, never used to tune: strong 100%, paraphrase
    # 93%, salad 100%, misconception 80%, negated 100%, overall 92%. After the fifth round (its misses
    # named in the brief of that round, not studied): misconception 90%, overall 95%, the rest unchanged.
    # After the eighth: misconception 95% (19/20), overall 97%, the rest unchanged: every floor met.
    "heldout5.toml",
    # Written after the fifth round and scored once, never used to tune: strong 100%, paraphrase
    # 100%, salad 100%, misconception 80%, negated 100%, overall 91%. After the sixth round (claims
    # that refer back, TMEM as tensor memory): misconception 83%, overall 92%, the rest unchanged. After
    # the eighth: misconception 93% (28/30), overall 97%, the rest unchanged.
    pytest.param("heldout6.toml", marks=pytest.mark.xfail(
        reason="misconceptions caught 28/30 = 93% (< 95%): 'FMA counting two' said with the wrong FLOP "
               "counters, and ncu's full set on every kernel said as 'for ncu ...'", strict=True)),
    # Written before the sixth round and scored once (the unseen number): strong 100%, paraphrase
    # 100%, salad 100%, misconception 52% (32/61), negated 86% (12/14), overall 69%. After the sixth
    # round (studied in it: claims that refer back, absolutes in other words, hedges, misconceptions
    # in any order holding what makes them wrong): misconception 56% (34/61), overall 71%, the rest
    # unchanged. After the seventh round (studied in it, so seen): misconception 62% (38/61), negated
    # 100% (14/14), overall 77%, the rest unchanged. After the eighth: misconception 72% (44/61),
    # overall 83%, the rest unchanged.
    pytest.param("heldout7.toml", marks=pytest.mark.xfail(
        reason="misconceptions caught 44/61 = 72% (< 95%): wrong claims in words no red flag and no contrary "
               "claim uses, said through another subject ('the global rank is the GPU to use')",
               strict=True)),
    # Written after the sixth round and scored once, never used to tune (its unseen number): strong
    # 100%, paraphrase 100%, salad 100%, misconception 53% (24/45), negated 100%, overall 65%. After
    # the seventh round (studied in it, so seen): misconception 73% (33/45), overall 80%, the rest
    # unchanged. Measured again before the eighth round: misconception 71% (32/45), overall 78%. After
    # it: misconception 84% (38/45), overall 88%, the rest unchanged.
    pytest.param("heldout8.toml", marks=pytest.mark.xfail(
        reason="misconceptions caught 38/45 = 84% (< 95%): wrong claims in words no red flag and no contrary "
               "claim uses ('to be safe, call cudaDeviceSynchronize', a wrong number of waves)", strict=True)),
    # Written after the sixth round, blind to the grader's code, and scored once before the seventh round
    # (its unseen number): strong 93% (14/15), paraphrase 80% (12/15), salad 100%, misconception 22%
    # (8/36), negated 88% (7/8), overall 59% (48/81). Scored once more after the seventh round, which did not
    # study it (the round's unseen number): misconception 28% (10/36), overall 62% (50/81), the rest unchanged.
    # After the eighth round (seen in it: its misses named the kinds of wrong claim to cover): misconception
    # 50% (18/36), negated 100% (8/8), overall 73% (59/81), the rest unchanged.
    pytest.param("heldout9.toml", marks=pytest.mark.xfail(
        reason="misconceptions caught 18/36 = 50% (< 95%): a wrong claim among right ones in words no red "
               "flag and no contrary claim uses (a sibling API as the fix, a factor wrong, the wrong tool's "
               "verdict)", strict=True)),
    # heldout10.toml, unseen before the eighth round: strong 100% (16/16), paraphrase 81% (13/16), salad 100%
    # (6/6), misconception 29% (10/34), negated 75% (6/8), overall 64% (51/80). After it, still unseen (the
    # round's unseen number): misconception 47% (16/34), strong 94% (15/16: a contrary claim said by one of
    # the fact's own synonyms, 'mn-major', fired on hop-06's), overall 70% (56/80), the rest unchanged. Then
    # a contrary claim may no longer be one of its signal's synonyms (13 such phrases dropped; no other set
    # moved in any kind): strong 100% (16/16), overall 71% (57/80).
    pytest.param("heldout10.toml", marks=pytest.mark.xfail(
        reason="misconceptions caught 16/34 = 47% (< 95%) on unseen answers: wrong claims in words no red flag "
               "and no contrary claim uses", strict=True)),
])
def test_agreement_with_labelled_answers(name):
    if not (DATA / name).is_file():
        pytest.skip(f"no {name}")
    counts, _ = agreement(load(name))
    text = report(name)
    overall = counts["overall"][0] / counts["overall"][1]
    assert overall >= OVERALL, text
    for kind, floor in FLOORS.items():
        if kind in counts:
            assert counts[kind][0] / counts[kind][1] >= floor, text


if __name__ == "__main__":  # python -m tests.test_grading_agreement: the numbers, and every disagreement
    for n in SETS:
        if (DATA / n).is_file():
            print(report(n))
