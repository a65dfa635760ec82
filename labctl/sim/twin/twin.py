"""The physical lab twin behind the simulated endpoints: :class:`PhysicalTwin` implements LabTwin.

Live mode: endpoints call it from several threads; every call takes the lock, moves the model
lazily to ``clock.now()`` (the lab's scaled clock) and answers from its state. Moving is cheap when
little happens (a quiet lab is one jump) and the model is only stepped when at least
``min_advance_s`` of lab time passed, so endpoints polling counters a few times per lab second
cost next to nothing.

Fast-forward mode: give it a :class:`FastForwardClock` and call ``clock.advance(s)``; nothing waits
on the wall clock (tests and calibration use this, or :func:`labctl.sim.twin.storm.run_storm`).
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from labctl.clock import LabClock
from labctl.inventory.faults import FaultKind
from labctl.inventory.model import Lab, MachineKind
from labctl.sim.faults import FaultBook
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.interface import (
    CopyJob,
    CopyLocation,
    DeviceStatus,
    LunCounters,
    NicCounters,
    PowerAction,
    PowerState,
    ServerCounters,
    VolumeCounters,
)
from labctl.sim.twin.model import CopyRecord, TwinModel
from labctl.sim.twin.workload import OS_UP, SESSION

BLOCK = 512.0
# A live twin follows a wall-driven clock (60x in the simulated lab). If stepping the model at its
# usual resolution would take more than CATCH_UP_SHARE of the wall time it has to cover (the lab
# process is starved of CPU), the steps are coarsened instead: every endpoint waits while the model
# steps under the lock, and a lab that stalls for seconds (minutes of lab time at 60x) loses its
# samples and delays every answer, which distorts the results far more than 0.2-1 s steps do.
CATCH_UP_SHARE = 0.5
CATCH_UP_MAX_DT_S = 1.0
REFERENCE_DT_S = 0.1  # the model's step while clients boot


@dataclass(frozen=True)
class FastForwardClock(LabClock):
    """A lab clock that only moves when told to: ``advance(s)``, or ``sleep(s)`` (which advances)."""

    start_s: float = 1_180_000_000.0  # November 2007, lab time
    _now: list[float] = field(default_factory=list, compare=False, repr=False)

    def now(self) -> float:
        if not self._now:
            self._now.append(self.start_s)
        return self._now[0]

    def advance(self, lab_seconds: float) -> float:
        self.now()
        self._now[0] += max(0.0, lab_seconds)
        return self._now[0]

    def sleep(self, lab_seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is not None and stop.is_set():
            return False
        self.advance(lab_seconds)
        return True


class PhysicalTwin:
    """The lab twin: a queueing model of the lab, answering the endpoints' questions."""

    def __init__(
        self,
        lab: Lab,
        clock: LabClock,
        faults: FaultBook | None = None,
        *,
        min_advance_s: float = 0.05,
        warm_vdisk_cache: bool = False,
    ):
        self.lab = lab
        self.clock = clock
        self.faults = faults
        self.min_advance_s = min_advance_s
        self._lock = threading.RLock()
        self.model = TwinModel(lab, start_t=clock.now())
        if warm_vdisk_cache:
            from labctl.sim.twin.storm import warm_caches

            warm_caches(self.model)
        self._ids = itertools.count(1)
        self._wall_driven = not isinstance(clock, FastForwardClock)
        self._step_wall_s = 0.0  # measured wall time per model step (moving average)
        self._by_mac = {m.mac.lower(): m.name for m in lab.machines.values() if m.mac}
        self._client_macs = {m.name: (m.mac or "", m.ip) for m in lab.clients}

    # --- time ----------------------------------------------------------------------------------
    def _sync(self) -> None:
        now = self.clock.now()
        lag = now - self.model.t
        if lag < self.min_advance_s:
            return
        if not self._wall_driven:
            self.model.advance_to(now)
            return
        # steps of dt cost step_wall_s each and cover dt / scale of wall time: to spend at most
        # CATCH_UP_SHARE of it stepping, dt >= step_wall_s x scale / CATCH_UP_SHARE
        min_dt = None
        affordable_dt = self._step_wall_s * self.clock.scale / CATCH_UP_SHARE
        if affordable_dt > REFERENCE_DT_S:
            min_dt = min(CATCH_UP_MAX_DT_S, affordable_dt)
        steps, t = self.model.steps, time.perf_counter()
        self.model.advance_to(now, min_dt=min_dt)
        n = self.model.steps - steps
        if n:
            per = (time.perf_counter() - t) / n
            self._step_wall_s = per if self._step_wall_s == 0.0 else 0.8 * self._step_wall_s + 0.2 * per

    def advance(self) -> float:
        """Bring the model to the clock's now (fast-forward users call it after ``clock.advance``)."""
        with self._lock:
            self.model.advance_to(self.clock.now())
            return self.model.t

    # --- power ---------------------------------------------------------------------------------
    def _client(self, machine: str) -> int | None:
        return self.model.client_index.get(machine)

    def _known(self, machine: str) -> None:
        if machine not in self.model.client_index and machine not in self.model.boxes:
            self.lab.machine(machine)  # raises UnknownTargetError naming the inventory
            raise KeyError(machine)

    def power_state(self, machine: str) -> PowerState:
        with self._lock:
            self._sync()
            i = self._client(machine)
            if i is not None:
                return self.model.client_power_state(i)
            self._known(machine)
            return self.model.boxes[machine].power

    def power(self, machine: str, action: PowerAction) -> None:
        with self._lock:
            self._sync()
            if self._client(machine) is None:
                self._known(machine)
            self.model.power(machine, PowerAction(action))

    def wake_on_lan(self, mac: str) -> str | None:
        name = self._by_mac.get(mac.lower().replace("-", ":"))
        if name is None:
            return None
        if self.faults is not None and self.faults.active(FaultKind.CLIENT_NEVER_WAKES, name):
            return name  # the packet arrived; the machine ignores it
        with self._lock:
            self._sync()
            if self.power_state(name) is PowerState.OFF:
                self.model.power(name, PowerAction.ON)
        return name

    def is_os_up(self, machine: str) -> bool:
        with self._lock:
            self._sync()
            i = self._client(machine)
            if i is not None:
                return int(self.model.phase[i]) in OS_UP
            self._known(machine)
            return self.model.boxes[machine].os_up

    def boot_count(self, machine: str) -> int:
        with self._lock:
            self._sync()
            i = self._client(machine)
            if i is not None:
                return int(self.model.boot_count[i])
            self._known(machine)
            return self.model.boxes[machine].boot_count

    # --- servers -------------------------------------------------------------------------------
    def server_counters(self, server: str) -> ServerCounters:
        with self._lock:
            self._sync()
            m = self.model
            node = m.topo.servers.get(server)
            if node is None:
                self.lab.machine(server)
                raise KeyError(f"{server} has no server hardware in the inventory")
            nics = tuple(
                NicCounters(
                    name,
                    bytes_sent=float(m.busy_s[out] * node.nic_rate),
                    bytes_received=float(m.busy_s[inn] * node.nic_rate),
                    bandwidth_bps=node.hw.nics.speed_gbps * 1e9,
                )
                for name, out, inn in zip(node.nic_names, node.nic_out, node.nic_in, strict=True)
            )
            vols = tuple(
                VolumeCounters(
                    hwm.volume_instance(v.index, v.volume),
                    transfers=float(m.st_reads[v.station] + m.st_writes[v.station]),
                    reads=float(m.st_reads[v.station]),
                    writes=float(m.st_writes[v.station]),
                    bytes_read=float(m.st_bytes_r[v.station]),
                    bytes_written=float(m.st_bytes_w[v.station]),
                    queue_length_integral=float(m.q_integral[v.station]),
                    # Little's law: the sum of response times is the integral of requests present
                    response_time_sum_s=float(m.q_integral[v.station]),
                )
                for v in node.volumes
            )
            total = node.hw.ram_gb * 1024.0
            return ServerCounters(
                lab_time_s=m.t,
                cpu_cores=hwm.cores(node.hw),
                cpu_busy_core_s=float(m.busy_s[node.cpu]),
                memory_total_mb=total,
                memory_available_mb=total - m.memory_used_mb(server),
                nics=nics,
                volumes=vols,
            )

    def power_consumed_watts(self, server: str) -> float:
        with self._lock:
            self._sync()
            m, p = self.model, self.lab.twin
            box = m.boxes.get(server)
            if box is None:
                self._known(server)
                return 0.0
            if box.power is PowerState.OFF:
                return p.server_off_watts
            node = m.topo.servers.get(server)
            if node is None or not box.os_up:
                return p.server_idle_watts
            util = min(1.0, float(m.util[node.cpu]) + p.server_idle_cpu_pct / 100.0)
            return p.server_idle_watts + (p.server_max_watts - p.server_idle_watts) * util

    def device_status(self, streaming_server: str) -> tuple[DeviceStatus, ...]:
        with self._lock:
            self._sync()
            m = self.model
            out = []
            for i, name in enumerate(m.topo.client_names):
                if m.topo.client_server[i] != streaming_server:
                    continue
                ph = int(m.phase[i])
                active = ph in SESSION
                booted = ph in OS_UP and m.boot_count[i] > 0
                boot = float(m.last_boot_s[i]) if booted and np.isfinite(m.last_boot_s[i]) else None
                mac, ip = self._client_macs.get(name, ("", None))
                out.append(DeviceStatus(name, mac, active, int(m.retries[i]), boot, streaming_server, ip))
            return tuple(out)

    # --- workloads -----------------------------------------------------------------------------
    def start_copy(
        self, client: str, source: CopyLocation, destination: CopyLocation, size_bytes: int
    ) -> CopyJob:
        with self._lock:
            self._sync()
            if self._client(client) is None:
                self.lab.machine(client)
                raise KeyError(f"{client} is not a streaming client")
            rec = self.model.start_copy(
                f"copy-{next(self._ids)}",
                client,
                CopyLocation(source),
                CopyLocation(destination),
                int(size_bytes),
            )
            return _job(rec, self.model.topo.client_names)

    def copy_status(self, job_id: str) -> CopyJob:
        with self._lock:
            self._sync()
            rec = self.model.copies[job_id]
            running = rec.finished is None and rec.failed is None
            eta = self.model.copy_eta_s(rec.client) if running else None
            return _job(rec, self.model.topo.client_names, eta)

    # --- storage arrays ------------------------------------------------------------------------
    def lun_counters(self, array: str) -> tuple[LunCounters, ...]:
        """Unity LUN counters from the virtual desktops' I/O (2012 paper's per-phase IOPS).

        The VMs' I/O is spread evenly over every LUN of every array; each LUN is owned by one
        storage processor (alternating), the peer reports no I/O for it.
        """
        with self._lock:
            self._sync()
            arr = self.lab.storage[array]
            all_luns = [(a, lun) for a, spec in self.lab.storage.items() for lun in spec.luns]
            share = 1.0 / len(all_luns) if all_luns else 0.0
            io = self.model.vm_io
            out = []
            for k, lun in enumerate(arr.luns):
                owner = "spa" if k % 2 == 0 else "spb"
                for sp in ("spa", "spb"):
                    f = share if sp == owner else 0.0
                    out.append(
                        LunCounters(
                            lun,
                            sp,
                            reads=io["reads"] * f,
                            writes=io["writes"] * f,
                            read_blocks=io["read_bytes"] * f / BLOCK,
                            write_blocks=io["write_bytes"] * f / BLOCK,
                            total_io_time_us=io["busy_us"] * f,
                        )
                    )
            return tuple(out)

    # --- for tests and tools -------------------------------------------------------------------
    def machines_of_kind(self, kind: MachineKind) -> list[str]:
        return [m.name for m in self.lab.machines.values() if m.kind is kind]


def _job(rec: CopyRecord, names: list[str], eta_lab_s: float | None = None) -> CopyJob:
    return CopyJob(
        rec.job_id,
        names[rec.client],
        rec.source,
        rec.destination,
        rec.size_bytes,
        rec.started,
        rec.finished,
        rec.failed,
        eta_lab_s,
    )
