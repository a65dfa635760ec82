"""Test labs for the power backends: one whose infra-01 is powered over IPMI (``power: ipmi``),
its simulated BMC in a process of its own, and a whole simulated lab started from any lab file."""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.labfiles import make_test_lab

IPMI_PORT = 40623  # an unprivileged port on the test lab's own loopback address (real BMCs: 623)


def ipmi_lab_file(tmp_path: Path, *, clients: int = 2, name: str = "ipmi-lab.yaml", **kw: object) -> Path:
    """make_test_lab, with infra-01 given ``power: ipmi`` and an ``ipmi:`` endpoint on its BMC address."""
    path = make_test_lab(tmp_path, clients, name=name, **kw)  # type: ignore[arg-type]
    text = path.read_text()
    m = re.search(r'    bmc: \{url: "https://(127\.\d+\.2\.13):8443"', text)
    assert m, "infra-01's BMC line moved in sim-2007.yaml"
    host = m.group(1)
    text = text.replace(
        m.group(0),
        f'    power: ipmi\n    ipmi: {{host: {host}, port: {IPMI_PORT}, user: root, password: "secret:sim.bmc_password"}}\n'
        + m.group(0),
    )
    path.write_text(text)
    return path


def _serve_bmc(lab_file: str, state_dir: str, ready: Any, stop: Any) -> None:
    """The child process of :func:`bmc`: infra-01's simulated BMC until ``stop`` is set."""
    from labctl.clock import LabClock
    from labctl.inventory import load_lab
    from labctl.sim.endpoint import SimContext
    from labctl.sim.faults import FaultBook
    from labctl.sim.ipmi import build_endpoints
    from labctl.sim.twin.placeholder import PlaceholderTwin
    from tests.drivers.simparts import SECRETS

    lab = load_lab(Path(lab_file), every_machine=True)
    clock = LabClock(scale=lab.time_scale)
    twin = PlaceholderTwin(lab, clock)
    (ep,) = build_endpoints(SimContext(lab, twin, FaultBook((), clock), clock, Path(state_dir), SECRETS))
    ep.start()
    ready.set()
    try:
        stop.wait(600)
    finally:
        ep.stop()


@contextmanager
def bmc(tmp_path: Path) -> Iterator[object]:
    """infra-01's simulated BMC, started in a process of its own (as the simulator runs it); yields
    the lab. pyghmi keeps its sockets, sessions and I/O thread in process-wide state: a BMC server
    in the test process shares it with the client under test, and a login that hung there left
    every later IPMI login in the process waiting."""
    from labctl.inventory import load_lab

    lab_file = ipmi_lab_file(tmp_path)
    lab = load_lab(lab_file, every_machine=True)
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    child = ctx.Process(
        target=_serve_bmc, args=(str(lab_file), str(tmp_path / "sim"), ready, stop), daemon=True
    )
    child.start()
    try:
        if not ready.wait(60):
            pytest.fail("the simulated BMC did not start within 60 s")
        yield lab
    finally:
        stop.set()
        child.join(10)
        if child.is_alive():
            child.kill()
            child.join(5)


@contextmanager
def running_sim(base: Path, lab_file: Callable[[int], Path]) -> Iterator[object]:
    """A SimulatedLab (placeholder twin) of ``lab_file(attempt)``, its secrets in the environment;
    another random loopback block is tried if this one is taken."""
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.sim.endpoint import PortInUseError
    from labctl.sim.simlab import SimulatedLab

    with pytest.MonkeyPatch.context() as mp:
        for attempt in range(4):
            sim = SimulatedLab(lab_file(attempt), state_dir=base / f"state-{attempt}", twin="placeholder")
            try:
                sim.start()
            except PortInUseError:
                continue
            mp.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
            try:
                yield sim
            finally:
                sim.stop()
            return
        pytest.fail("no free loopback block for a simulated lab")
