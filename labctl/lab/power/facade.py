"""``session.power``: power for a machine, a group or a selector, whatever carries it.

The machines are split by backend (:mod:`labctl.lab.power.registry`), every backend arms its
machines (sessions opened, requests planned), they all meet at one gate, then fire at once. Every
request, outcome and failure goes to the timeline; the report holds per machine when its request
was sent and, where the backend can see it, delivered, and the spreads of both over the group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

from labctl.drivers.pvs import DeviceInfo
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.agent import AgentPower
from labctl.lab.power.backend import Gate, PowerBackend, TimedGate
from labctl.lab.power.clients import WolSshBackend
from labctl.lab.power.model import (
    Action,
    MachineState,
    PowerOutcome,
    PowerReport,
    State,
    delivery_spread_wall,
    spread,
    verb_for,
)
from labctl.lab.power.registry import by_backend, make_backend

Selector = str | Sequence[str]


class Power:
    """The power service: built with the lab context and, for a lab with site agents, the link
    to them (the backend of machines an agent serves)."""

    def __init__(self, ctx: LabContext, agents: AgentPower | None = None):
        self.ctx = ctx
        self.agents = agents
        self._lock = threading.Lock()
        self._backends: dict[PowerKind, PowerBackend] = {}

    def backend(self, kind: PowerKind) -> PowerBackend:
        """The session's backend for ``kind`` (made on first use)."""
        with self._lock:
            b = self._backends.get(kind)
            if b is None:
                b = self._backends[kind] = make_backend(kind, self.ctx, self.agents)
            return b

    def _machines(self, selector: Selector) -> tuple[str, list[Machine]]:
        label = selector if isinstance(selector, str) else ",".join(selector)
        return label, self.ctx.machines(selector if isinstance(selector, str) else list(selector))

    # --- actions -------------------------------------------------------------------------------
    def on(self, selector: Selector, **kw: object) -> PowerReport:
        return self.act(Action.ON, selector, **kw)  # type: ignore[arg-type]

    def off(self, selector: Selector, *, force: bool = False, **kw: object) -> PowerReport:
        return self.act(Action.OFF, selector, force=force, **kw)  # type: ignore[arg-type]

    def reset(self, selector: Selector, **kw: object) -> PowerReport:
        return self.act(Action.RESET, selector, **kw)  # type: ignore[arg-type]

    def reboot(self, selector: Selector, **kw: object) -> PowerReport:
        return self.act(Action.REBOOT, selector, **kw)  # type: ignore[arg-type]

    def act(
        self,
        action: Action | str,
        selector: Selector,
        *,
        force: bool = False,
        progress: Callable[[PowerOutcome], object] | None = None,
        fire_at_wall: float | None = None,
    ) -> PowerReport:
        """Apply ``action`` to every machine ``selector`` names, all at once; never stops at the
        first failure. ``force``: power off without the OS shutting down. ``fire_at_wall``: fire
        at this ``time.time()`` instant, not as soon as armed (a site agent in a timed fan-out)."""
        action = Action(action)
        verb = verb_for(action, force)
        label, machines = self._machines(selector)
        clock, timeline = self.ctx.clock, self.ctx.timeline
        started = clock.now()
        groups = by_backend(machines)
        timeline.append(
            "power.request",
            label,
            action=action.value,
            machines=len(machines),
            force=force,
            backends=[k.value for k in groups],
        )
        outcomes: dict[str, PowerOutcome] = {}
        lock = threading.Lock()

        def done(o: PowerOutcome) -> None:
            with lock:
                if o.machine in outcomes:
                    return  # a backend reports each machine once; the first word stands
                outcomes[o.machine] = o
            timeline.append(
                "power.action" if o.ok else "power.error",
                o.machine,
                action=action.value,
                machine_kind=o.kind,
                backend=o.backend,
                ok=o.ok,
                detail=o.detail,
                **({"fix": o.fix} if o.fix else {}),
            )
            if progress is not None:
                progress(o)

        gate = Gate(len(groups)) if fire_at_wall is None else TimedGate(len(groups), fire_at_wall)
        crashes: dict[PowerKind, str] = {}  # what stopped a backend, e.g. a credential not set

        def run(kind: PowerKind, ms: list[Machine]) -> None:
            try:
                self.backend(kind).act(verb, ms, gate, done)
            except Exception as exc:  # reported per machine below, with this reason
                crashes[kind] = f"{type(exc).__name__}: {exc}"
                timeline.append("error", "", action=action.value, backend=kind.value, detail=crashes[kind])
            finally:
                gate.leave(kind.value)  # no-op once passed

        threads = [
            threading.Thread(target=run, args=(k, ms), name=f"power-{k.value}", daemon=True)
            for k, ms in groups.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for m in machines:  # a backend that died before reporting a machine still reports it
            if m.name not in outcomes:
                why = crashes.get(m.power_kind)
                detail = f"no outcome from the backend: {why}" if why else "no outcome from the backend"
                done(PowerOutcome(m.name, m.kind.value, False, detail, backend=m.power_kind.value))
        ordered = {m.name: outcomes[m.name] for m in machines}
        send_wall = spread(o.sent_wall for o in ordered.values() if o.ok) or 0.0
        delivery_wall = delivery_spread_wall(ordered.values())
        report = PowerReport(
            action.value,
            label,
            ordered,
            started,
            clock.now(),
            clock.to_lab_s(send_wall),
            send_wall,
            None if delivery_wall is None else clock.to_lab_s(delivery_wall),
            delivery_wall,
            scale=clock.scale,
            fire_at_wall=fire_at_wall,
            fired_wall=gate.fired_wall if isinstance(gate, TimedGate) else None,
        )
        timeline.append(
            "power.dispatch",
            label,
            action=action.value,
            machines=len(machines),
            ok=len(machines) - len(report.failed),
            failed=len(report.failed),
            spread_s=report.send_spread_lab_s,
            spread_wall_s=send_wall,
            send_spread_s=report.send_spread_lab_s,
            send_spread_wall_s=send_wall,
            delivery_spread_s=report.delivery_spread_lab_s,
            delivery_spread_wall_s=delivery_wall,
        )
        return report

    # --- state ---------------------------------------------------------------------------------
    def state(self, selector: Selector) -> dict[str, MachineState]:
        """The power state of each machine, read from its backend now (changes go to the timeline)."""
        _, machines = self._machines(selector)
        out: dict[str, MachineState] = {}
        lock = threading.Lock()

        def read(item: tuple[PowerKind, list[Machine]]) -> None:
            states = self.backend(item[0]).states(item[1])
            with lock:
                out.update(states)

        groups = list(by_backend(machines).items())
        if groups:
            with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="power-state") as pool:
                for f in [pool.submit(read, g) for g in groups]:
                    f.result()
        result = {
            m.name: out.get(m.name) or MachineState(m.name, m.kind.value, State.UNKNOWN, "not read")
            for m in machines
        }
        for m in machines:
            st = result[m.name]
            if st.state is not State.UNKNOWN:
                self.ctx.state_changed(m, st.state.value, st.source)
        return result

    def _clients(self) -> WolSshBackend:
        return cast(WolSshBackend, self.backend(PowerKind.WOL_SSH))

    def device_status(self) -> tuple[dict[str, DeviceInfo], dict[str, str]]:
        """Every client the streaming servers know (by name and by MAC), and per-server errors."""
        return self._clients().device_status()

    def client_states(self, machines: list[Machine]) -> dict[str, MachineState]:
        """Clients' states from the streaming servers' device status, else their SSH port."""
        return self._clients().states(machines)
