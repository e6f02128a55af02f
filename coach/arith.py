"""Safe arithmetic over named values: the one evaluator behind the hardware table's derived values
(``coach.analyze.hardware``), a scenario's sizes and models (``coach.scenarios``) and the worked
numbers of the question bank (``coach.exercises.worked``).

Only numbers, names (plain or dotted, resolved by the caller), the operators the caller allows,
unary minus/plus and the calls the caller allows are evaluated; no other Python runs. Errors are
typed so that each caller words them for its own file format:

    value = evaluate("2 * n * n", lambda parts: sizes[parts[0]], operators=BASIC)
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: + - * / : what the hardware table's formulas may use.
BASIC: Mapping[type, Callable[[Any, Any], Any]] = {ast.Add: operator.add, ast.Sub: operator.sub,
                                                  ast.Mult: operator.mul, ast.Div: operator.truediv}
#: BASIC with // % **.
EXTENDED: Mapping[type, Callable[[Any, Any], Any]] = {**BASIC, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
                                                     ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class ArithError(ValueError):
    """The expression is not one ``evaluate`` runs."""


class NotParsed(ArithError):
    """Not an expression at all (``detail``: the parser's message)."""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(detail)


class UnknownName(ArithError):
    """A name the resolver does not know (``parts``: the name, dotted parts split)."""

    def __init__(self, parts: Sequence[str]):
        self.parts = tuple(parts)
        super().__init__(".".join(self.parts))


class NotAllowed(ArithError):
    """A construct outside the allowed arithmetic."""


class DividesByZero(ArithError):
    """A division or modulo by zero."""


def evaluate(expression: str, resolve: Callable[[tuple[str, ...]], float], *,
             operators: Mapping[type, Callable[[Any, Any], Any]] = BASIC,
             functions: Mapping[str, Callable[..., Any]] | None = None, dotted: bool = False) -> float:
    """The value of ``expression``. ``resolve`` maps a name's parts (("n",), or ("h200", "sm_count")
    where ``dotted``) to its value and raises ``KeyError`` (or ``UnknownName``) for one it does not
    know; it may raise its own errors too, which pass through."""
    functions = functions or {}
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as err:
        raise NotParsed(err.msg) from None

    def chain(node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            return [node.id]
        if dotted and isinstance(node, ast.Attribute) and (head := chain(node.value)) is not None:
            return [*head, node.attr]
        return None

    def name(parts: list[str]) -> float:
        try:
            return resolve(tuple(parts))
        except KeyError:
            raise UnknownName(parts) from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)) and (parts := chain(node)) is not None:
            return name(parts)
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            left, right = ev(node.left), ev(node.right)
            try:
                return operators[type(node.op)](left, right)
            except ZeroDivisionError:
                raise DividesByZero(expression) from None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
                and node.args and not node.keywords):
            return functions[node.func.id](*(ev(a) for a in node.args))
        raise NotAllowed(expression)

    return ev(tree)
