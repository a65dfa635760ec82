"""What a site agent does with an order: the lab layer's own actions, run locally on the machines it
serves (power through the machine's own backend at the order's fire-at instant, state reads,
readiness watches, health checks, metric feeds).

The agent's lab is the inventory with every machine's ``agent`` cleared, so its power facade picks
the machines' own backends (wol-ssh, redfish, ipmi, vcenter) instead of sending them to an agent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from labctl.agents.feeds import FeedRunner
from labctl.clock import LabClock
from labctl.drivers.hub.protocol import ClockSpec, MachineResult, Order, OrderDone, SampleBatch
from labctl.errors import LabctlError
from labctl.inventory.model import Lab
from labctl.lab.power.model import Action, PowerOutcome
from labctl.lab.session import DriverSettings, LabSession

log = logging.getLogger(__name__)

Emit = Callable[[MachineResult], None]


def local_lab(lab: Lab) -> Lab:
    """The lab as an agent acts on it: no machine is sent on to an agent."""
    machines = {n: m.model_copy(update={"agent": None}) if m.agent else m for n, m in lab.machines.items()}
    return lab.model_copy(update={"machines": machines})


def lab_to_wall(clock: LabClock, lab_s: float) -> float:
    return clock.anchor_wall_s + (lab_s - clock.anchor_wall_s) / clock.scale


class Executor:
    """Runs one agent's orders; a LabSession per controller clock (scale, anchor) is kept open."""

    def __init__(self, lab: Lab, name: str, driver_settings: DriverSettings | None = None):
        if lab.agents is None or name not in lab.agents.sites:
            raise LabctlError(f"{lab.source_file}: no agent {name!r} under agents.sites")
        self.name = name
        self.site = lab.agents.sites[name]
        self.lab = local_lab(lab)
        self.driver_settings = driver_settings
        self._lock = threading.Lock()
        self._sessions: dict[tuple[float, float], LabSession] = {}
        self._stops: dict[str, threading.Event] = {}
        self._feeds: dict[str, FeedRunner] = {}

    def session(self, spec: ClockSpec) -> LabSession:
        key = (spec.scale, spec.anchor_wall_s)
        with self._lock:
            s = self._sessions.get(key)
            if s is None:
                clock = LabClock(scale=spec.scale, anchor_wall_s=spec.anchor_wall_s)
                s = self._sessions[key] = LabSession(self.lab, clock, settings=self.driver_settings)
            return s

    def _result(self, order: Order, machine: str, ok: bool, **kw: object) -> MachineResult:
        m = self.lab.machines.get(machine)
        return MachineResult(
            order=order.id,
            agent=self.name,
            machine=machine,
            kind=m.kind.value if m is not None else "",
            ok=ok,
            **kw,
        )

    def run(self, order: Order, emit: Emit, publish_samples: Callable[[SampleBatch], None]) -> OrderDone:
        """Execute ``order``; ``emit`` each machine's result as it is known; the done record."""
        received = time.time()
        served = set(self.site.machines)
        mine = [n for n in order.machines if n in served]
        for n in order.machines:
            if n not in served:
                emit(
                    self._result(
                        order,
                        n,
                        False,
                        detail=f"not served by agent {self.name}",
                        fix="check the inventory's agents: section on the controller and the agent",
                    )
                )
        done = OrderDone(
            order=order.id, agent=self.name, received_wall=received, machines=len(order.machines)
        )
        stop = threading.Event()
        with self._lock:
            self._stops[order.id] = stop
        try:
            update = self._dispatch(order, mine, emit, stop, publish_samples)
        except Exception as exc:  # one line back to the controller; the agent carries on
            log.exception("order %s failed", order.id)
            return done.model_copy(update={"status": "failed", "detail": f"{type(exc).__name__}: {exc}"})
        finally:
            with self._lock:
                self._stops.pop(order.id, None)
        return done.model_copy(update=update)

    def _dispatch(
        self,
        order: Order,
        names: list[str],
        emit: Emit,
        stop: threading.Event,
        publish_samples: Callable[[SampleBatch], None],
    ) -> dict[str, object]:
        s = self.session(order.clock)
        if order.kind == "power":
            return self._power(s, order, names, emit)
        if order.kind == "state":
            for name, st in s.power.state(names).items() if names else ():
                emit(
                    self._result(
                        order,
                        name,
                        True,
                        state=st.state.value,
                        detail=st.detail,
                        source=st.source,
                        extra=dict(st.extra),
                    )
                )
            return {}
        if order.kind == "ready":
            deadline = order.deadline_lab if order.deadline_lab is not None else s.clock.now()
            ready = (
                s.wait_ready(names, deadline=deadline, expect_boot=order.expect_boot, stop=stop)
                if names
                else {}
            )
            for name, r in ready.items():
                emit(
                    self._result(
                        order,
                        name,
                        r.ready,
                        state=r.state,
                        detail=r.detail,
                        at_wall=lab_to_wall(s.clock, r.at) if r.at is not None else None,
                        boot_time_s=r.boot_time_s,
                        retries=r.retries,
                    )
                )
            return {}
        if order.kind == "health":
            timeout = (order.deadline_lab - s.clock.now()) if order.deadline_lab is not None else 600.0
            checked = s.health.check_local(
                [s.lab.machine(n) for n in names], wake=order.wake, wake_timeout_s=max(1.0, timeout)
            )
            for name, h in checked.items():
                emit(
                    self._result(
                        order, name, h.ok, state="ok" if h.ok else "failed", detail=h.reason, checks=h.checks
                    )
                )
            return {}
        if order.kind == "feed":
            assert order.feed is not None
            runner = FeedRunner(s.context, order.feed, self.name, publish_samples)
            with self._lock:
                self._feeds[order.feed.id] = runner
            runner.start()
            return {"detail": f"feed {order.feed.id} started"}
        if order.kind == "cancel":
            return {"detail": "stopped" if self.cancel(order.cancels or "") else "nothing to stop"}
        return {"status": "refused", "detail": f"unknown order kind {order.kind!r}"}

    def _power(self, s: LabSession, order: Order, names: list[str], emit: Emit) -> dict[str, object]:
        if not names or order.action is None:
            return {}

        def progress(o: PowerOutcome) -> None:
            emit(
                self._result(
                    order,
                    o.machine,
                    o.ok,
                    detail=o.detail,
                    fix=o.fix,
                    backend=o.backend,
                    sent_wall=o.sent_wall,
                    delivered_wall=o.delivered_wall,
                )
            )

        report = s.power.act(
            Action(order.action), names, force=order.force, progress=progress, fire_at_wall=order.fire_at
        )
        late = None
        if report.fired_wall is not None and order.fire_at is not None:
            late = max(0.0, report.fired_wall - order.fire_at)
        return {"fired_wall": report.fired_wall, "late_s": late}

    def cancel(self, target: str) -> bool:
        """Stop a running order (a readiness watch) or a feed by its id."""
        with self._lock:
            stop = self._stops.get(target)
            feed = self._feeds.pop(target, None)
        if stop is not None:
            stop.set()
        if feed is not None:
            feed.stop()
        return stop is not None or feed is not None

    def running(self) -> list[str]:
        with self._lock:
            return [*self._stops, *self._feeds]

    def close(self) -> None:
        with self._lock:
            feeds, self._feeds = list(self._feeds.values()), {}
            sessions, self._sessions = list(self._sessions.values()), {}
            stops = list(self._stops.values())
        for st in stops:
            st.set()
        for f in feeds:
            f.stop()
        for f in feeds:
            f.join(timeout=5)
        for s in sessions:
            s.close()
