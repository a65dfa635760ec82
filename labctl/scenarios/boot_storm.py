"""The boot storm (2007 paper, test scenario 1): wake a group from S5 at once, watch it boot.

Per cell: every client of the group starts in S5 (checked), the whole group is woken in one burst,
the storm window (6 lab minutes by default) runs from the first magic packet, each client's boot
time and session retries are read from the streaming server at the end of the window, and the
orchestrator's own time-to-ready is measured beside them. The plan records the servers' counters
over the window and restores the clients to S5 afterwards.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from labctl.inventory.model import Machine
from labctl.lab.session import LabSession
from labctl.records.samples import Event
from labctl.scenarios.base import Progress, ProgressHook, no_progress
from labctl.scenarios.common import ClientBoot, client_boots, ensure_off


@dataclass(frozen=True)
class BootStormResult:
    group_size: int
    clients: tuple[ClientBoot, ...]
    storm_start_ts: float  # lab time of the wake burst
    window_end_ts: float
    wake_spread_s: float  # lab seconds between the first and last magic packet
    wake_failed: dict[str, str] = field(default_factory=dict)

    @property
    def never_ready(self) -> list[str]:
        return [c.name for c in self.clients if c.outcome != "ready"]

    @property
    def boot_times_s(self) -> list[float]:
        return [c.boot_time_s for c in self.clients if c.boot_time_s is not None]

    @property
    def retries(self) -> list[int]:
        return [c.retries for c in self.clients if c.retries is not None]


def run_boot_storm(
    session: LabSession,
    group: list[Machine],
    *,
    window_s: float = 360.0,
    ready_timeout_s: float | None = None,
    prepare_timeout_s: float = 300.0,
    progress: ProgressHook = no_progress,
) -> BootStormResult:
    """Wake ``group`` at once from S5 and follow it through the storm window.

    ``ready_timeout_s`` (default: the window) bounds how long the orchestrator waits for clients;
    a client not up by then is a recorded outcome (``timeout``), not an exception.
    """
    clock = session.clock
    progress(Progress("prepare", 0, len(group)))
    ensure_off(session, group, prepare_timeout_s)

    up = 0
    lock = threading.Lock()
    members = {m.name for m in group}
    window_end = [0.0]

    def on_event(ev: Event) -> None:
        nonlocal up
        if ev.kind == "ready" and ev.target in members:
            with lock:
                up += 1
                n = up
            progress(Progress("wake", n, len(group), max(0.0, window_end[0] - clock.now())))

    unsubscribe = session.timeline.subscribe(on_event)
    try:
        start = clock.now()
        window_end[0] = start + window_s
        progress(Progress("wake", 0, len(group), window_s))
        report = session.power.on([m.name for m in group])
        wake_failed = {n: o.detail for n, o in report.failed.items()}
        deadline = start + (ready_timeout_s if ready_timeout_s is not None else window_s)
        readiness = session.wait_ready(group, deadline=deadline, expect_boot=True)
        # the window is fixed from the wake burst, whatever the clients did
        while (left := window_end[0] - clock.now()) > 0:
            progress(Progress("window", up, len(group), left))
            clock.sleep(min(left, 10.0))
        progress(Progress("window", up, len(group), 0.0))
    finally:
        unsubscribe()

    devices, _errors = session.power.device_status()
    clients = client_boots(group, readiness, devices, start, wake_failed)
    return BootStormResult(
        group_size=len(group),
        clients=clients,
        storm_start_ts=start,
        window_end_ts=window_end[0],
        wake_spread_s=report.spread_lab_s,
        wake_failed=wake_failed,
    )
