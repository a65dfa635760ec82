"""A running simulated lab for the strategy and scenario tests (a test lab on fresh 127.x addresses)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from tests.lab.conftest import FAST, start_lab


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One simulated lab per module: 4 clients, optiplex-004 never wakes."""
    with pytest.MonkeyPatch.context() as mp:
        s = start_lab(
            tmp_path_factory.mktemp("lab"),
            mp,
            clients=4,
            faults="- {kind: client_never_wakes, targets: [optiplex-004]}",
        )
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def session(sim) -> Iterator[LabSession]:
    s = LabSession(load_lab(sim.lab_file), sim.clock, settings=FAST)
    try:
        yield s
    finally:
        s.close()
