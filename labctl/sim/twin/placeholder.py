"""A placeholder twin: fixed boot time, flat counters.

It lets the simulated endpoints and the drivers be built and tested before (and independently of)
the physical model; the physical twin implements the same :class:`LabTwin` interface.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field, replace

from labctl.clock import LabClock
from labctl.inventory.model import Lab, MachineKind
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


@dataclass
class _Box:
    name: str
    kind: MachineKind
    power: PowerState
    os_up: bool
    boot_count: int = 0
    # pending transition: (lab time it completes, power state after, os up after)
    pending: list[tuple[float, PowerState, bool]] = field(default_factory=list)
    boot_started: float | None = None
    last_boot_time_s: float | None = None


class PlaceholderTwin:
    """Every client boots in ``boot_time_s``; servers idle at ``cpu_pct``; nothing queues."""

    def __init__(
        self,
        lab: Lab,
        clock: LabClock,
        *,
        client_boot_time_s: float = 30.0,
        server_boot_time_s: float = 90.0,
        shutdown_time_s: float = 5.0,
        power_on_delay_s: float = 1.0,
        cpu_pct: float = 3.0,
        copy_rate_mb_s: float = 40.0,
        never_wake: frozenset[str] = frozenset(),
    ):
        self.lab = lab
        self.clock = clock
        self.client_boot_time_s = client_boot_time_s
        self.server_boot_time_s = server_boot_time_s
        self.shutdown_time_s = shutdown_time_s
        self.power_on_delay_s = power_on_delay_s
        self.cpu_pct = cpu_pct
        self.copy_rate_mb_s = copy_rate_mb_s
        self.never_wake = never_wake
        self._lock = threading.RLock()
        self._t0 = clock.now()
        self._boxes: dict[str, _Box] = {}
        for m in lab.machines.values():
            on = m.kind is MachineKind.SERVER  # servers run; clients and VMs start in S5 / off
            self._boxes[m.name] = _Box(m.name, m.kind, PowerState.ON if on else PowerState.OFF, on)
        self._by_mac = {m.mac: m.name for m in lab.machines.values() if m.mac}
        self._copies: dict[str, CopyJob] = {}
        self._ids = itertools.count(1)

    # --- power ---------------------------------------------------------------------------------
    def _advance(self, box: _Box) -> None:
        now = self.clock.now()
        while box.pending and box.pending[0][0] <= now:
            t, power, os_up = box.pending.pop(0)
            if os_up and not box.os_up:
                box.boot_count += 1
                if box.boot_started is not None:
                    box.last_boot_time_s = t - box.boot_started
            box.power, box.os_up = power, os_up

    def _box(self, machine: str) -> _Box:
        box = self._boxes[machine]
        self._advance(box)
        return box

    def _boot_time(self, box: _Box) -> float:
        return self.server_boot_time_s if box.kind is MachineKind.SERVER else self.client_boot_time_s

    def power_state(self, machine: str) -> PowerState:
        with self._lock:
            return self._box(machine).power

    def is_os_up(self, machine: str) -> bool:
        with self._lock:
            return self._box(machine).os_up

    def boot_count(self, machine: str) -> int:
        with self._lock:
            return self._box(machine).boot_count

    def power(self, machine: str, action: PowerAction) -> None:
        with self._lock:
            box = self._box(machine)
            now = self.clock.now()
            boot = self._boot_time(box)
            if action is PowerAction.ON:
                if box.power is PowerState.OFF and not box.pending:
                    box.power = PowerState.POWERING_ON
                    box.boot_started = now + self.power_on_delay_s
                    box.pending = [
                        (now + self.power_on_delay_s, PowerState.ON, False),
                        (now + self.power_on_delay_s + boot, PowerState.ON, True),
                    ]
            elif action is PowerAction.FORCE_OFF:
                box.pending = []
                box.power, box.os_up = PowerState.OFF, False
            elif action is PowerAction.SHUTDOWN:
                if box.power is not PowerState.OFF:
                    box.os_up = False
                    box.power = PowerState.POWERING_OFF
                    box.pending = [(now + self.shutdown_time_s, PowerState.OFF, False)]
            elif action in (PowerAction.RESTART, PowerAction.FORCE_RESTART, PowerAction.POWER_CYCLE):
                down = self.shutdown_time_s if action is PowerAction.RESTART else 0.5
                box.os_up = False
                box.power = PowerState.ON
                box.boot_started = now + down
                box.pending = [(now + down + boot, PowerState.ON, True)]

    def wake_on_lan(self, mac: str) -> str | None:
        name = self._by_mac.get(mac.lower())
        if name is None:
            return None
        if name not in self.never_wake:
            self.power(name, PowerAction.ON)
        return name

    # --- servers -------------------------------------------------------------------------------
    def server_counters(self, server: str) -> ServerCounters:
        m = self.lab.machine(server)
        hw = m.server_hardware
        now = self.clock.now()
        elapsed = now - self._t0
        cores = (hw.cpu.sockets * hw.cpu.cores) if hw else 2
        nics = tuple(
            NicCounters(
                f"Broadcom BCM5708C NetXtreme II GigE{'' if i == 0 else f' _{i + 1}'}",
                bytes_sent=2e3 * elapsed,
                bytes_received=1e3 * elapsed,
                bandwidth_bps=(hw.nics.speed_gbps if hw else 1.0) * 1e9,
            )
            for i in range(hw.nics.count if hw else 1)
        )
        vols = tuple(
            VolumeCounters(
                f"{i} {v.drive or ''}".strip(),
                transfers=2 * elapsed,
                reads=elapsed,
                writes=elapsed,
                bytes_read=8192 * elapsed,
                bytes_written=8192 * elapsed,
                queue_length_integral=0.02 * elapsed,
                response_time_sum_s=0.01 * 2 * elapsed,
            )
            for i, v in enumerate(hw.volumes if hw else ())
        )
        ram_mb = (hw.ram_gb if hw else 4) * 1024
        return ServerCounters(
            now, cores, cores * elapsed * self.cpu_pct / 100, ram_mb, ram_mb * 0.8, nics, vols
        )

    def power_consumed_watts(self, server: str) -> float:
        return 180.0 if self.power_state(server) is PowerState.ON else 8.0

    def device_status(self, streaming_server: str) -> tuple[DeviceStatus, ...]:
        out = []
        with self._lock:
            for m in self.lab.clients:
                box = self._box(m.name)
                active = box.os_up
                out.append(
                    DeviceStatus(
                        m.name,
                        m.mac or "",
                        active,
                        0,
                        box.last_boot_time_s if active else None,
                        streaming_server,
                        m.ip,
                    )
                )
        return tuple(out)

    # --- workloads -----------------------------------------------------------------------------
    def start_copy(
        self, client: str, source: CopyLocation, destination: CopyLocation, size_bytes: int
    ) -> CopyJob:
        job = CopyJob(
            f"copy-{next(self._ids)}", client, source, destination, size_bytes, self.clock.now(), None
        )
        with self._lock:
            self._copies[job.job_id] = job
        return job

    def copy_status(self, job_id: str) -> CopyJob:
        with self._lock:
            job = self._copies[job_id]
            done_at = job.started_lab_s + job.size_bytes / (self.copy_rate_mb_s * 1e6)
            if job.finished_lab_s is None and self.clock.now() >= done_at:
                job = replace(job, finished_lab_s=done_at)
                self._copies[job_id] = job
            if job.finished_lab_s is None:
                return replace(job, eta_lab_s=max(0.0, done_at - self.clock.now()))
            return job

    # --- storage -------------------------------------------------------------------------------
    def lun_counters(self, array: str) -> tuple[LunCounters, ...]:
        elapsed = self.clock.now() - self._t0
        arr = self.lab.storage[array]
        return tuple(
            LunCounters(
                lun,
                sp,
                reads=50 * elapsed,
                writes=30 * elapsed,
                read_blocks=50 * 16 * elapsed,
                write_blocks=30 * 16 * elapsed,
                total_io_time_us=80 * 1500 * elapsed,
            )
            for lun in arr.luns
            for sp in ("spa", "spb")
        )
