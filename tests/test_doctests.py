"""Every docstring example in labctl runs: a module with ``>>>`` lines is doctested here, so an
example that drifts from the code fails the suite instead of misleading a reader."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "labctl"
WITH_EXAMPLES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
    for p in PACKAGE.rglob("*.py")
    if ">>> " in p.read_text(encoding="utf-8")
)


def test_the_package_has_examples_to_run() -> None:
    assert WITH_EXAMPLES, "no docstring examples found: the discovery above is broken"


@pytest.mark.parametrize("module", WITH_EXAMPLES)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(
        importlib.import_module(module),
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        report=True,
    )
    assert result.attempted > 0
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples in {module} failed (printed above)"
    )
