"""labctl's pytest plugin (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labctl", "labctl lab orchestration")
    group.addoption(
        "--lab", action="store", default=None, help="inventory file (default: hardware/sim-2007.yaml)"
    )
    group.addoption(
        "--lab-config", action="store", default=None, help="lab configuration, e.g. standalone or ha"
    )
    group.addoption(
        "--results-dir", action="store", default=None, help="where run folders go (default: results/)"
    )
