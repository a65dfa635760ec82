"""Fixtures: a hub, a simulated lab whose clients sit on three subnets, and its three agents as
real `labctl agent` processes dialling out to the hub as leaf nodes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.agents.nats_server import NatsServer
from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from tests.agents.labs import AgentProcess, running_agents, three_site_lab
from tests.drivers.power_labs import running_sim
from tests.lab.conftest import FAST
from tests.nats_server import nats_hub, shared_nats_hub, start_hub  # noqa: F401  (fixtures)

CLIENTS_PER_SITE = 3


@dataclass
class SiteLab:
    hub: NatsServer
    sim: object  # labctl.sim.simlab.SimulatedLab
    lab_file: Path
    agents: dict[str, AgentProcess]
    sessions: list[LabSession]
    base: Path
    agent_args: tuple[str, ...] = ()

    def restart_agent(self, name: str) -> AgentProcess:
        """Start agent ``name`` again (after a kill), with its journal and state folder."""
        from tests.agents.labs import start_agent

        self.agents[name].stop()
        self.agents[name] = start_agent(
            self.lab_file, name, self.base / "agents", hub=self.hub.leaf_url, extra=self.agent_args
        )
        return self.agents[name]

    def session(self, lab_file: Path | None = None) -> LabSession:
        s = LabSession(load_lab(lab_file or self.lab_file), self.sim.clock, settings=FAST)  # type: ignore[attr-defined]
        self.sessions.append(s)
        return s


@pytest.fixture(scope="module")
def site_lab(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[SiteLab]:
    """Hub, simulated lab (placeholder twin, optiplex-002 never wakes) and three agents, for a module.

    A module may set ``SITE_LAB_EDIT = callable(text) -> text`` to change the lab file,
    ``SITE_LAB_FAULTS`` (a lab.faults entry) and ``SITE_LAB_AGENT_ARGS`` (`labctl agent` options)."""
    base = tmp_path_factory.mktemp("sites")
    hub = start_hub(base / "hub")
    edit: Callable[[str], str] = getattr(request.module, "SITE_LAB_EDIT", lambda t: t)
    faults = getattr(request.module, "SITE_LAB_FAULTS", "")
    agent_args = getattr(request.module, "SITE_LAB_AGENT_ARGS", ())

    def lab_file(attempt: int) -> Path:
        path, _ = three_site_lab(base / f"try-{attempt}", hub.url, clients_per_site=CLIENTS_PER_SITE)
        text = edit(path.read_text())
        if faults:
            text = text.replace("  seed: 2007\n", f"  seed: 2007\n  faults:\n    {faults}\n")
        path.write_text(text)
        return path

    try:
        with running_sim(base, lambda k: lab_file(k)) as sim:
            path = Path(sim.lab_file)  # type: ignore[attr-defined]
            with running_agents(path, base / "agents", hub=hub.leaf_url, extra=agent_args) as agents:
                lab = SiteLab(hub, sim, path, agents, [], base, tuple(agent_args))
                try:
                    yield lab
                finally:
                    for s in lab.sessions:
                        s.close()
    finally:
        hub.stop()
