"""A running simulated lab for lab-layer and CLI tests (a test lab on fresh 127.x addresses)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.lab.session import DriverSettings, LabSession
from tests.labfiles import make_test_lab

FAST = DriverSettings(
    ssh_connect_timeout_s=3,
    ssh_command_timeout_s=20,
    redfish_timeout_s=1.5,
    vcenter_timeout_s=20,
    storage_timeout_s=5,
    probe_timeout_s=1,
)


def start_lab(base: Path, mp: pytest.MonkeyPatch, *, clients: int = 5, faults: str = "", name: str = "lab"):
    """Start a SimulatedLab (retrying on another random block if this one is taken)."""
    from labctl.sim.endpoint import PortInUseError
    from labctl.sim.simlab import SimulatedLab

    last: Exception | None = None
    for attempt in range(4):
        lab_file = make_test_lab(base, clients, faults=faults, name=f"{name}-{attempt}.yaml")
        sim = SimulatedLab(lab_file, state_dir=base / f"{name}-state-{attempt}", twin="placeholder")
        try:
            sim.start()
        except PortInUseError as exc:
            last = exc
            continue
        mp.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        return sim
    raise AssertionError(f"no free loopback block for a simulated lab: {last}")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One simulated lab per test module: 5 clients, optiplex-003 never wakes, vdi-002's tasks fail."""
    faults = "- {kind: client_never_wakes, targets: [optiplex-003]}\n- {kind: vcenter_task_fails, targets: [vdi-002]}"
    with pytest.MonkeyPatch.context() as mp:
        s = start_lab(tmp_path_factory.mktemp("lab"), mp, faults=faults)
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def session_for(sim) -> Iterator[Callable[..., LabSession]]:
    made: list[LabSession] = []

    def make(settings: DriverSettings = FAST) -> LabSession:
        s = LabSession(load_lab(sim.lab_file), sim.clock, settings=settings)
        made.append(s)
        return s

    try:
        yield make
    finally:
        for s in made:
            s.close()
