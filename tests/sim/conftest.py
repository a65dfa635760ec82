"""Fixtures that start a whole simulated lab (simulator process + vCenter) on a test lab.

- ``start_sim(clients=5, faults="", time_scale=60, sim_faults=(), ...)``: a factory; every lab it
  starts is stopped at teardown, even when the test fails. It points ``$LABCTL_SECRETS_FILE`` at
  the lab's generated credentials, so ``resolve_credential`` finds what the endpoints accept.
- ``sim_lab``: one started lab with the defaults, per test.
- ``shared_sim_lab``: one lab for a whole test module (read-only tests: don't change its power
  states or faults in a way another test would notice).

Each lab is a copy of hardware/sim-2007.yaml on fresh random 127.x addresses (tests/labfiles.py),
with its own state folder under tmp, so tests never touch a developer's `labctl sim up`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.inventory.faults import FaultSpec
from labctl.sim.simlab import SimulatedLab
from tests.labfiles import make_test_lab

StartSim = Callable[..., SimulatedLab]


class _Starter:
    def __init__(self, base: Path, mp: pytest.MonkeyPatch):
        self.base = base
        self.mp = mp
        self.started: list[SimulatedLab] = []

    def __call__(
        self,
        clients: int = 5,
        *,
        faults: str = "",
        time_scale: float = 60.0,
        sim_faults: Iterable[FaultSpec | str] = (),
        configuration: str | None = None,
        twin: str = "auto",
        lab_file: Path | None = None,
        extra_lab_yaml: str = "",
    ) -> SimulatedLab:
        n = len(self.started)
        if lab_file is None:
            lab_file = make_test_lab(
                self.base,
                clients,
                time_scale=time_scale,
                faults=faults,
                extra_lab_yaml=extra_lab_yaml,
                name=f"sim-lab-{n}.yaml",
            )
        sim = SimulatedLab(
            lab_file, configuration, sim_faults, state_dir=self.base / f"sim-state-{n}", twin=twin
        )
        self.started.append(sim)
        sim.start()
        self.mp.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        return sim

    def stop_all(self) -> None:
        errors = []
        for sim in reversed(self.started):
            try:
                sim.stop()
            except Exception as exc:  # stop the others anyway
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture
def start_sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StartSim]:
    starter = _Starter(tmp_path, monkeypatch)
    try:
        yield starter
    finally:
        starter.stop_all()


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    """A state folder; whatever runs for it at teardown is stopped by pid (from the state file)."""
    from labctl.sim.simlab import leftover_processes
    from labctl.sim.state import ProcessRecord, read_state, stop_processes

    sd = tmp_path / "state"
    try:
        yield sd
    finally:
        state = read_state(sd)
        if state is not None:
            stop_processes(state.processes)
        for pid in leftover_processes(sd):  # a failed test must not leave a simulator running
            stop_processes([ProcessRecord("leftover", pid, str(sd))])


@pytest.fixture
def sim_lab(start_sim: StartSim) -> SimulatedLab:
    return start_sim()


@pytest.fixture(scope="module")
def shared_sim_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedLab]:
    with pytest.MonkeyPatch.context() as mp:
        starter = _Starter(tmp_path_factory.mktemp("shared-sim"), mp)
        try:
            yield starter()
        finally:
            starter.stop_all()
