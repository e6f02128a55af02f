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
