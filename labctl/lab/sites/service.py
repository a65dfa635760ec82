"""The lab's side of its site agents: what a controller asks of them, in the lab's own words.

A machine served by a site agent (the inventory's ``agents:`` section sets ``Machine.agent``) is
powered, watched and health-checked by that agent, where the wire is. :class:`Sites` is the
session's service for them: it opens the link to the agents on first use (the NATS one,
:class:`labctl.lab.sites.link.ControllerLink`; a lab without agents never loads nats-py) and
closes it with the lab context. The power, readiness and health services are handed it when the
session builds them (it is their ``agents``), and the launchers when a storm opens them (their relay
to the launchers placed at an agent).

What the pytest plugin (or any run) calls:

    require_agents(lab, machines)          # before touching anything: one line if an agent is down
    set_run_context(session, run_id, cell_id)   # order ids <run>/<cell>/<step> (de-duplication)
    session.power.on(...)                  # machines of agents go through the `agent` backend
    session.wait_ready(...)                # their readiness is watched by their agents
    agent_feeds(session, ...)              # metric sources run by the agents, as MetricSources
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from labctl.clock import LabClock
from labctl.drivers.power_verbs import PowerVerb
from labctl.errors import BadInputError
from labctl.inventory.model import Lab, Machine
from labctl.inventory.vdi import Launcher
from labctl.lab.context import LabContext, agents_of
from labctl.lab.events import Timeline
from labctl.lab.health import DeviceHealth
from labctl.lab.launchers.backend import Args
from labctl.lab.power.backend import Gate, Report
from labctl.lab.power.model import MachineState
from labctl.lab.ready import Readiness
from labctl.lab.sites.errors import AgentDown
from labctl.records.samples import MetricSource

__all__ = ["AgentDown", "AgentLink", "Sites", "agent_feeds", "link_for", "require_agents", "set_run_context"]


class AgentLink(Protocol):
    """A controller's line to the site agents of one lab."""

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        """A timed fan-out: every agent fires at one instant (after ``gate``); one report per machine."""

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]: ...

    def wait_ready(
        self,
        machines: Sequence[Machine],
        *,
        deadline_lab: float,
        expect_boot: bool,
        stop: threading.Event | None,
    ) -> dict[str, Readiness]: ...

    def health(
        self, machines: Sequence[Machine], *, wake: bool, wake_timeout_s: float
    ) -> dict[str, DeviceHealth]: ...

    def feed(self, agent: str, source: str, targets: Sequence[str], interval_s: float) -> MetricSource: ...

    def launcher_call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float) -> str:
        """A ``labctl-launcher/1`` call to a launcher placed at an agent: the launcher's text."""

    def require(self, agents: Sequence[str]) -> None:
        """Raise :class:`AgentDown` naming the first agent of ``agents`` with no fresh heartbeat."""

    def set_context(self, run_id: str, cell_id: str) -> None: ...

    def close(self) -> None: ...


def open_link(lab: Lab, clock: LabClock | None = None, timeline: Timeline | None = None) -> AgentLink:
    """The NATS link to ``lab``'s site agents (nothing is sent until it is used)."""
    if lab.agents is None:
        raise BadInputError(f"{lab.source_file}: the lab has no agents: section")
    # imported here: only labs with agents load nats-py (the link speaks it through drivers.hub)
    from labctl.lab.sites.link import ControllerLink

    return ControllerLink(lab, clock=clock, timeline=timeline)


