"""The lab's side of its site agents: what a controller asks of them, in the lab's own words.

A machine served by a site agent (the inventory's ``agents:`` section sets ``Machine.agent``) is
powered, watched and health-checked by that agent, where the wire is. The lab layer speaks to the
agents through an :class:`AgentLink`; the one that talks NATS JetStream is
:class:`labctl.agents.controller.ControllerLink`, opened on first use per session (imported
there: a lab without agents never loads nats-py).

What the pytest plugin (or any run) calls:

    require_agents(lab, machines)          # before touching anything: one line if an agent is down
    set_run_context(session, run_id, cell_id)   # order ids <run>/<cell>/<step> (de-duplication)
    session.power.on(...)                  # machines of agents go through the `agent` backend
    session.wait_ready(...)                # their readiness is watched by their agents
    agent_feeds(session, ...)              # metric sources run by the agents, as MetricSources
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from labctl.drivers.power_verbs import PowerVerb
from labctl.errors import BadInputError
from labctl.inventory.model import Lab, Machine
from labctl.lab.power.backend import Gate, Report
from labctl.lab.power.model import MachineState
from labctl.records.samples import MetricSource

if TYPE_CHECKING:
    from labctl.lab.health import DeviceHealth
    from labctl.lab.ready import Readiness
    from labctl.lab.session import LabSession


class AgentDown(BadInputError):
    """An agent the run needs has no fresh heartbeat: the run refuses to start (one line)."""


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

    def require(self, agents: Sequence[str]) -> None:
        """Raise :class:`AgentDown` naming the first agent of ``agents`` with no fresh heartbeat."""

    def set_context(self, run_id: str, cell_id: str) -> None: ...

    def close(self) -> None: ...


_links: weakref.WeakKeyDictionary[LabSession, AgentLink] = weakref.WeakKeyDictionary()
_links_lock = threading.Lock()


def _open_link(lab: Lab, session: LabSession | None) -> AgentLink:
    if lab.agents is None:
        raise BadInputError(f"{lab.source_file}: the lab has no agents: section")
    # imported here: only labs with agents need nats-py and the agents package
    from labctl.agents.controller import ControllerLink

    if session is None:
        return ControllerLink(lab)
    return ControllerLink(lab, clock=session.clock, timeline=session.timeline)


def link_for(session: LabSession) -> AgentLink:
    """The session's link to its lab's agents (opened on first use, closed with the session)."""
    with _links_lock:
        link = _links.get(session)
        if link is None:
            link = _links[session] = _open_link(session.lab, session)
            session.on_close(link.close)
    return link


def set_run_context(session: LabSession, run_id: str, cell_id: str) -> None:
    """Name the run and cell whose orders follow: order ids are ``<run>/<cell>/<step>``, so a
    re-sent order is recognised as the same one. Does nothing for a lab without agents."""
    if session.lab.agents is not None:
        link_for(session).set_context(run_id, cell_id)


def agents_of(machines: Sequence[Machine]) -> dict[str, list[Machine]]:
    """Machines grouped by the agent that serves them (machines without one are left out)."""
    out: dict[str, list[Machine]] = {}
    for m in machines:
        if m.agent:
            out.setdefault(m.agent, []).append(m)
    return out


def require_agents(lab: Lab, machines: Sequence[Machine] | None = None) -> None:
    """Refuse to start (:class:`AgentDown`, one line) when an agent serving ``machines`` (default:
    the whole lab) has no fresh heartbeat. Nothing to check for a lab without agents."""
    if lab.agents is None:
        return
    needed = sorted(agents_of(list(lab.machines.values()) if machines is None else machines))
    if not needed:
        return
    link = _open_link(lab, None)
    try:
        link.require(needed)
    finally:
        link.close()


def wait_ready_split(
    session: LabSession,
    machines: Sequence[Machine],
    *,
    timeout_s: float | None = None,
    deadline: float | None = None,
    expect_boot: bool = False,
    stop: threading.Event | None = None,
) -> dict[str, Readiness]:
    """:meth:`LabSession.wait_ready` for a lab with agents: each agent watches the machines it
    serves (unless its ``ready: false``), this process the rest, all at once."""
    from labctl.lab.ready import wait_ready  # ready imports the session module

    clock = session.clock
    if deadline is None:
        if timeout_s is None:
            raise ValueError("give timeout_s or deadline")
        deadline = clock.now() + timeout_s
    sites = session.lab.agents.sites if session.lab.agents else {}
    remote = [m for m in machines if m.agent and sites.get(m.agent) and sites[m.agent].ready]
    local = [m for m in machines if m not in remote]
    out: dict[str, Readiness] = {}
    lock = threading.Lock()

    def run_remote() -> None:
        got = link_for(session).wait_ready(remote, deadline_lab=deadline, expect_boot=expect_boot, stop=stop)
        with lock:
            out.update(got)

    thread = threading.Thread(target=run_remote, name="ready-agents", daemon=True) if remote else None
    if thread is not None:
        thread.start()
    if local:
        got = wait_ready(session, local, deadline=deadline, expect_boot=expect_boot, stop=stop)
        with lock:
            out.update(got)
    if thread is not None:
        thread.join()
    return {m.name: out[m.name] for m in machines}


def agent_feeds(
    session: LabSession, source: str, targets: Sequence[str], *, interval_s: float = 5.0
) -> list[MetricSource]:
    """Metric sources run by the agents that serve ``targets`` (``pvs``: streaming servers,
    ``typeperf``: servers, ``redfish_power``: servers with a BMC), one per agent, each a
    streaming :class:`MetricSource` for the recorder."""
    by_agent = agents_of([session.lab.machine(t) for t in targets])
    missing = [t for t in targets if not session.lab.machine(t).agent]
    if missing:
        raise BadInputError(f"{missing[0]}: no agent serves it (its source runs here: session.sources)")
    link = link_for(session)
    return [link.feed(agent, source, [m.name for m in ms], interval_s) for agent, ms in by_agent.items()]
