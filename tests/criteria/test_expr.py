"""The limit evaluator: arithmetic over named values, and nothing else."""

from __future__ import annotations

import pytest

from labctl.criteria.expr import ExpressionError, evaluate, names_in


def test_arithmetic_and_names() -> None:
    v: dict[str, float | int | str] = {"spindles_wc": 4, "ram_mb": 4096.0, "vol": "pvs-01:cache"}
    f = {"spindles": lambda ref: {"pvs-01:cache": 4, "nas-01:data": 8}[ref]}
    assert evaluate("2 * spindles(vol)", v, f) == 8
    assert evaluate("2*spindles('nas-01:data')", v, f) == 16
    assert evaluate("0.8 * ram_mb", v) == pytest.approx(3276.8)
    assert evaluate("-(1 + 2) ** 2 + 7 // 2 + 7 % 4", v) == -9 + 3 + 3
    assert evaluate("max(1, spindles_wc) / 2", v) == 2
    assert evaluate(42) == 42.0
    assert names_in("2 * spindles(vol) + x") == {"spindles", "vol", "x"}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("max.__call__(1)", "only named functions"),
        ("().__class__", "Attribute is not allowed"),
        ("[1][0]", "is not allowed"),
        ("x", "unknown name 'x'"),
        ("'a' * 3", "is not a number"),
        ("1 / 0", "division by zero"),
        ("2 ** 1000", "exponent too large"),
        ("lambda: 1", "Lambda is not allowed"),
        ("max(1, key=2)", "keyword arguments"),
        ("1 +", "syntax error"),
        ("True", "constant True is not allowed"),
        ("spindles('nope')", "spindles(): 'nope'"),
    ],
)
def test_rejects(text: str, why: str) -> None:
    f = {"spindles": lambda ref: {"a": 4}[ref]}
    with pytest.raises(ExpressionError) as exc:
        evaluate(text, {}, f)
    assert why in str(exc.value)


def test_result_must_be_a_number() -> None:
    with pytest.raises(ExpressionError, match="not a number"):
        evaluate("vol", {"vol": "pvs-01:cache"})
    with pytest.raises(ExpressionError, match="true/false"):
        evaluate(True)  # type: ignore[arg-type]
