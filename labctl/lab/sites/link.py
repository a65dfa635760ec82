"""The controller's link to its site agents over NATS JetStream (implements
:class:`labctl.lab.sites.AgentLink`): a lab adapter over the hub's wire (:mod:`labctl.drivers.hub`).

A power action is a **timed fan-out**: the link measures every agent's clock offset (ping over
NATS), picks a fire instant far enough ahead for every order to arrive (``fire_lead_s``, and
several worst round trips), publishes one order per agent with that instant on the agent's own
clock, passes the power gate at the instant (so backends of this controller fire with them), and
collects each machine's result, its stamps turned back into this controller's clock. It records
the dispatch (an ``agent.dispatch`` event): per agent its offset and round trip, its first and
last send, how late it fired, and the spread of the agents' first sends (across sites).

An agent that stops answering (no clock ping answered for ``down_after_s``) while it owes results
has its machines reported as failed with that reason; the others carry on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import nats.errors
from nats.js.api import DeliverPolicy

from labctl.clock import LabClock
from labctl.drivers.hub.clocksync import ClockOffset
from labctl.drivers.hub.connection import HubConnection
from labctl.drivers.hub.protocol import (
    ClockSpec,
    FeedSpec,
    LauncherAnswer,
    LauncherCall,
    MachineResult,
    Order,
    OrderDone,
    ResultEnvelope,
    SampleBatch,
    launcher_subject,
    order_subject,
    results_of,
    sample_subject,
)
from labctl.drivers.hub.status import AgentStatus, measure_all, statuses
from labctl.drivers.power_verbs import PowerVerb
from labctl.errors import EndpointError
from labctl.inventory.agents import Agents
from labctl.inventory.model import Lab, Machine, PowerKind
from labctl.inventory.vdi import Launcher
from labctl.lab.context import agents_of
from labctl.lab.events import Timeline
from labctl.lab.health import DeviceHealth
from labctl.lab.launchers.backend import Args
from labctl.lab.power.backend import Gate, Report, sleep_until
from labctl.lab.power.model import MachineState, PowerOutcome, State, lab_at, spread
from labctl.lab.ready import Readiness
from labctl.lab.sites.errors import AgentDown
from labctl.lab.sites.feed import AgentFeed
from labctl.records.samples import MetricSource

log = logging.getLogger(__name__)

# PowerVerb -> (Action, force) as the agent's power facade takes them
_ACTION: Final = {
    PowerVerb.ON: ("on", False),
    PowerVerb.GRACEFUL_OFF: ("off", False),
    PowerVerb.FORCE_OFF: ("off", True),
    PowerVerb.REBOOT: ("reboot", False),
    PowerVerb.RESET: ("reset", False),
}


@dataclass(frozen=True)
class LinkSettings:
    fire_lead_s: float = 0.25  # wall seconds from publishing the orders to the fire instant, at least
    lead_rtts: float = 5.0  # ... and at least this many of the worst agent's round trips
    # arming before the instant, per machine of the largest agent's share: off/reboot/reset open a
    # session each (SSH, BMC); on builds each machine's magic packet (~0.1 ms each in Python)
    arm_s_per_machine: float = 0.004
    arm_s_per_machine_on: float = 0.0002
    order_ttl_s: float = 60.0  # an order reaching its agent later than this after its instant expires
    result_timeout_s: float = 300.0  # power: results are awaited this long after the fire instant
    call_timeout_s: float = 60.0  # state / health answers
    ready_grace_s: float = 30.0  # wall seconds past a readiness deadline for the agents' last word
    ping_timeout_s: float = 1.0
    poll_s: float = 0.1
    liveness_every_s: float = 1.0  # how often an agent that owes results is pinged
    launcher_grace_s: float = 5.0  # past a launcher call's own deadline, for the agent's answer


@dataclass
class AgentDispatch:
    """One agent's part in a timed fan-out, on the controller's clock."""

    agent: str
    machines: int
    offset_s: float | None  # agent clock - controller clock
    rtt_s: float | None
    ok: int = 0
    first_sent_wall: float | None = None
    last_sent_wall: float | None = None
    late_s: float | None = None  # it fired this long after the instant (arming took longer)
    status: str = ""  # done, expired, interrupted, lost, unreachable, ...


@dataclass
class Dispatch:
    """A timed fan-out across agents: what the run records as ``agent.dispatch``."""

    order: str
    action: str
    fire_at_wall: float
    lead_s: float
    agents: dict[str, AgentDispatch] = field(default_factory=dict)

    @property
    def cross_agent_spread_s(self) -> float | None:
        """First send of the first agent to first send of the last (wall seconds): how together the
        sites fired."""
        return spread(a.first_sent_wall for a in self.agents.values())

    @property
    def send_spread_s(self) -> float | None:
        """First to last send over every machine of every agent (wall seconds)."""
        stamps = [s for a in self.agents.values() for s in (a.first_sent_wall, a.last_sent_wall)]
        return spread(stamps)

    @property
    def max_offset_uncertainty_s(self) -> float | None:
        rtts = [a.rtt_s for a in self.agents.values() if a.rtt_s is not None]
        return max(rtts) / 2 if rtts else None


class _Collector:
    """Results of one order as they arrive (filled on the loop, read by the caller's thread)."""

    def __init__(self, order_id: str, expected: dict[str, set[str]]):
        self.order_id = order_id
        self.sub: Any = None  # the results subscription
        self.listening = False  # results are wanted (subscribe again after a reconnect)
        self.reconnects = 0  # the connection's reconnect count when it was made
        self.expected = expected  # agent -> machines it owes
        self.results: dict[str, MachineResult] = {}
        self.done: dict[str, OrderDone] = {}
        self.lost: dict[str, str] = {}  # agent -> why we stopped waiting for it
        self.fresh: list[MachineResult] = []
        self.lock = threading.Lock()
        self.arrived = threading.Event()

    def add(self, env: ResultEnvelope) -> None:
        with self.lock:
            if env.result is not None and env.result.machine not in self.results:
                self.results[env.result.machine] = env.result
                self.fresh.append(env.result)
            if env.done is not None:
                self.done.setdefault(env.done.agent, env.done)
        self.arrived.set()

    def take(self) -> list[MachineResult]:
        with self.lock:
            fresh, self.fresh = self.fresh, []
            return fresh

    def owing(self) -> list[str]:
        """Agents whose done record has not come (an agent sends it after every result of its
        order is stored, and the stream keeps that order)."""
        with self.lock:
            return [a for a in self.expected if a not in self.lost and a not in self.done]


class ControllerLink:
    def __init__(
        self,
        lab: Lab,
        *,
        clock: LabClock | None = None,
        timeline: Timeline | None = None,
        hub: str | None = None,
        settings: LinkSettings | None = None,
    ):
        if lab.agents is None:
            raise ValueError(f"{lab.source_file}: no agents: section")
        self.lab = lab
        self.agents: Agents = lab.agents
        self.clock = clock or LabClock(scale=lab.time_scale)
        self.timeline = timeline
        self.hub = hub or self.agents.hub
        self.settings = settings or LinkSettings()
        self.run_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.cell_id = "-"
        self._steps = itertools.count(1)
        self._conn: HubConnection | None = None
        self._lock = threading.Lock()
        self.last_dispatch: Dispatch | None = None
        self._absent: set[str] = set()  # agents a launcher call last found missing on the hub
        self.dispatches: list[Dispatch] = []

    # --- connection ------------------------------------------------------------------------------
    def conn(self) -> HubConnection:
        with self._lock:
            if self._conn is None:
                c = HubConnection(self.hub, name=f"labctl {self.lab.name}", js_domain=self.agents.hub_domain)
                try:
                    c.call(c.ensure_streams(), "create the agents' streams")
                except BaseException:
                    c.close()
                    raise
                self._conn = c
            return self._conn

    def close(self) -> None:
        with self._lock:
            c, self._conn = self._conn, None
        if c is not None:
            c.close()

    def set_context(self, run_id: str, cell_id: str) -> None:
        self.run_id, self.cell_id = run_id, cell_id

    def _order_id(self, kind: str) -> str:
        return f"{self.run_id}/{self.cell_id}/{next(self._steps):05d}-{kind}"

    def _clock_spec(self) -> ClockSpec:
        return ClockSpec(scale=self.clock.scale, anchor_wall_s=self.clock.anchor_wall_s)

    def _event(self, kind: str, target: str, **detail: Any) -> None:
        if self.timeline is not None:
            self.timeline.append(kind, target, **detail)

    # --- health of the agents -------------------------------------------------------------------
    def status(self, names: Sequence[str] | None = None) -> list[AgentStatus]:
        c = self.conn()
        sites = [self.agents.sites[n] for n in (names or list(self.agents.sites))]
        timeout = self.settings.ping_timeout_s
        return c.call(
            statuses(c.nc, c.js, self.lab.name, sites, ping_timeout_s=timeout), "agents' status", 30
        )

    def require(self, agents: Sequence[str]) -> None:
        for st in self.status(agents):
            if st.clock is None:
                raise AgentDown(st.down_reason(self.hub, self.lab.source_file))
            self._event("agent.clock", st.agent.name, offset_s=st.clock.offset_s, rtt_s=st.clock.rtt_s)

    def measure(self, agents: Sequence[str], *, settle_s: float | None = None) -> dict[str, ClockOffset]:
        """Clock offsets of ``agents``; one that does not answer is asked again for ``settle_s``
        (default: an agent's ``down_after_s``), so a hub link that is coming back costs no order."""
        c = self.conn()
        timeout = self.settings.ping_timeout_s
        settle_until = time.monotonic() + (self.agents.down_after_s if settle_s is None else settle_s)
        got: dict[str, ClockOffset] = {}
        while True:
            missing = [a for a in agents if a not in got]
            got.update(
                c.call(measure_all(c.nc, self.lab.name, missing, timeout_s=timeout), "clock pings", 30)
            )
            if len(got) == len(agents) or time.monotonic() > settle_until:
                break
            time.sleep(self.settings.poll_s)
        for name, off in got.items():
            self._event("agent.clock", name, offset_s=off.offset_s, rtt_s=off.rtt_s, samples=off.samples)
        return got

    # --- sending orders and collecting results --------------------------------------------------
    def _listen(self, coll: _Collector) -> None:
        """(Re)subscribe to the order's results from the stream's start (the collector keeps each
        machine's first word, so a result seen twice after a reconnect counts once)."""
        c = self.conn()

        async def cb(msg: Any) -> None:
            try:
                coll.add(ResultEnvelope.from_bytes(msg.data))
            except ValueError as exc:
                log.warning("unreadable result on %s: %s", msg.subject, exc)

        async def go() -> Any:
            assert c.js is not None
            return await c.js.subscribe(
                results_of(self.lab.name, coll.order_id),
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.ALL,
                cb=cb,
            )

        old, coll.sub = coll.sub, None
        self._unsubscribe(old)
        coll.listening = True
        try:
            coll.sub = c.call(go(), f"subscribe to results of {coll.order_id}")
            coll.reconnects = c.reconnects
        except EndpointError as exc:  # the hub is away: _collect subscribes once it is back
            log.debug("%s", exc)

    def _send(
        self,
        order_id: str,
        kind: str,
        by_agent: dict[str, list[Machine]],
        expires_in_s: float,
        offsets: dict[str, ClockOffset] | None = None,
        *,
        listen: bool = True,
        **fields: Any,
    ) -> _Collector:
        """Subscribe to the order's results (``listen``), then publish one order per agent (an
        agent whose order could not be stored is marked lost with the reason)."""
        c = self.conn()
        coll = _Collector(order_id, {a: {m.name for m in ms} for a, ms in by_agent.items()})
        if listen:
            self._listen(coll)
        now = time.time()
        failed: dict[str, str] = {}

        async def publish(agent: str, ms: list[Machine]) -> None:
            off = offsets[agent].offset_s if offsets and agent in offsets else 0.0
            fire_at = fields.get("fire_at")
            order = Order(
                id=order_id,
                kind=kind,
                lab=self.lab.name,
                agent=agent,
                machines=[m.name for m in ms],
                issued_wall=now,
                expires_at=now + off + expires_in_s,
                clock=self._clock_spec(),
                **{**fields, "fire_at": None if fire_at is None else fire_at + off},
            )
            try:
                await c.publish(
                    order_subject(self.lab.name, agent),
                    order.to_bytes(),
                    f"{order_id}/{agent}",
                    retry_until=time.monotonic() + expires_in_s,
                )
            except Exception as exc:  # reported for this agent's machines
                failed[agent] = f"order not stored on the hub {c.url}: {type(exc).__name__}: {exc}"

        async def go() -> None:
            await asyncio.gather(*(publish(a, ms) for a, ms in by_agent.items()))

        c.call(go(), f"send {kind} orders", expires_in_s + 10)
        for agent, why in failed.items():
            coll.lost[agent] = why
        return coll

    def _unsubscribe(self, sub: Any) -> None:
        c = self._conn
        if c is None or sub is None:
            return
        try:
            c.call(sub.unsubscribe(), "unsubscribe", 5)
        except Exception as exc:  # the connection is going anyway
            log.debug("unsubscribe: %s", exc)

    def _collect(
        self,
        coll: _Collector,
        until_wall: float,
        *,
        on_result: Any = None,
        stop: threading.Event | None = None,
        on_stop: Any = None,
    ) -> None:
        """Until every agent has answered, is lost, or ``until_wall``; ``on_result`` for each
        result as it arrives; ``stop`` set: ``on_stop()`` once (cancel orders), then a short wait.
        The subscription is made again after a reconnect (the hub may have restarted)."""
        last_seen = {a: time.monotonic() for a in coll.expected}
        next_ping = time.monotonic() + self.settings.liveness_every_s
        stopped = False
        down_after = self.agents.down_after_s
        try:
            while True:
                for r in coll.take():
                    last_seen[r.agent] = time.monotonic()
                    if on_result is not None:
                        on_result(r)
                owing = coll.owing()
                if not owing or time.time() > until_wall:
                    break
                if stop is not None and stop.is_set() and not stopped:
                    stopped = True
                    if on_stop is not None:
                        on_stop()
                    until_wall = min(until_wall, time.time() + self.settings.ready_grace_s)
                c = self.conn()
                if coll.listening and c.connected and (coll.sub is None or c.reconnects != coll.reconnects):
                    self._listen(coll)
                if time.monotonic() >= next_ping:
                    next_ping = time.monotonic() + self.settings.liveness_every_s
                    alive = self._alive(owing) if c.connected else set(owing)
                    now = time.monotonic()
                    for a in owing:
                        if a in alive:
                            last_seen[a] = now
                        elif now - last_seen[a] > down_after:
                            coll.lost[a] = (
                                f"agent {a} went silent (no clock ping answered for {down_after:g} s)"
                            )
                coll.arrived.wait(self.settings.poll_s)
                coll.arrived.clear()
            for r in coll.take():
                if on_result is not None:
                    on_result(r)
        finally:
            self._unsubscribe(coll.sub)
            coll.sub = None

    def _alive(self, agents: Sequence[str]) -> set[str]:
        try:
            c = self.conn()
            got = c.call(measure_all(c.nc, self.lab.name, list(agents), timeout_s=0.5), "liveness pings", 10)
        except Exception as exc:  # we cannot tell: nobody is declared lost for it
            log.debug("liveness: %s", exc)
            return set(agents)
        return set(got)

    @staticmethod
    def _why_missing(coll: _Collector, agent: str) -> str:
        done = coll.done.get(agent)
        if agent in coll.lost:
            return coll.lost[agent]
        if done is not None and done.status != "done":
            return f"agent {agent}: order {done.status}: {done.detail}"
        if done is not None:
            return f"agent {agent} reported no outcome for it"
        return f"agent {agent}: no answer before the deadline"

    # --- power --------------------------------------------------------------------------------
    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        by_agent = agents_of(machines)
        action, force = _ACTION[verb]
        try:
            offsets = self.measure(list(by_agent))
        except Exception:
            gate.leave(PowerKind.AGENT.value)
            raise
        live = {a: ms for a, ms in by_agent.items() if a in offsets}
        for a, ms in by_agent.items():
            if a not in offsets:
                why = f"agent {a} does not answer (no clock ping answered): not sent"
                for m in ms:
                    report(self._failed(m, a, why))
        worst_rtt = max((o.rtt_s for o in offsets.values()), default=0.0)
        st = self.settings
        per_machine = st.arm_s_per_machine_on if verb is PowerVerb.ON else st.arm_s_per_machine
        arm = per_machine * max((len(ms) for ms in live.values()), default=0)
        lead = max(self.settings.fire_lead_s, self.settings.lead_rtts * worst_rtt) + arm
        fire_at = time.time() + lead
        order_id = self._order_id(f"power-{action}")
        dispatch = Dispatch(order_id, action, fire_at, lead)
        for a, ms in by_agent.items():
            off = offsets.get(a)
            dispatch.agents[a] = AgentDispatch(
                a,
                len(ms),
                off.offset_s if off else None,
                off.rtt_s if off else None,
                status="" if off else "unreachable",
            )
        if not live:
            gate.leave(PowerKind.AGENT.value)
            self._record(dispatch)
            return
        try:
            coll = self._send(
                order_id,
                "power",
                live,
                lead + self.settings.order_ttl_s,
                offsets,
                fire_at=fire_at,
                action=action,
                force=force,
            )
        except Exception:
            gate.leave(PowerKind.AGENT.value)
            raise
        sleep_until(fire_at)
        gate.pass_(PowerKind.AGENT.value)  # this controller's own backends fire with the agents
        by_name = {m.name: m for ms in live.values() for m in ms}
        reported: set[str] = set()

        def on_result(r: MachineResult) -> None:
            m = by_name.get(r.machine)
            if m is None or r.machine in reported:
                return
            reported.add(r.machine)
            report(self._power_outcome(m, r, offsets[r.agent]))

        self._collect(coll, fire_at + self.settings.result_timeout_s, on_result=on_result)
        for a, ms in live.items():
            why = self._why_missing(coll, a)
            for m in ms:
                if m.name not in reported:
                    report(self._failed(m, a, why))
            self._summarise(dispatch.agents[a], coll, ms, offsets[a])
        self._record(dispatch)

    def _power_outcome(self, m: Machine, r: MachineResult, off: ClockOffset) -> PowerOutcome:
        sent = off.to_controller(r.sent_wall) if r.sent_wall is not None else None
        delivered = off.to_controller(r.delivered_wall) if r.delivered_wall is not None else None
        return PowerOutcome(
            m.name,
            m.kind.value,
            r.ok,
            r.detail,
            r.fix,
            backend=f"{r.backend or m.own_power_kind.value}@{r.agent}",
            sent_wall=sent,
            delivered_wall=delivered,
            sent_lab=lab_at(self.clock, sent) if sent is not None else None,
            delivered_lab=lab_at(self.clock, delivered) if delivered is not None else None,
            seconds=(delivered - sent) if sent is not None and delivered is not None else None,
        )

    @staticmethod
    def _failed(m: Machine, agent: str, why: str) -> PowerOutcome:
        return PowerOutcome(
            m.name,
            m.kind.value,
            False,
            why,
            f"check agent {agent}: labctl agents",
            backend=f"{m.own_power_kind.value}@{agent}",
        )

    def _summarise(self, d: AgentDispatch, coll: _Collector, ms: list[Machine], off: ClockOffset) -> None:
        sent = [
            off.to_controller(r.sent_wall)
            for m in ms
            if (r := coll.results.get(m.name)) is not None and r.ok and r.sent_wall is not None
        ]
        d.ok = sum(1 for m in ms if (r := coll.results.get(m.name)) is not None and r.ok)
        d.first_sent_wall = min(sent) if sent else None
        d.last_sent_wall = max(sent) if sent else None
        done = coll.done.get(d.agent)
        d.late_s = done.late_s if done is not None else None
        if d.agent in coll.lost:
            d.status = "lost"
        else:
            d.status = done.status if done is not None else "no answer"

    def _record(self, d: Dispatch) -> None:
        self.last_dispatch = d
        self.dispatches.append(d)
        lab = self.clock.to_lab_s
        self._event(
            "agent.dispatch",
            d.order,
            action=d.action,
            fire_at_s=lab_at(self.clock, d.fire_at_wall),
            lead_s=d.lead_s,
            cross_agent_spread_s=None if d.cross_agent_spread_s is None else lab(d.cross_agent_spread_s),
            cross_agent_spread_wall_s=d.cross_agent_spread_s,
            send_spread_wall_s=d.send_spread_s,
            clock_uncertainty_wall_s=d.max_offset_uncertainty_s,
            agents={
                a.agent: {
                    "machines": a.machines,
                    "ok": a.ok,
                    "status": a.status,
                    "clock_offset_s": a.offset_s,
                    "rtt_s": a.rtt_s,
                    "first_sent_s": None
                    if a.first_sent_wall is None
                    else lab_at(self.clock, a.first_sent_wall),
                    "send_spread_wall_s": spread([a.first_sent_wall, a.last_sent_wall]),
                    "late_s": a.late_s,
                }
                for a in d.agents.values()
            },
        )

    # --- state, readiness, health -----------------------------------------------------------------
    def _ask(
        self,
        kind: str,
        machines: Sequence[Machine],
        until_in_s: float,
        *,
        stop: threading.Event | None = None,
        **fields: Any,
    ) -> tuple[_Collector, dict[str, ClockOffset]]:
        by_agent = agents_of(machines)
        offsets = self.measure(list(by_agent))
        order_id = self._order_id(kind)
        coll = self._send(order_id, kind, by_agent, until_in_s, offsets, **fields)
        for a in by_agent:
            if a not in offsets and a not in coll.lost:
                coll.lost[a] = f"agent {a} does not answer (no clock ping answered)"

        def cancel() -> None:
            self._send(
                f"{order_id}/cancel",
                "cancel",
                {a: [] for a in by_agent},
                30,
                offsets,
                listen=False,
                cancels=order_id,
            )

        self._collect(coll, time.time() + until_in_s, stop=stop, on_stop=cancel)
        return coll, offsets

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        coll, _ = self._ask("state", machines, self.settings.call_timeout_s)
        out = {}
        for m in machines:
            r = coll.results.get(m.name)
            if r is None or r.state is None:
                out[m.name] = MachineState(
                    m.name,
                    m.kind.value,
                    State.UNKNOWN,
                    self._why_missing(coll, m.agent or ""),
                    f"agent:{m.agent}",
                )
            else:
                out[m.name] = MachineState(
                    m.name, m.kind.value, State(r.state), r.detail, f"{r.source}@{r.agent}", dict(r.extra)
                )
        return out

    def wait_ready(
        self,
        machines: Sequence[Machine],
        *,
        deadline_lab: float,
        expect_boot: bool,
        stop: threading.Event | None,
    ) -> dict[str, Readiness]:
        wall_left = max(0.0, self.clock.to_wall_s(deadline_lab - self.clock.now()))
        coll, offsets = self._ask(
            "ready",
            machines,
            wall_left + self.settings.ready_grace_s,
            stop=stop,
            deadline_lab=deadline_lab,
            expect_boot=expect_boot,
        )
        out = {}
        for m in machines:
            r = coll.results.get(m.name)
            if r is None:
                out[m.name] = Readiness(
                    m.name, m.kind.value, "error", detail=self._why_missing(coll, m.agent or "")
                )
            else:
                off = offsets.get(r.agent)
                at = None
                if r.at_wall is not None:
                    at = lab_at(self.clock, off.to_controller(r.at_wall) if off else r.at_wall)
                state = r.state or ("ready" if r.ok else "error")
                out[m.name] = Readiness(m.name, m.kind.value, state, at, r.boot_time_s, r.retries, r.detail)
            rd = out[m.name]
            extra = {"boot_time_s": rd.boot_time_s, "retries": rd.retries} if rd.ready else {}
            self._event(rd.state, m.name, machine_kind=m.kind.value, detail=rd.detail, agent=m.agent, **extra)
        return out

    def health(
        self, machines: Sequence[Machine], *, wake: bool, wake_timeout_s: float
    ) -> dict[str, DeviceHealth]:
        deadline = self.clock.now() + wake_timeout_s
        budget = self.settings.call_timeout_s + (self.clock.to_wall_s(wake_timeout_s) if wake else 0.0)
        coll, _ = self._ask("health", machines, budget, deadline_lab=deadline, wake=wake)
        out = {}
        for m in machines:
            r = coll.results.get(m.name)
            if r is None:  # the agent's fault, not the device's: not quarantined for it
                why = self._why_missing(coll, m.agent or "")
                out[m.name] = DeviceHealth(
                    m.name, m.kind.value, True, {"agent": f"- not checked: {why}"}, time.time()
                )
            else:
                out[m.name] = DeviceHealth(m.name, m.kind.value, r.ok, dict(r.checks), time.time())
        return out

    # --- feeds ----------------------------------------------------------------------------------
    def feed(self, agent: str, source: str, targets: Sequence[str], interval_s: float) -> MetricSource:
        spec = FeedSpec(
            id=f"{self.run_id}/{self.cell_id}/{next(self._steps):05d}-feed-{source}",
            source=source,
            targets=list(targets),
            interval_s=interval_s,
        )
        subs: list[Any] = []

        def start(feed: AgentFeed) -> None:
            c = self.conn()

            async def go() -> Any:
                assert c.js is not None

                async def cb(msg: Any) -> None:
                    try:
                        feed.deliver(SampleBatch.from_bytes(msg.data))
                    except ValueError as exc:
                        log.warning("unreadable samples on %s: %s", msg.subject, exc)

                return await c.js.subscribe(
                    sample_subject(self.lab.name, agent, spec.id),
                    ordered_consumer=True,
                    deliver_policy=DeliverPolicy.ALL,
                    cb=cb,
                )

            subs.append(c.call(go(), f"subscribe to feed {spec.id}"))
            self._send(f"{spec.id}/start", "feed", {agent: []}, 60, None, listen=False, feed=spec)

        def stop(feed: AgentFeed) -> None:
            try:
                self._send(f"{spec.id}/stop", "cancel", {agent: []}, 30, None, listen=False, cancels=spec.id)
            finally:
                for s in subs:
                    self._unsubscribe(s)

        def errors(name: str, errs: dict[str, str]) -> None:
            for endpoint, why in errs.items():
                self._event("source.error", endpoint, source=name, agent=agent, detail=why)

        return AgentFeed(spec, agent, start=start, stop=stop, on_errors=errors)

    # --- session launchers placed at an agent ----------------------------------------------------
    def launcher_call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float) -> str:
        """One ``labctl-launcher/1`` call through the agent ``launcher`` is placed at (core NATS
        request/reply, deadline ``timeout_s`` + ``launcher_grace_s``): the launcher's answer text.
        No answer, or the agent's word that it got none, is an EndpointError naming both."""
        agent = launcher.agent or ""
        action = f"launcher {verb} through site agent {agent}"
        fix = f"is agent {agent} up? labctl agents --lab {self.lab.source_file}"
        call = LauncherCall(
            lab=self.lab.name,
            agent=agent,
            launcher=launcher.name,
            verb=verb,  # the backends pass the protocol's four verbs (pydantic checks)
            args={k: v if isinstance(v, str | int) else list(v) for k, v in args.items()},
            timeout_s=timeout_s,
            clock=self._clock_spec(),
        )
        wait_s = timeout_s + self.settings.launcher_grace_s
        c = self.conn()

        # an agent that is (re)connecting, or whose leaf node's link to the hub is, has no listener
        # on the hub for a moment: asked again for down_after_s, as clock pings are (measure);
        # once per outage (an agent found absent fails the next calls at once, until it answers)
        settle_s = 0.0 if agent in self._absent else self.agents.down_after_s
        settle_until = time.monotonic() + settle_s
        subject = launcher_subject(self.lab.name, agent)

        async def ask() -> tuple[bytes | None, str]:
            while True:
                try:
                    msg = await c.nc.request(subject, call.to_bytes(), timeout=wait_s)
                    return msg.data, ""
                except nats.errors.NoRespondersError:
                    if time.monotonic() < settle_until:
                        await asyncio.sleep(self.settings.poll_s)
                        continue
                    return None, f"agent {agent} does not listen on the hub {c.url} (down, or not connected)"
                except nats.errors.TimeoutError:
                    return (
                        None,
                        f"agent {agent} gave no answer within {wait_s:g} s (it died, or its link is down)",
                    )

        try:
            data, why = c.call(ask(), action, settle_s + wait_s + 2.0)
        except EndpointError as exc:  # the hub itself: named, with the agent and the launcher
            data, why = None, f"agent {agent} not reached: {exc}"
        if data is None:
            self._absent.add(agent)
            self._event("launcher.unreachable", launcher.name, agent=agent, verb=verb, detail=why)
            raise EndpointError(launcher.name, action, why, fix)
        self._absent.discard(agent)
        try:
            answer = LauncherAnswer.from_bytes(data)
        except ValueError as exc:
            raise EndpointError(
                launcher.name,
                action,
                f"agent {agent} answered something else: {str(exc).splitlines()[0]}",
                fix,
            ) from None
        if not answer.ok:
            raise EndpointError(launcher.name, action, f"agent {agent}: {answer.error}", answer.fix)
        return answer.stdout