class Sites:
    """The site agents of one lab, as the session's services use them (see the module docstring).

    It is the ``agents`` of the power, readiness and health services: a machine an agent serves is
    powered, watched and checked through :attr:`link`, opened on first use."""

    def __init__(self, ctx: LabContext):
        self.ctx = ctx
        self._link: AgentLink | None = None
        self._lock = threading.Lock()

    @property
    def link(self) -> AgentLink:
        """The link to the lab's agents (opened on first use, closed with the lab context)."""
        with self._lock:
            if self._link is None:
                self._link = open_link(self.ctx.lab, self.ctx.clock, self.ctx.timeline)
                self.ctx.on_close(self._close)
            return self._link

    def _close(self) -> None:
        with self._lock:
            link, self._link = self._link, None
        if link is not None:
            link.close()

    # --- what the power, readiness and health services hand to the agents -------------------------
    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        self.link.act(verb, machines, gate, report)

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        return self.link.states(machines)

    def wait_ready(
        self,
        machines: Sequence[Machine],
        *,
        deadline_lab: float,
        expect_boot: bool,
        stop: threading.Event | None,
    ) -> dict[str, Readiness]:
        return self.link.wait_ready(machines, deadline_lab=deadline_lab, expect_boot=expect_boot, stop=stop)

    def health(
        self, machines: Sequence[Machine], *, wake: bool, wake_timeout_s: float
    ) -> dict[str, DeviceHealth]:
        return self.link.health(machines, wake=wake, wake_timeout_s=wake_timeout_s)

    def launcher_call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float) -> str:
        """What the launchers hand to the agents (:class:`labctl.lab.launchers.agent.LauncherRelay`)."""
        return self.link.launcher_call(launcher, verb, args, timeout_s)

    # --- what a run asks of them directly ---------------------------------------------------------
    def set_context(self, run_id: str, cell_id: str) -> None:
        """Name the run and cell whose orders follow: order ids are ``<run>/<cell>/<step>``, so a
        re-sent order is recognised as the same one. Does nothing for a lab without agents."""
        if self.ctx.lab.agents is not None:
            self.link.set_context(run_id, cell_id)

    def feeds(self, source: str, targets: Sequence[str], *, interval_s: float = 5.0) -> list[MetricSource]:
        """Metric sources run by the agents that serve ``targets`` (``pvs``: streaming servers,
        ``typeperf``: servers, ``redfish_power``: servers with a BMC), one per agent, each a
        streaming :class:`MetricSource` for the recorder."""
        lab = self.ctx.lab
        by_agent = agents_of([lab.machine(t) for t in targets])
        missing = [t for t in targets if not lab.machine(t).agent]
        if missing:
            raise BadInputError(f"{missing[0]}: no agent serves it (its source runs here: session.sources)")
        link = self.link
        return [link.feed(agent, source, [m.name for m in ms], interval_s) for agent, ms in by_agent.items()]


class _WithSites(Protocol):
    @property
    def sites(self) -> Sites: ...


def link_for(session: _WithSites) -> AgentLink:
    """The session's link to its lab's agents (opened on first use, closed with the session)."""
    return session.sites.link


def set_run_context(session: _WithSites, run_id: str, cell_id: str) -> None:
    """:meth:`Sites.set_context` of the session's sites."""
    session.sites.set_context(run_id, cell_id)


def agent_feeds(
    session: _WithSites, source: str, targets: Sequence[str], *, interval_s: float = 5.0
) -> list[MetricSource]:
    """:meth:`Sites.feeds` of the session's sites."""
    return session.sites.feeds(source, targets, interval_s=interval_s)


def require_agents(lab: Lab, machines: Sequence[Machine] | None = None) -> None:
    """Refuse to start (:class:`AgentDown`, one line) when an agent serving ``machines`` (default:
    the whole lab, the session launchers placed at agents included) has no fresh heartbeat.
    Nothing to check for a lab without agents."""
    if lab.agents is None:
        return
    wanted = set(agents_of(list(lab.machines.values()) if machines is None else machines))
    if machines is None and lab.vdi is not None:
        wanted |= {ln.agent for ln in lab.vdi.launchers if ln.agent}
    needed = sorted(wanted)
    if not needed:
        return
    link = open_link(lab)
    try:
        link.require(needed)
    finally:
        link.close()
