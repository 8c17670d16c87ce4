"""``calculator``: exact arithmetic, which small models get wrong on their own."""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from callgate.tools.registry import Tool, ToolRegistry

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max,
              "log": math.log, "exp": math.exp, "sin": math.sin, "cos": math.cos}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_GROUPING = str.maketrans("{}[]", "()()")


def calculator(expression: str) -> float | int:
    """Exact arithmetic: add, subtract, multiply, divide, percentages, powers and roots.
    The expression has numbers, + - * / // % ^ ** and parentheses, with sqrt, log, exp,
    sin, cos, round, abs, min, max, pi and e."""
    # No sample expression here: small models copied one ("17 * 23") into other tools'
    # arguments (rag_search queries in `callgate eval answers`).
    # Braces and square brackets group like parentheses in written arithmetic ("{17} * 23").
    text = expression.translate(_GROUPING).replace("^", "**").replace("×", "*")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    value = _eval(tree.body)
    # 3.5 * 4.2 is 14.7, not 14.700000000000001: fifteen significant digits (all a float
    # holds exactly) hide the binary rounding without changing a figure the float states.
    return float(f"{value:.15g}") if isinstance(value, float) else value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS and not node.keywords):
        return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
    raise ValueError(f"unsupported in an arithmetic expression: {ast.unparse(node)!r}")


def calculator_tool() -> Tool:
    return ToolRegistry().register(calculator, category="math", source="builtin",
                                   summarizer=lambda name, data: f"[{name}] = {data}")
