"""A tiny, safe evaluator for the limits in criteria files: ``2 * spindles(write_cache_volume)``.

Arithmetic (``+ - * / // %``, unary minus, parentheses, ``**`` with small exponents), numbers,
strings, named variables and calls of named functions, all handed in by the caller. Nothing else:
no attributes, subscripts, comprehensions, lambdas or keyword arguments. The text is parsed with
:mod:`ast` and walked node by node; it is never passed to ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

Value = float | int | str
Functions = Mapping[str, Callable[..., Any]]

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
BUILTINS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs, "round": round}
MAX_LENGTH = 500


class ExpressionError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def evaluate(
    text: str | float | int,
    variables: Mapping[str, Value] | None = None,
    functions: Functions | None = None,
) -> float:
    """The numeric value of ``text``. Numbers pass through."""
    if isinstance(text, bool):
        raise ExpressionError("a limit must be a number or an expression, not true/false")
    if isinstance(text, int | float):
        return float(text)
    v = evaluate_value(text, variables, functions)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ExpressionError(f"{text!r} is not a number (it is {v!r})")
    if not math.isfinite(v):
        raise ExpressionError(f"{text!r} is not a finite number")
    return float(v)


def evaluate_value(
    text: str,
    variables: Mapping[str, Value] | None = None,
    functions: Functions | None = None,
) -> Value:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r}: syntax error ({exc.msg})") from None
    names = dict(variables or {})
    funcs = {**BUILTINS, **(functions or {})}
    return _Eval(text, names, funcs).visit(tree.body)


def names_in(text: str) -> set[str]:
    """The variable and function names an expression uses (for error messages and checks)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


class _Eval:
    def __init__(self, text: str, names: dict[str, Value], funcs: dict[str, Callable[..., Any]]):
        self.text = text
        self.names = names
        self.funcs = funcs

    def fail(self, why: str) -> ExpressionError:
        return ExpressionError(f"{self.text!r}: {why}")

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float | str):
                raise self.fail(f"constant {node.value!r} is not allowed")
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            known = ", ".join(sorted(self.names)) or "none"
            raise self.fail(f"unknown name {node.id!r} (known: {known})")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = self.visit(node.operand)
            self._number(v)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self.visit(node.left), self.visit(node.right)
            self._number(a)
            self._number(b)
            if isinstance(node.op, ast.Pow) and abs(b) > 16:
                raise self.fail("exponent too large")
            try:
                return _BINOPS[type(node.op)](a, b)
            except ZeroDivisionError:
                raise self.fail("division by zero") from None
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.fail("only named functions can be called")
            if node.keywords:
                raise self.fail("keyword arguments are not allowed")
            fn = self.funcs.get(node.func.id)
            if fn is None:
                known = ", ".join(sorted(self.funcs))
                raise self.fail(f"unknown function {node.func.id!r} (known: {known})")
            args = [self.visit(a) for a in node.args]
            try:
                return fn(*args)
            except ExpressionError:
                raise
            except Exception as exc:
                raise self.fail(f"{node.func.id}(): {exc}") from None
        raise self.fail(f"{type(node).__name__} is not allowed in a limit")

    def _number(self, v: Any) -> None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(f"{v!r} is not a number")
