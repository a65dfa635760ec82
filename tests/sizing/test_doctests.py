"""Every sizing module's doctest examples run and pass (they are the documentation of each calculator)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import labctl.sizing

MODULES = sorted(m.name for m in pkgutil.iter_modules(labctl.sizing.__path__, "labctl.sizing."))
# the modules that hold a calculator: each must document one with an example that runs
CALCULATOR_MODULES = {f"labctl.sizing.{n}" for n in ("raid", "drives", "capacity", "measured", "network")}


def test_every_calculator_module_is_collected() -> None:
    assert set(MODULES) >= CALCULATOR_MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests_pass(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    if name in CALCULATOR_MODULES:
        assert result.attempted > 0, f"{name} has no doctest example"
