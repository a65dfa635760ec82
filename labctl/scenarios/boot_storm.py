"""The boot storm (2007 paper, test scenario 1): wake a group from S5 at once, watch it boot.

One cell, end to end:

1. **prepare**: bring every client of the plan's group (``clients``) to S5 and check it, so no
   client-side cache helps and no client outside the storm loads the server;
2. **window**: wake the first ``group_size`` clients in one burst (the send spread is recorded),
   follow them until they are up, and keep the window open for ``window_s`` lab seconds from the
   burst whatever the clients do; meanwhile check that nobody else powers the lab's clients (a
   change this run did not make is a ``power.unexpected`` event and fails the cell as a lab fault);
   at the end read each client's boot time and session retries from the streaming server;
3. **restore** (always, also after a failure or an interrupt): the group back to S5.

The servers' counters are recorded around the cell by the runner; the criteria judge them over the
window. :class:`BootStormResult` writes the cell summary: one client outcome per woken client, the
wake burst, the phases, the restore, and the entities the criteria name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from labctl.inventory.model import Lab
from labctl.lab.power import State
from labctl.lab.session import LabSession
from labctl.lab.strategy import Goal
from labctl.records.run_record import Window
from labctl.records.samples import Event
from labctl.scenarios.base import CellContext, Progress, Scenario
from labctl.scenarios.common import (
    Phases,
    StormResult,
    cell_entities,
    client_outcomes,
    healthy,
    restore,
    unread_servers,
)
from labctl.scenarios.settings import LabSeconds, ScenarioSettings

ROLE = "storm"


class BootStormSettings(ScenarioSettings):
    """How a boot-storm cell runs (``testplans/boot_storm.params.yaml``)."""

    window_s: LabSeconds = Field(360.0, description="the storm window from the wake burst, lab seconds")
    ready_timeout_s: LabSeconds = Field(
        360.0, description="from the burst: a client not up by then is a recorded outcome (timeout)"
    )
    prepare_timeout_s: LabSeconds = Field(300.0, description="bringing every client to S5, lab seconds")
    watch_interval_s: LabSeconds = Field(
        10.0, le=600.0, description="how often the window checks that nobody else powers the clients"
    )

    def lab_problems(self, lab: Lab) -> list[str]:
        return self.group_problems(lab, 1, "clients")


@dataclass(kw_only=True)
class BootStormResult(StormResult):
    """What a boot-storm cell measured; :meth:`summary` writes it as the cell summary."""

    group_size: int
    settings: BootStormSettings

    @property
    def never_ready(self) -> list[str]:
        return [n for n, c in sorted(self.clients.items()) if c.outcome != "ready"]

    def criteria_variables(self) -> dict[str, Any]:
        return {"group_size": self.group_size}

    def extra(self) -> dict[str, float | int | str | bool | None]:
        return {"window_s": self.settings.window_s, "never_ready": len(self.never_ready)}


class BootStorm(Scenario):
    """Wake ``group_size`` clients of the ``clients`` group from S5 at once (see the module doc)."""

    name = "boot_storm"
    title = "boot storm"

    def __init__(self, group_size: int, settings: BootStormSettings | None = None):
        self.group_size = group_size
        self.settings = settings or BootStormSettings()

    def parameters(self) -> dict[str, Any]:
        return {"group_size": self.group_size}

    def sample_interval_s(self) -> float:
        return self.settings.sample_interval_s

    def poll_interval_s(self) -> float:
        return self.settings.poll_interval_s

    def run(self, lab: LabSession, ctx: CellContext) -> BootStormResult:
        st = self.settings
        everyone, excluded = healthy(lab, lab.machines(st.clients), st.health_check)
        group = everyone[: self.group_size]  # the first healthy ones: a dead NIC does not shrink the cell
        phases = Phases(lab.clock.now)
        result = BootStormResult(
            group_size=self.group_size, settings=st, entities=cell_entities(lab.lab), phases=phases.items
        )
        if len(group) < self.group_size:  # the plan's parameters are checked against the lab first
            result.clients = dict(excluded)
            result.prepare_failed = (
                f"group {st.clients!r} has {len(everyone)} healthy clients, the cell needs {self.group_size}"
                + (f" ({len(excluded)} quarantined: see `labctl quarantine list`)" if excluded else "")
            )
            return result
        try:
            if not ctx.stop.is_set():
                ctx.progress(Progress("prepare", 0, len(group)))
                with phases(ctx, "prepare", f"bring all {len(everyone)} clients to S5 and check it"):
                    prep = lab.strategy.bring(
                        everyone, Goal.OFF, timeout_s=st.prepare_timeout_s, stop=ctx.stop
                    )
                if not prep.ok and not ctx.stop.is_set():
                    result.prepare_failed = f"{prep.describe()} (check that they answer SSH `shutdown /s`, or power them off by hand)"
            if not ctx.stop.is_set() and not result.prepare_failed:
                title = f"wake {len(group)} clients at once; sample the {st.window_s:g} s window"
                with phases(ctx, "window", title):
                    self._storm(lab, ctx, everyone, group, result)
        finally:
            result.stopped = ctx.stop.is_set()
            with phases(ctx, "restore", f"restore: the {len(group)} clients back to S5"):
                ctx.progress(Progress("restore"))
                result.restore = restore(
                    lab, {m.name: State.OFF for m in group}, st.restore_timeout_s, ctx.abort
                )
            result.clients.update(excluded)
        return result

    def _storm(
        self, lab: LabSession, ctx: CellContext, everyone: list, group: list, result: BootStormResult
    ) -> None:
        st, clock = self.settings, lab.clock
        members = {m.name for m in group}
        up = 0
        lock = threading.Lock()
        start = clock.now()
        window_end = start + st.window_s

        def on_event(ev: Event) -> None:
            nonlocal up
            if ev.kind == "ready" and ev.target in members:
                with lock:
                    up += 1
                    n = up
                ctx.progress(Progress("wake", n, len(group), max(0.0, window_end - clock.now())))

        unsubscribe = lab.timeline.subscribe(on_event)
        try:
            ctx.progress(Progress("wake", 0, len(group), st.window_s))
            report = lab.power.on([m.name for m in group])
            result.window = Window(start_ts_s=start, end_ts_s=window_end)
            result.actions = report.group_actions()
            # the prepare saw every client in S5 just before the burst, so the first time one is seen up
            # it is this boot (waiting to see it down first would miss a boot that is over before the
            # first poll on a loaded controller)
            readiness = lab.wait_ready(group, deadline=start + st.ready_timeout_s, stop=ctx.stop)
            # from here on the woken clients stay up and the others stay off, unless someone else acts
            expected = {n: Goal.ON for n, r in readiness.items() if r.ready}
            expected.update({m.name: Goal.OFF for m in everyone if m.name not in members})
            reported: set[str] = set()
            # the window is fixed from the wake burst, whatever the clients did
            while (left := window_end - clock.now()) > 0 and not ctx.stop.is_set():
                ctx.progress(Progress("window", up, len(group), left))
                if clock.sleep(min(left, st.watch_interval_s), ctx.stop):
                    # a power.unexpected event each: the runner fails the cell as a lab fault
                    lab.strategy.unexpected(expected, reported)
            ctx.progress(Progress("window", up, len(group), max(0.0, window_end - clock.now())))
        finally:
            unsubscribe()
        if ctx.stop.is_set():
            result.window = Window(start_ts_s=start, end_ts_s=min(clock.now(), window_end))
        # read at the end of the window: the streaming software's own figures for this boot
        devices, errors = lab.power.device_status()
        result.unread = dict(errors)
        result.clients = client_outcomes(
            group,
            readiness,
            devices,
            start,
            role=ROLE,
            power=report,
            unread=unread_servers(errors),
        )
