"""The lab twin behind the simulated vCenter: two threads in the simulator process.

- **events**: long-polls labctl-vcsim's journal (power-on, power-off, reset, suspend, guest reboot
  and shutdown, host maintenance) and applies each operation to the twin in order, batched:
  ``power_many`` for a storm's power-ons; RebootGuest is the twin's RESTART (a real guest reboot:
  Tools go down and come back when the guest is up again), ShutdownGuest its SHUTDOWN (the VM
  powers off when the guest has shut down), EnterMaintenanceMode ``set_host_maintenance``.
- **state**: about once a lab second (within 50-250 ms wall), reads the twin as columns
  (:mod:`.columns`) and pushes what changed: power the twin decided (a guest that shut down),
  VMware Tools and IP, the host each desktop runs on (vMotion away from a host in maintenance),
  stunned VMs and datastore space; at every 20 lab-second boundary, the cumulative performance
  counters of every VM, host and datastore, from which labctl-vcsim serves QueryPerf.

Each push carries the journal seq the twin has applied, read under the same lock as the state, so
labctl-vcsim can tell a state that predates a VM's last power operation (:mod:`.push`).
The name is historical: it started as the updater that marked guests ready.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from labctl.clock import LabClock
from labctl.inventory.model import VCenter
from labctl.sim.twin.interface import LabTwin, PowerAction
from labctl.sim.vcenter.columns import TwinReader
from labctl.sim.vcenter.link import JournalEvent, LinkError, TwinLink
from labctl.sim.vcenter.push import StatePusher, zero_body
from labctl.sim.vcenter.topology import Topology

log = logging.getLogger(__name__)

# vCenter operations as the twin's power actions (interface.VdiTwin's table)
ACTIONS: dict[str, PowerAction] = {
    "powerOn": PowerAction.ON,
    "powerOff": PowerAction.FORCE_OFF,
    "suspend": PowerAction.FORCE_OFF,  # a suspended desktop runs nothing
    "reset": PowerAction.FORCE_RESTART,
    "rebootGuest": PowerAction.RESTART,
    "shutdownGuest": PowerAction.SHUTDOWN,
}
EVENT_WAIT_S = 1.0  # long poll of the journal, wall seconds


@dataclass
class UpdaterStats:
    connected: bool = False
    events: int = 0
    pushes: int = 0
    vm_updates: int = 0
    snapshots: int = 0
    errors: int = 0
    last_error: str = ""
    last_push_ms: float = 0.0


class GuestUpdater:
    def __init__(
        self,
        vc: VCenter,
        topo: Topology,
        *,
        password: str,
        twin: LabTwin,
        clock: LabClock,
        ca_file: str | None,
        poll_lab_s: float = 1.0,
    ):
        self.vc = vc
        self.topo = topo
        self.twin = twin
        self.clock = clock
        self.poll_wall_s = min(0.25, max(0.05, clock.to_wall_s(poll_lab_s)))
        self.link = TwinLink(topo.host, topo.port, vc.user, password, ca_file)
        self.reader = TwinReader(twin, topo)
        self.pusher = StatePusher(topo)
        self._lock = threading.Lock()  # applying events vs reading state: a push's ack matches its state
        self._applied = 0  # journal seq applied to the twin
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._stats = UpdaterStats()
        self._last_guest: Any = None

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self, connect_timeout_s: float = 30.0) -> None:
        """Reach labctl-vcsim's link (retrying while it starts), then start both threads."""
        deadline = time.monotonic() + connect_timeout_s
        last: Exception | None = None
        while not self._stop.is_set():
            try:
                batch = self.link.events(0, 0)
                break
            except LinkError as exc:  # not listening yet: it builds its inventory first
                last = exc
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"vCenter {self.vc.name}: the simulated vCenter's twin link did not answer within "
                        f"{connect_timeout_s:g} s: {last}"
                    ) from None
                time.sleep(0.05)
        else:
            return
        self._apply(batch.events, batch.last)
        self._stats.connected = True
        self._push_once()  # the twin's state from the start (and its first counters)
        for target, name in ((self._events_loop, "events"), (self._state_loop, "state")):
            t = threading.Thread(target=target, name=f"vcenter-{name}-{self.vc.name}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=EVENT_WAIT_S + 3.0)
        self._threads.clear()
        self.link.close()

    def stats(self) -> dict[str, Any]:
        s = self._stats
        g = self._last_guest
        return {
            "connected": s.connected,
            "vms": len(self.topo.vms),
            "twin": self.reader.kind,
            "guests_ready": int((g.tools & g.power_on).sum()) if g is not None else 0,
            "powered_on": int(g.power_on.sum()) if g is not None else 0,
            "journal_applied": self._applied,
            "events": s.events,
            "pushes": s.pushes,
            "vm_updates": s.vm_updates,
            "snapshots": s.snapshots,
            "last_push_ms": round(s.last_push_ms, 1),
            "errors": s.errors,
            "last_error": s.last_error,
        }

    # --- journal -> twin ------------------------------------------------------------------------
    def _events_loop(self) -> None:
        while not self._stop.is_set():
            try:
                batch = self.link.events(self._applied, EVENT_WAIT_S)
            except LinkError as exc:
                self._error(str(exc))
                self._stop.wait(0.5)
                continue
            if batch.lost:
                self._error(
                    f"journal events before {batch.events[0].seq if batch.events else batch.last} were lost"
                )
            self._apply(batch.events, batch.last)
        self.link.close()

    def _apply(self, events: tuple[JournalEvent, ...], last: int) -> None:
        """Apply journal events in order; consecutive power actions of one kind go as one call."""
        with self._lock:
            run: list[str] = []
            run_op = ""
            for e in events:
                if e.seq <= self._applied:
                    continue
                if e.op in ACTIONS and e.op == run_op:
                    run.append(e.vm)
                    continue
                self._power(run_op, run)
                run, run_op = ([e.vm], e.op) if e.op in ACTIONS else ([], "")
                if e.op in ("enterMaintenance", "exitMaintenance"):
                    self._maintenance(e.host, e.op == "enterMaintenance")
                elif e.op not in ACTIONS:
                    self._error(f"journal event {e.seq}: unknown operation {e.op!r}")
            self._power(run_op, run)
            self._stats.events += sum(1 for e in events if e.seq > self._applied)
            self._applied = max(self._applied, last)

    def _power(self, op: str, vms: list[str]) -> None:
        if not vms:
            return
        action = ACTIONS[op]
        many = getattr(self.twin, "power_many", None)
        try:
            if callable(many) and self.reader.kind != "plain":
                many(vms, action)
            else:
                for vm in vms:
                    self.twin.power(vm, action)
        except Exception as exc:  # a VM the twin does not know: the rest still happened or will
            self._error(f"twin {action.value} of {len(vms)} VM(s) ({vms[0]}...): {exc}")
        log.debug("vcenter %s: %s %d VM(s) -> twin %s", self.vc.name, op, len(vms), action.value)

    def _maintenance(self, host: str, on: bool) -> None:
        setter = getattr(self.twin, "set_host_maintenance", None)
        if not callable(setter):
            return
        try:
            setter(host, on)
        except Exception as exc:
            self._error(f"twin maintenance of {host}: {exc}")
        log.info("vcenter %s: host %s %s maintenance", self.vc.name, host, "enters" if on else "leaves")

    # --- twin -> vCenter ------------------------------------------------------------------------
    def _state_loop(self) -> None:
        while not self._stop.wait(self.poll_wall_s):
            self._push_once()
        self.link.close()

    def _push_once(self) -> None:
        try:
            with self._lock:
                ack = self._applied
                guest = self.reader.guest()
                perf = None
                if self.pusher.due(guest.lab_time_s):
                    perf = self.reader.perf()
            self._last_guest = guest
            pending = self.pusher.build(
                guest, ack, perf, self.clock, reports_hosts=guest.maintenance is not None
            )
            if pending is None:
                return
            t0 = time.perf_counter()
            start = self.reader.start_lab_s
            if perf is not None and self.pusher.last_boundary == -math.inf and start is not None:
                if start < perf.lab_time_s:
                    self.link.push({"ack": ack, "perf": zero_body(perf, start, self.clock)})
            answer = self.link.push(pending.body)
            self._stats.last_push_ms = (time.perf_counter() - t0) * 1000
        except LinkError as exc:
            self._error(str(exc))
            return
        except Exception as exc:  # the twin failed to answer: say so, try again next tick
            log.exception("vcenter %s: reading the twin", self.vc.name)
            self._error(f"reading the twin: {type(exc).__name__}: {exc}")
            return
        self.pusher.taken(pending, answer.ignored)
        self._stats.pushes += 1
        self._stats.vm_updates += len(pending.body["vms"])
        if perf is not None:
            self._stats.snapshots += 1

    def _error(self, message: str) -> None:
        log.warning("vcenter %s: %s", self.vc.name, message)
        self._stats.errors += 1
        self._stats.last_error = message
