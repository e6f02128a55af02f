"""The one safe evaluator behind the hardware table's formulas, the scenarios' sizes and the bank's
worked numbers: what it runs, what it refuses, and that the three callers share it."""

from __future__ import annotations

import pytest

from coach import arith, scenarios
from coach.analyze import hardware
from coach.exercises import worked


def _names(table):
    return lambda parts: table[".".join(parts)]


def test_arithmetic_with_names_and_allowed_calls():
    assert arith.evaluate("2 * n * (n - 1) / 4", _names({"n": 8})) == 28
    assert arith.evaluate("-a + +b", _names({"a": 1, "b": 3})) == 2
    assert arith.evaluate("max(a, 3) ** 2 // 4 % 5", _names({"a": 2}), operators=arith.EXTENDED,
                          functions={"max": max}) == 2
    assert arith.evaluate("h200.sm_count * 2", _names({"h200.sm_count": 132}), dotted=True) == 264


@pytest.mark.parametrize("expr, error", [
    ("2 +", arith.NotParsed), ("x * 2", arith.UnknownName), ("1 / 0", arith.DividesByZero),
    ("2 ** 3", arith.NotAllowed),                     # not in BASIC
    ("__import__('os').system('true')", arith.NotAllowed), ("max(1, 2)", arith.NotAllowed),
    ("a.b", arith.NotAllowed),                        # dotted names only where the caller allows them
    ("True + 1", arith.NotAllowed), ("'a' * 3", arith.NotAllowed), ("[1][0]", arith.NotAllowed),
])
def test_refused_expressions_raise_typed_errors(expr, error):
    with pytest.raises(error):
        arith.evaluate(expr, _names({"a": 1}))


def test_the_three_callers_word_their_own_errors():
    assert hardware.evaluate("a * 2 / 4", {"a": 3.0}) == 1.5
    with pytest.raises(ValueError, match="unknown name 'b' in formula"):
        hardware.evaluate("b + 1", {"a": 1.0})
    assert scenarios.evaluate("min(n, 4) * 2", {"n": 3}) == 6
    with pytest.raises(ValueError, match="which is not a named size"):
        scenarios.evaluate("m + 1", {"n": 3})
    with pytest.raises(ValueError, match="divides by zero"):
        scenarios.evaluate("n / 0", {"n": 3})
    value, refs = worked.evaluate("h200.sm_count * 2", {})
    assert value == 2 * hardware.get("h200").value("sm_count") and refs[0].field == "sm_count"
    with pytest.raises(worked.WorkedError, match="unknown name 'k'"):
        worked.evaluate("k + 1", {})
