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
    ArrayControllerCounters,
    ArrayTierCounters,
    ArrayVolumeCounters,
    CopyJob,
    CopyLocation,
    DatastorePerf,
    DesktopState,
    DeviceStatus,
    HostPerf,
    LunCounters,
    NicCounters,
    OperationTiming,
    PowerAction,
    PowerState,
    ServerCounters,
    SessionInfo,
    SessionRefused,
    VmPerf,
    VolumeCounters,
)
from labctl.sim.twin.model import CopyRecord, TwinModel
from labctl.sim.twin.storm import warm_caches
from labctl.sim.twin.vdi import views
from labctl.sim.twin.vdi.implicit import vdi_of
from labctl.sim.twin.vdi.model import VdiModel
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
    """The lab twin: a queueing model of the lab, answering the endpoints' questions.

    Two models on one clock: :class:`TwinModel` (streaming clients and Windows servers) and, when
    the lab has VMs, :class:`VdiModel` (desktops, ESXi hosts, PVS servers, arrays). It implements
    :class:`~labctl.sim.twin.interface.LabTwin` and :class:`~labctl.sim.twin.interface.VdiTwin`.
    """

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
            warm_caches(self.model)
        self._ids = itertools.count(1)
        self._wall_driven = not isinstance(clock, FastForwardClock)
        self._step_wall_s = 0.0  # measured wall time per model step (moving average)
        self._by_mac = {m.mac.lower(): m.name for m in lab.machines.values() if m.mac}
        self._client_macs = {m.name: (m.mac or "", m.ip) for m in lab.clients}
        vdi = vdi_of(lab)
        delays = tuple(f.after_s for f in lab.faults)
        self.vdi = VdiModel(vdi, clock.now(), faults, delays) if vdi is not None and vdi.placement else None
        self._desktops: dict[str, int] = self.vdi.topo.index if self.vdi is not None else {}
        self._desktop_ips: list[str | None] = (
            [lab.machines[n].ip if n in lab.machines else None for n in self.vdi.topo.names]
            if self.vdi
            else []
        )

    # --- time ----------------------------------------------------------------------------------
    def _sync(self) -> None:
        now = self.clock.now()
        if self.vdi is not None and now - self.vdi.t >= self.min_advance_s:
            self.vdi.advance_to(now)
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
            if self.vdi is not None:
                self.vdi.advance_to(self.clock.now())
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
            d = self._desktops.get(machine)
            if d is not None and self.vdi is not None:
                return views.power_state(self.vdi, d)
            i = self._client(machine)
            if i is not None:
                return self.model.client_power_state(i)
            self._known(machine)
            return self.model.boxes[machine].power

    def power(self, machine: str, action: PowerAction) -> None:
        with self._lock:
            self._sync()
            if machine in self._desktops:
                self._power_desktops([self._desktops[machine]], PowerAction(action))
                return
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
            d = self._desktops.get(machine)
            if d is not None and self.vdi is not None:
                return bool(self.vdi.os_up()[d])
            i = self._client(machine)
            if i is not None:
                return int(self.model.phase[i]) in OS_UP
            self._known(machine)
            return self.model.boxes[machine].os_up

    def boot_count(self, machine: str) -> int:
        with self._lock:
            self._sync()
            d = self._desktops.get(machine)
            if d is not None and self.vdi is not None:
                return int(self.vdi.boot_count[d])
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
        """Unity LUN counters per storage processor, from the VDI twin's array volumes."""
        with self._lock:
            self._sync()
            spec = self.lab.storage[array]  # an unknown array is a KeyError, as before
            a = self._array(array)
            if a is None or self.vdi is None:  # no desktop uses it: its LUNs stand idle
                return tuple(
                    LunCounters(lun, sp, 0.0, 0.0, 0.0, 0.0, 0.0)
                    for lun in spec.luns
                    for sp in ("spa", "spb")
                )
            return views.lun_counters(self.vdi, a)

    # --- virtual desktops (VdiTwin) ----------------------------------------------------------------
    def _vdi_model(self) -> VdiModel:
        if self.vdi is None:
            raise KeyError(f"lab {self.lab.name} has no virtual desktops (no VMs in {self.lab.source_file})")
        return self.vdi

    def _desktop(self, vm: str) -> int:
        d = self._desktops.get(vm)
        if d is None:
            self.lab.machine(vm)  # raises UnknownTargetError naming the inventory
            raise KeyError(f"{vm} is not a desktop VM of the lab")
        return d

    def _array(self, array: str) -> int | None:
        if self.vdi is None:
            return None
        return next((k for k, am in enumerate(self.vdi.topo.arrays) if am.hw.name == array), None)

    def _known_array(self, array: str) -> int:
        a = self._array(array)
        if a is None:
            raise KeyError(f"{array}: no such array in the VDI lab (arrays: {', '.join(self.lab.storage)})")
        return a

    def _power_desktops(self, idx: list[int], action: PowerAction) -> None:
        m = self._vdi_model()
        arr = np.asarray(idx, dtype=np.int64)
        if action is PowerAction.ON:
            m.power_on(arr)
        elif action is PowerAction.FORCE_OFF:
            m.force_off(arr)
        elif action is PowerAction.SHUTDOWN:
            m.shutdown(arr, restart=False)
        elif action is PowerAction.RESTART:
            m.shutdown(arr, restart=True)
        else:  # FORCE_RESTART, POWER_CYCLE
            m.reset(arr)

    def power_many(self, vms: list[str], action: PowerAction) -> None:
        with self._lock:
            self._sync()
            self._power_desktops([self._desktop(v) for v in vms], PowerAction(action))

    def desktops(self) -> tuple[DesktopState, ...]:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            return views.desktop_states(m, np.arange(m.n), self._desktop_ips)

    def desktop_state(self, vm: str) -> DesktopState:
        with self._lock:
            self._sync()
            return views.desktop_states(self._vdi_model(), np.array([self._desktop(vm)]), self._desktop_ips)[
                0
            ]

    def host_perf(self, host: str) -> HostPerf:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            h = next((k for k, hh in enumerate(m.topo.hosts) if hh.name == host), None)
            if h is None:
                raise KeyError(
                    f"{host}: no such ESXi host (hosts: {', '.join(x.name for x in m.topo.hosts)})"
                )
            return views.host_perf(m, h)

    def vm_perf(self, vms: list[str] | None = None) -> tuple[VmPerf, ...]:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            idx = np.arange(m.n) if vms is None else np.array([self._desktop(v) for v in vms], dtype=np.int64)
            return views.vm_perf(m, idx)

    def datastore_perf(self, host: str | None = None) -> tuple[DatastorePerf, ...]:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            h = None
            if host is not None:
                h = next((k for k, hh in enumerate(m.topo.hosts) if hh.name == host), None)
                if h is None:
                    raise KeyError(f"{host}: no such ESXi host")
            return views.datastore_perf(m, h)

    def array_volume_counters(self, array: str) -> tuple[ArrayVolumeCounters, ...]:
        with self._lock:
            self._sync()
            return views.volume_counters(self._vdi_model(), self._known_array(array))

    def array_tier_counters(self, array: str) -> tuple[ArrayTierCounters, ...]:
        with self._lock:
            self._sync()
            return views.tier_counters(self._vdi_model(), self._known_array(array))

    def array_controller_counters(self, array: str) -> tuple[ArrayControllerCounters, ...]:
        with self._lock:
            self._sync()
            return views.controller_counters(self._vdi_model(), self._known_array(array))

    def set_host_maintenance(self, host: str, on: bool) -> None:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            h = next((k for k, hh in enumerate(m.topo.hosts) if hh.name == host), None)
            if h is None:
                raise KeyError(f"{host}: no such ESXi host")
            m.set_maintenance(h, on)

    def start_session(self, desktop: str, user: str) -> SessionInfo:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            d = self._desktop(desktop)
            why = m.refusal(d)
            if why is not None:
                raise SessionRefused(f"desktop {desktop} cannot take a session: {why}")
            fails = self.faults is not None and self.faults.active(FaultKind.SESSION_LOGIN_FAILS, desktop)
            return views.session_info(m, m.start_session(d, user, fails=fails))

    def _session(self, session_id: str) -> int:
        m = self._vdi_model()
        sid = m.session_ids.get(session_id)
        if sid is None:
            raise KeyError(f"{session_id}: no such session")
        return sid

    def session(self, session_id: str) -> SessionInfo:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            return views.session_info(m, m.sessions[self._session(session_id)])

    def session_operations(self, session_id: str, since: int = 0) -> tuple[OperationTiming, ...]:
        with self._lock:
            self._sync()
            return views.session_operations(self._vdi_model(), self._session(session_id), since)

    def logoff(self, session_id: str) -> SessionInfo:
        with self._lock:
            self._sync()
            m = self._vdi_model()
            return views.session_info(m, m.logoff(self._session(session_id)))

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
