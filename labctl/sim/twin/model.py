"""The lab twin's state and its time step: clients, servers, caches, controllers, counters.

:class:`TwinModel` knows nothing about wall-clock time or threads: ``advance_to(t)`` moves the model
to lab time ``t`` in steps of 10-250 ms (short while queues are busy, long when the lab is
quiet, a single jump when nothing at all is going on). The live twin (:mod:`.twin`) calls it under
a lock; the fast-forward runner (:mod:`.storm`) calls it in a loop.

Why the write-cache queue reaches its peak (the 2007 standalone lab, 100 clients):

1. After the agent starts, each client writes ``settle.write_mb`` = 3.8 MB to its write cache in
   8 KB requests over about 20 s (services, logs, prefetch traces): ~24 writes/s per client,
   ~2,400 writes/s offered by 100 clients in step.
2. The PERC's battery-backed cache acknowledges the first ``controller_write_cache_mb`` = 128 MB
   (16,000 writes) at memory speed, so the queue stays near zero until it is full (~68 s in).
3. Then every write waits for the spindles: RAID10 of 4 x 10K SAS, write penalty 2, 5.35 ms per
   8 KB write (3 ms half revolution + 2.25 ms short seek + transfer) = 374 writes/s at queue
   depth 1 (:func:`.hardware.write_capacity_iops`), far below the offered 2,400/s.
4. Each client has one request in flight, so clients pile up in the queue (Windows counts
   them) until the disks keep up: with q requests per spindle they serve the nearest first and
   positioning shrinks as q^-0.45 (``queue_reorder_exponent``). At 41 queued (20 per spindle,
   positioning x 0.26) the volume does ~1,400 writes/s; that balance is the peak: 41 at 100
   clients, 26 at 75, 6 at 50 (whose burst mostly fits in the controller cache).
5. A write then takes ~29 ms on average; the few that outlive 200 ms (lognormal spread
   ``write_response_sigma``) are re-sent: the retries.

``snapshot()`` prints these quantities (queue, offered write IOPS, controller fill) at any time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labctl.inventory.model import Lab, MachineKind
from labctl.inventory.twin_params import TwinParameters
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.cache import ChunkCache
from labctl.sim.twin.demand import Costs, StationFacts, request_costs
from labctl.sim.twin.interface import CopyLocation, PowerAction, PowerState
from labctl.sim.twin.solver import (
    Demands,
    Solution,
    adaptive_timeout,
    expected_resends,
    resends_while_waiting,
    solve,
)
from labctl.sim.twin.topology import N_ROLES, Role, StationKind, build_topology
from labctl.sim.twin.workload import (
    DST_SMB,
    DST_WC,
    SRC_SMB,
    SRC_VDISK,
    Phase,
    phase_table,
)

KB = 1024.0
# Step sizes. The queueing solution is quasi-static (re-solved every step), so the step only has to
# resolve how fast the load changes (phases of seconds, controller caches filling over tens of
# seconds), not the response times themselves. 0.1 s while clients boot gives the 2007 storm
# table of 0.05 s to within 0.1 s of boot time and 1 point of CPU (0.2 s begins to shift peaks),
# at half the cost, which a live lab at 60x needs.
DT_BUSY_S = 0.1
DT_LIGHT_S = 0.1
DT_QUIET_S = 0.25
DT_IDLE_S = 1.0  # only booted clients idling: background I/O changes nothing faster
# Busy with copies but no client booting: long steady flows whose load changes only when a copy
# starts or ends or a controller cache fills (tens of seconds). Boot-storm steps would make a
# 50-client copy matrix cost a whole core at 60x and starve the simulated endpoints.
DT_FLOWS_S = 0.25
_ACTIVE_LO = int(Phase.PXE)
_ACTIVE_HI = int(Phase.IDLE)
# the roles of a client's streaming path: if one is down, the client stalls (the share's roles are
# a copy's business)
_STREAM_ROLES = np.array([r for r in Role if r not in (Role.SH_CPU, Role.SH_OUT, Role.SH_IN, Role.SH_VOL)])


@dataclass
class Box:
    """Power state machine of a server or a VM (clients live in arrays)."""

    name: str
    kind: MachineKind
    power: PowerState
    os_up: bool
    boot_s: float
    shutdown_s: float
    boot_count: int = 0
    pending: list[tuple[float, PowerState, bool]] = field(default_factory=list)
    os_up_since: float | None = None


@dataclass
class CopyRecord:
    job_id: str
    client: int
    source: CopyLocation
    destination: CopyLocation
    size_bytes: int
    started: float
    progress: float = 0.0  # fraction
    finished: float | None = None
    failed: str | None = None


class TwinModel:
    def __init__(self, lab: Lab, start_t: float = 0.0, seed: int | None = None):
        self.lab = lab
        self.p: TwinParameters = lab.twin
        p = self.p
        self.topo = topo = build_topology(lab, p)
        self.table = phase_table(p)
        self.rng = np.random.default_rng(lab.seed if seed is None else seed)
        self.t = start_t
        self.t0 = start_t
        n = len(topo.client_names)
        self.n = n
        self.client_index = {name: i for i, name in enumerate(topo.client_names)}
        # --- client state ---
        self.phase = np.zeros(n, dtype=np.int64)
        self.until = np.full(n, np.inf)  # end of a timed phase (POWERING_ON, POST, SHUTDOWN)
        self.x = np.zeros(n)  # progress in the current streaming phase, 0..1
        self.restart = np.zeros(n, dtype=bool)  # a SHUTDOWN that powers on again
        self.boot_start = np.full(n, np.nan)  # first network contact of the current boot
        self.last_boot_s = np.full(n, np.nan)
        self.boot_count = np.zeros(n, dtype=np.int64)
        self.retries = np.zeros(n, dtype=np.int64)  # session retries (since the boot started)
        self.retry_acc = np.zeros(n)
        self.retry_next = self.rng.exponential(size=n)
        self.stall_s = np.zeros(n)  # how long the client's outstanding request has gone unanswered
        # per-client local work: evenly spread (van der Corput), so any first k clients average 1
        # and client 1 is the average client
        spread = lab.twin.client_speed_spread
        self.local_factor = 1.0 + spread * (2.0 * _van_der_corput(n) - 1.0)
        self.copy_of = np.full(n, -1, dtype=np.int64)  # index into copy_list of the client's copy
        # the running copy of each client, as arrays for the step (set by start_copy)
        self.cp_src = np.zeros(n, dtype=np.int64)
        self.cp_dst = np.zeros(n, dtype=np.int64)
        self.cp_rkb = np.ones(n)
        self.cp_wkb = np.ones(n)
        self.cp_size = np.zeros(n)
        self.cp_progress = np.zeros(n)
        self.cp_two = np.zeros(n, dtype=bool)  # source and destination are separate channels
        self.cp_rate_bps = np.zeros(n)  # bytes/s the copy moved in the last step
        self.credit = np.zeros(n)  # time already spent in a phase entered mid-step, s
        # Rows of the queueing solution: row i is client i's request stream (its boot, its idle
        # I/O, or its copy); row n + i is the second channel of a copy whose source and
        # destination are reached separately (a share on one side), which runs alongside.
        self.rate = np.zeros(2 * n)  # last requests/s per row
        self.resp_r = np.zeros(2 * n)
        self.resp_w = np.zeros(2 * n)
        # --- stations ---
        s = topo.n_stations
        self.backlog = np.zeros(s)
        self.own = np.zeros((2 * n, N_ROLES))
        self.util = np.zeros(s)
        self.customers = np.zeros(s)
        self.busy_s = np.zeros(s)  # cumulative server-seconds busy (cores x s for CPUs)
        self.st_reads = np.zeros(s)
        self.st_writes = np.zeros(s)
        self.st_bytes_r = np.zeros(s)
        self.st_bytes_w = np.zeros(s)
        self.q_integral = np.zeros(s)
        self.hz = np.ones(s)
        self.pos_s = np.zeros(s)  # volume: positioning time per I/O, s
        self.media = np.ones(s)  # volume: bytes/s
        self.penalty = np.ones(s)
        self.ctrl_cap = np.zeros(s)  # controller write cache, bytes
        self.ctrl_fill = np.zeros(s)
        self.ctrl_n = np.zeros(s)  # writes the controller holds
        self.ctrl_size = np.full(s, 8 * KB)  # their mean size, bytes
        # disk positionings the held data will cost to write out, in seconds of one spindle: one
        # per random write, one per contiguous run of a sequential stream
        self.ctrl_pos = np.zeros(s)
        self.os_dirty_cap = np.zeros(s)  # the share's buffered writes: the OS's part of the buffer
        self.station_up = np.ones(s, dtype=bool)
        for node in topo.servers.values():
            self.hz[node.cpu] = hwm.cpu_hz(node.hw)
        for v in topo.volumes:
            self.pos_s[v.station] = v.timing.positioning_ms / 1e3
            self.media[v.station] = v.timing.media_rate_mb_s * hwm.MB
            self.penalty[v.station] = v.penalty
            # what acknowledges a write before the spindles have it: the controller's battery-
            # backed cache, and for buffered (SMB) writes the file server's cache manager first
            self.ctrl_cap[v.station] = v.controller_cache_bytes + v.os_dirty_bytes
            self.os_dirty_cap[v.station] = v.os_dirty_bytes
        self.is_volume = topo.kind == StationKind.VOLUME
        self.os_buffered = self.os_dirty_cap > 0
        self.is_cpu = topo.kind == StationKind.CPU
        # --- caches: the vDisk image on every server that streams or holds it; the share file ---
        image_mb = p.vdisk_image_mb
        self.caches: dict[str, ChunkCache] = {}
        for name in {*topo.client_server, topo.vdisk_server or ""} - {""}:
            if name in topo.servers:
                self.caches[name] = ChunkCache(
                    image_mb,
                    p.cache_chunk_kb,
                    hwm.fs_cache_mb(topo.servers[name].hw, p),
                    p.cache_working_set_trim_s,
                )
        self.share_cache: ChunkCache | None = None
        if topo.share_server:
            sh = topo.servers[topo.share_server]
            cap_mb = hwm.fs_cache_mb(sh.hw, p, sh.os)
            self.share_cache = ChunkCache(4096.0, p.cache_chunk_kb, cap_mb, p.cache_working_set_trim_s)
        self.share_station = int(topo.role_station[Role.SH_VOL, 0]) if topo.share_server and n else -1
        self.cache_keys = sorted(self.caches)
        key_of = {name: k for k, name in enumerate(self.cache_keys)}
        self.client_cache_key = np.array([key_of.get(s, -1) for s in topo.client_server], dtype=np.int64)
        self.chunk = np.zeros(n, dtype=np.int64)  # image chunk each client reads now
        # --- machines other than clients ---
        self.boxes: dict[str, Box] = {}
        for m in lab.machines.values():
            if m.kind is MachineKind.SERVER:
                self.boxes[m.name] = Box(
                    m.name,
                    m.kind,
                    PowerState.ON,
                    True,
                    p.server_boot_time_s,
                    p.server_shutdown_s,
                    1,
                    os_up_since=start_t,
                )
        # VMs (virtual desktops) are the VDI twin's (labctl.sim.twin.vdi), not boxes of this model
        self.client_server_name = np.asarray(topo.client_server, dtype=object)
        self.copies: dict[str, CopyRecord] = {}
        self.copy_list: list[CopyRecord] = []
        self._copy_cache: tuple[bytes, _CopyStatic] | None = None  # the copiers' fixed costs
        # --- static per-client numbers, and the cost templates ---
        self._static_client_arrays()
        self.fx = StationFacts(
            self.rate_of, self.hz, self.pos_s, self.media, self.penalty, topo.m, topo.dummy
        )
        self._build_templates()
        self.last_solution: Solution | None = None
        self.steps = 0

    # ------------------------------------------------------------------------------------------
    def _static_client_arrays(self) -> None:
        topo = self.topo
        rs = topo.role_station
        self.rate_of = topo.rate.copy()
        self.rate_of[self.rate_of == 0] = 1.0
        self.link = topo.client_link_rate
        self.ss_rate = np.where(topo.ss_nic_rate > 0, topo.ss_nic_rate, 1.0)
        self.hz_ss = self.hz[rs[Role.SS_CPU]]
        self.hz_bk = self.hz[rs[Role.BK_CPU]]
        self.hz_sh = self.hz[rs[Role.SH_CPU]]
        self.vd_remote = topo.vdisk_remote
        self.wc_remote = topo.wc_remote

    # --- power ---------------------------------------------------------------------------------
    def power(self, name: str, action: PowerAction) -> None:
        i = self.client_index.get(name)
        if i is not None:
            self._client_power(i, action)
            return
        box = self.boxes[name]
        now = self.t
        if action is PowerAction.ON:
            if box.power is PowerState.OFF and not box.pending:
                box.power = PowerState.POWERING_ON
                d = self.p.power_on_delay_s
                box.pending = [(now + d, PowerState.ON, False), (now + d + box.boot_s, PowerState.ON, True)]
        elif action is PowerAction.FORCE_OFF:
            box.pending = []
            box.power, box.os_up = PowerState.OFF, False
        elif action is PowerAction.SHUTDOWN:
            if box.power is not PowerState.OFF:
                box.os_up = False
                box.power = PowerState.POWERING_OFF
                box.pending = [(now + box.shutdown_s, PowerState.OFF, False)]
        else:  # restarts
            if box.power is PowerState.OFF and action is not PowerAction.POWER_CYCLE:
                return
            down = box.shutdown_s if action is PowerAction.RESTART else 0.5
            box.os_up = False
            box.power = PowerState.ON
            box.pending = [(now + down + box.boot_s, PowerState.ON, True)]
        self._update_station_power()

    def _client_power(self, i: int, action: PowerAction) -> None:
        ph = Phase(int(self.phase[i]))
        now, p = self.t, self.p
        if action is PowerAction.ON:
            if ph is Phase.OFF:
                self.phase[i] = Phase.POWERING_ON
                self.until[i] = now + p.power_on_delay_s
        elif action is PowerAction.FORCE_OFF:
            self._end_session(i, "client powered off")
            self.phase[i] = Phase.OFF
            self.until[i] = np.inf
            self.restart[i] = False
        elif action is PowerAction.SHUTDOWN:
            if ph not in (Phase.OFF, Phase.SHUTDOWN):
                self._begin_shutdown(i, restart=False)
            elif ph is Phase.SHUTDOWN:
                self.restart[i] = False
        elif action is PowerAction.RESTART:
            if ph in (Phase.OFF, Phase.POWERING_ON):
                return
            if ph in (Phase.POST, Phase.PXE):  # nothing to shut down yet: a warm reset
                self._end_session(i, "client restarted")
                self.phase[i] = Phase.POST
                self.until[i] = now + self._post_s()
                return
            self._begin_shutdown(i, restart=True)
        else:  # FORCE_RESTART, POWER_CYCLE: reset without OS shutdown
            if ph is Phase.OFF and action is PowerAction.FORCE_RESTART:
                return
            self._end_session(i, "client reset")
            self.phase[i] = Phase.POWERING_ON
            self.until[i] = now + 0.5 + (p.power_on_delay_s if action is PowerAction.POWER_CYCLE else 0.0)

    def _post_s(self) -> float:
        p = self.p
        return max(0.0, p.bios_post_s + self.rng.uniform(-p.bios_post_jitter_s, p.bios_post_jitter_s))

    def _begin_shutdown(self, i: int, restart: bool) -> None:
        self._fail_copy(i, "client shut down during the copy")
        self.phase[i] = Phase.SHUTDOWN
        self.until[i] = self.t + self.p.client_shutdown_s
        self.restart[i] = restart

    def _end_session(self, i: int, reason: str) -> None:
        self._fail_copy(i, reason)

    def _fail_copy(self, i: int, reason: str) -> None:
        j = int(self.copy_of[i])
        if j >= 0:
            rec = self.copy_list[j]
            rec.progress = float(self.cp_progress[i])
            if rec.finished is None and rec.failed is None:
                rec.failed = reason
            self.copy_of[i] = -1

    def client_power_state(self, i: int) -> PowerState:
        ph = int(self.phase[i])
        if ph == Phase.OFF:
            return PowerState.OFF
        if ph == Phase.POWERING_ON:
            return PowerState.POWERING_ON
        if ph == Phase.SHUTDOWN and not self.restart[i]:
            return PowerState.POWERING_OFF
        return PowerState.ON

    def _update_station_power(self) -> None:
        up = {name: box.power is PowerState.ON and box.os_up for name, box in self.boxes.items()}
        for s, owner in enumerate(self.topo.owner):
            self.station_up[s] = up.get(owner, True)

    def _advance_boxes(self, t: float) -> None:
        changed = False
        for box in self.boxes.values():
            while box.pending and box.pending[0][0] <= t:
                at, power, os_up = box.pending.pop(0)
                if os_up and not box.os_up:
                    box.boot_count += 1
                    box.os_up_since = at
                box.power, box.os_up = power, os_up
                changed = True
        if changed:
            self._update_station_power()

    # --- workloads -----------------------------------------------------------------------------
    def start_copy(
        self, job_id: str, client: str, source: CopyLocation, destination: CopyLocation, size_bytes: int
    ) -> CopyRecord:
        i = self.client_index[client]
        rec = CopyRecord(job_id, i, source, destination, size_bytes, self.t)
        self.copies[job_id] = rec
        self.copy_list.append(rec)
        uses_share = CopyLocation.SHARE in (source, destination)
        if int(self.phase[i]) not in (Phase.SETTLE, Phase.IDLE):
            rec.failed = f"{client} is not up"
        elif uses_share and self.topo.share_server is None:
            rec.failed = "the configuration names no share"
        elif self.copy_of[i] >= 0:
            rec.failed = f"{client} is already copying"
        else:
            p = self.p
            self.copy_of[i] = len(self.copy_list) - 1
            r_local = source is CopyLocation.LOCAL
            w_local = destination is CopyLocation.LOCAL
            self.cp_src[i] = SRC_VDISK if r_local else SRC_SMB
            self.cp_dst[i] = DST_WC if w_local else DST_SMB
            # the streaming protocol carries at most io_burst_kb; SMB1 copies move 60 KB blocks
            self.cp_rkb[i] = p.io_burst_kb if r_local else p.smb_io_kb
            self.cp_wkb[i] = p.io_burst_kb if w_local else p.smb_io_kb
            self.cp_size[i] = float(size_bytes)
            self.cp_progress[i] = 0.0
            self.cp_rate_bps[i] = 0.0
            # local to local: reads and writes share the client's one streaming request; with a
            # share on either side the share is reached over SMB alongside (a second channel)
            self.cp_two[i] = not (r_local and w_local)
            j = self.n + i
            self.own[j] = 0.0
            self.rate[j] = self.resp_r[j] = self.resp_w[j] = 0.0
        return rec

    def copy_eta_s(self, i: int) -> float | None:
        """Lab seconds the client's running copy still needs at its current speed (None: unknown)."""
        if self.copy_of[i] < 0 or self.cp_rate_bps[i] <= 0:
            return None
        return float((1.0 - self.cp_progress[i]) * self.cp_size[i] / self.cp_rate_bps[i])

    # --- time ----------------------------------------------------------------------------------
    def busy(self) -> bool:
        """Anything that needs stepping: streaming clients, timed phases, controller destage."""
        ph = self.phase
        return bool(np.any((ph >= Phase.POWERING_ON) & (ph <= Phase.SHUTDOWN)) or np.any(self.ctrl_fill > 0))

    def next_event(self) -> float:
        t = float(self.until.min()) if self.n else math.inf
        for box in self.boxes.values():
            if box.pending:
                t = min(t, box.pending[0][0])
        return t

    def advance_to(self, target: float, max_dt: float | None = None, min_dt: float | None = None) -> None:
        """Step the model to lab time ``target``; ``min_dt`` coarsens the steps (a lagging live lab)."""
        while self.t < target - 1e-9:
            self._advance_boxes(self.t)
            self._timed_transitions()
            streaming = (self.phase >= _ACTIVE_LO) & (self.phase <= _ACTIVE_HI)
            if not streaming.any() and not np.any(self.ctrl_fill > 0):
                # nothing flows: jump to the next timed event, integrating idle counters
                t_next = min(target, max(self.next_event(), self.t + 1e-6))
                self._idle_interval(t_next - self.t)
                self.t = t_next
                continue
            dt = self._step_size(streaming, min_dt)
            if max_dt is not None:
                dt = min(dt, max_dt)
            dt = min(dt, target - self.t)
            self._step(dt, streaming)
            self.t += dt
        self._advance_boxes(self.t)
        self._timed_transitions()

    def _step_size(self, streaming: np.ndarray, min_dt: float | None = None) -> float:
        u = float(self.util[~self.is_volume].max(initial=0.0))
        uq = float(self.customers[self.is_volume].max(initial=0.0))
        if u > 0.3 or uq > 1.0:
            ph = self.phase[streaming]
            booting = bool(np.any((ph >= Phase.PXE) & (ph <= Phase.SETTLE)))
            dt = DT_BUSY_S if booting else DT_FLOWS_S
        elif u > 0.05 or uq > 0.2:
            dt = DT_LIGHT_S
        elif (
            np.all(self.phase[streaming] == Phase.IDLE)
            and not np.any(self.ctrl_fill > 0)
            and not np.any(self.copy_of >= 0)
        ):
            dt = DT_IDLE_S
        else:
            dt = DT_QUIET_S
        if min_dt is not None:
            dt = max(dt, min_dt)
        # a lone client (1-client boots) is measured to the phase: land on its phase ends
        idx = np.flatnonzero(streaming & (self.phase <= Phase.SETTLE))
        if 0 < idx.size <= 4:
            nreq = self.table.n_requests[self.phase[idx]]
            r = self.rate[idx]
            with np.errstate(divide="ignore"):
                eta = np.where(r > 0, (1.0 - self.x[idx]) * nreq / r, np.inf)
            dt = min(dt, max(0.005, float(eta.min()) + 1e-4))
        # servers and VMs change state at exact times
        for box in self.boxes.values():
            if box.pending and box.pending[0][0] > self.t:
                dt = min(dt, box.pending[0][0] - self.t)
        return dt

    def _timed_transitions(self) -> None:
        due = np.flatnonzero(self.until <= self.t + 1e-9)
        for i in map(int, due):
            ph = int(self.phase[i])
            at = float(self.until[i])
            if ph == Phase.POWERING_ON:
                self.phase[i] = Phase.POST
                self.until[i] = at + self._post_s()
            elif ph == Phase.POST:
                self._enter_stream(i, Phase.PXE, at)
                self.credit[i] = max(0.0, self.t - at)  # it has been on the network since `at`
            elif ph == Phase.SHUTDOWN:
                if self.restart[i]:
                    self.phase[i] = Phase.POST
                    self.until[i] = at + self._post_s()
                else:
                    self.phase[i] = Phase.OFF
                    self.until[i] = np.inf
                self.restart[i] = False
            else:
                self.until[i] = np.inf

    def _enter_stream(self, i: int, ph: Phase, at: float) -> None:
        self.phase[i] = ph
        self.until[i] = np.inf
        self.x[i] = 0.0
        if ph is Phase.PXE:
            self.boot_start[i] = at  # first network contact: the DHCP discover
            self.retries[i] = 0  # a new session
            self.own[i] = 0.0

    # --- the step ------------------------------------------------------------------------------
    def _step(self, dt: float, streaming: np.ndarray) -> None:
        self.steps += 1
        act = np.flatnonzero(streaming)
        rs = self.topo.role_station
        self._fail_copies_to_a_dead_share(act)
        # a client stalls when its streaming path is down (the share matters only to a copy)
        path_ok = self.station_up[rs[_STREAM_ROLES][:, act]].all(axis=0)
        stalled = act[~path_ok]
        act = act[path_ok]
        self.stall_s[act] = 0.0
        open_backlog = self._controller_backlog()
        if act.size:
            d, extra = self._demands(act)
            roles, rows = extra["roles"], extra["rows"]
            own = self.own[np.ix_(rows, roles)]
            sol, self.backlog = solve(d, self.backlog, own, self.topo.m, open_backlog)
            if self.os_buffered.any():
                # throttled SMB writers wait in the file server's cache manager: its disk queue holds
                # only the lazy writer's flushes (and reads)
                lw = self.os_buffered
                sol.customers[lw] = np.minimum(sol.customers[lw], self.p.lazy_writer_ios)
            self.own[np.ix_(rows, roles)] = sol.own
            self.last_solution = sol
            self.util = sol.util
            self.customers = sol.customers
            self.rate[rows] = sol.rate
            self.resp_r[rows] = sol.resp_r
            self.resp_w[rows] = sol.resp_w
            self._count(dt, d, sol, extra)
            self._progress(dt, act, sol, extra)
        else:
            self.util = np.zeros_like(self.util)
            self.customers = np.zeros_like(self.customers)
            self.backlog = open_backlog.copy()
        if stalled.size:
            # the streaming server (or its storage) is down: the client's request goes unanswered
            # and is re-sent at every timeout, each one longer than the last (backoff)
            self.rate[stalled] = 0.0
            p = self.p
            before = resends_while_waiting(
                self.stall_s[stalled],
                p.udp_timeout_ms / 1e3,
                p.udp_timeout_backoff,
                p.udp_timeout_max_ms / 1e3,
            )
            self.stall_s[stalled] += dt
            after = resends_while_waiting(
                self.stall_s[stalled],
                p.udp_timeout_ms / 1e3,
                p.udp_timeout_backoff,
                p.udp_timeout_max_ms / 1e3,
            )
            self.retries[stalled] += (after - before).astype(np.int64)
        self._destage(dt)
        self._idle_cpu(dt)

    def _fail_copies_to_a_dead_share(self, act: np.ndarray) -> None:
        """A copy whose share server went down loses its SMB session: the copy fails."""
        if self.share_station < 0 or self.station_up[self.share_station]:
            return
        for i in act[self.copy_of[act] >= 0]:
            if self.cp_src[i] == SRC_SMB or self.cp_dst[i] == DST_SMB:
                self._fail_copy(int(i), "the share's server went down")

    def _controller_backlog(self) -> np.ndarray:
        """Work queued at stations outside the clients' requests: none modelled.

        A controller destaging its cache keeps the spindles busy, which would delay *reads* on
        that volume; writes it acknowledges from cache do not wait. The solver's wait is per
        station, not per request kind, so this interference is left out (documented in README).
        """
        return np.zeros_like(self.backlog)

    # --- demands: templates per (route, phase), combined linearly each step ---------------------
    def _build_templates(self) -> None:
        topo, tb, p = self.topo, self.table, self.p
        rs = topo.role_station
        key = np.vstack(
            [rs, topo.client_link_rate[None, :], topo.vdisk_remote[None, :], topo.wc_remote[None, :]]
        ).T
        if self.n:
            _, rep, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
        else:
            rep, inv = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self.route_class = inv.ravel().astype(np.int64)
        phases = np.arange(_ACTIVE_LO, _ACTIVE_HI + 1)
        n_ph = phases.size
        cols_client = np.repeat(rep, n_ph)
        cols_phase = np.tile(phases, rep.size)
        a = cols_client.size
        st = rs[:, cols_client]
        zero = np.zeros(a)

        def costs(miss: float, far: float, full: float) -> np.ndarray:
            c = request_costs(
                p,
                self.fx,
                st,
                tb.source[cols_phase],
                np.full(a, DST_WC, dtype=np.int64),
                tb.read_kb[cols_phase] * KB,
                tb.write_kb[cols_phase] * KB,
                zero + miss,
                zero + far,
                zero,
                zero + full,
                topo.vdisk_remote[cols_client],
                topo.wc_remote[cols_client],
                topo.client_link_rate[cols_client],
            )
            body = c.stack()  # (6, roles, a)
            fixed = np.zeros((1, N_ROLES, a))
            fixed[0, 0], fixed[0, 1] = c.fixed_r, c.fixed_w
            return np.concatenate([body, fixed]).transpose(2, 0, 1)  # (a, 7, roles)

        base = costs(0, 0, 0)
        tpl = np.stack([base, costs(1, 0, 0) - base, costs(0, 1, 0) - base, costs(0, 0, 1) - base], axis=1)
        # roles any boot-phase request visits; copies may add the share's
        live = np.flatnonzero((rs != topo.dummy).any(axis=1)) if self.n else np.zeros(0, dtype=np.int64)
        boot_live = [r for r in live if np.abs(tpl[:, :, :6, r]).max() > 0 or r == Role.SS_CPU]
        self.roles_boot = np.asarray(boot_live, dtype=np.int64)
        self.roles_all = np.asarray(live, dtype=np.int64)
        self.tpl_boot = np.ascontiguousarray(tpl[:, :, :, self.roles_boot])  # (cols, 4, 7, R')
        self.tpl_all = np.ascontiguousarray(tpl[:, :, :, self.roles_all])
        vol_roles = (Role.VD_VOL, Role.WC_VOL, Role.SH_VOL)
        self.vol_cols_boot = np.flatnonzero(np.isin(self.roles_boot, vol_roles))
        self.vol_cols_all = np.flatnonzero(np.isin(self.roles_all, vol_roles))
        self.n_tpl_phases = n_ph
        # disk-store visits per read when a client's chunk is not cached (the read-ahead unit)
        self.miss_factor = np.where(
            tb.source == SRC_VDISK, np.minimum(1.0, tb.read_kb / p.cache_read_io_kb), 0.0
        )

    def _miss(self, act: np.ndarray, chunk: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Disk-store visits per read at the streaming server, and on the vDisk volume itself."""
        miss = np.zeros(act.size)
        ck = self.client_cache_key[act]
        for key_i, key in enumerate(self.cache_keys):
            sel = (ck == key_i) & (factor > 0)
            if sel.any():
                miss[sel] = ~self.caches[key].hit(chunk[sel]) * factor[sel]
        far = miss
        remote = self.vd_remote[act]
        vs = self.topo.vdisk_server
        if remote.any() and vs in self.caches:
            far = miss.copy()
            far[remote] = miss[remote] * ~self.caches[vs].hit(chunk[remote])
        return miss, far

    def _demands(self, act: np.ndarray) -> tuple[Demands, dict[str, np.ndarray]]:
        p, tb, topo = self.p, self.table, self.topo
        ph = self.phase[act]
        n_r = tb.n_reads[ph]
        n_w = tb.n_writes[ph]
        local = tb.local_s[ph]
        chunk = tb.region_base[ph] + np.minimum(
            (self.x[act] * tb.region_chunks[ph]).astype(np.int64), tb.region_chunks[ph] - 1
        )
        miss, far = self._miss(act, chunk, self.miss_factor[ph])
        full = self._full_frac[topo.role_station[Role.WC_VOL, act]]
        col = self.route_class[act] * self.n_tpl_phases + (ph - _ACTIVE_LO)
        copying = self.copy_of[act] >= 0
        any_copy = bool(copying.any())
        roles = self.roles_all if any_copy else self.roles_boot
        tpl = (self.tpl_all if any_copy else self.tpl_boot)[col]
        coef = np.stack([np.ones(act.size), miss, far, full], axis=1)
        q = np.einsum("ak,akqr->aqr", coef, tpl)  # (A, 7, R')
        # deep queues are served faster: the disks reorder them (command queuing)
        vol_cols = self.vol_cols_all if any_copy else self.vol_cols_boot
        if vol_cols.size:
            g = self._reorder_factor()[topo.role_station[roles[vol_cols]][:, act]].T  # (A, V)
            q[:, :4, vol_cols] *= g[:, None, :]
        wr, ww, lr, lw, vr, vw = q[:, 0], q[:, 1], q[:, 2], q[:, 3], q[:, 4], q[:, 5]
        fixed_r, fixed_w = q[:, 6, 0].copy(), q[:, 6, 1].copy()
        n_req = n_r + n_w
        station = topo.role_station[np.ix_(roles, act)].T
        p_read = n_r / n_req
        think = local * self.local_factor[act] / n_req
        window: np.ndarray | float = float(p.client_outstanding_requests)
        wbytes = tb.write_kb[ph] * KB
        # without copies every row is a streaming client (udp None: all) writing at random
        seek_w: np.ndarray | None = None
        udp: np.ndarray | None = None
        rows, client = act, act
        chunk_base = chunk
        async_io: np.ndarray | None = None
        cp: _CopyRows | None = None
        if any_copy:
            k = np.flatnonzero(copying)
            cp = self._copy_rows(act[k])
            body = cp.body[:, :, roles]  # (cols, 6, R')
            ahead = cp.ahead[:, roles]  # (cols, R')
            a_cols, b_cols = np.arange(k.size), k.size + np.arange(cp.b_clients.size)
            n_req, chunk_base = n_req.copy(), chunk.copy()
            # the copy's first channel takes the client's row...
            wr[k], ww[k], lr[k], lw[k], vr[k], vw[k] = (body[a_cols, j] for j in range(6))
            fixed_r[k], fixed_w[k] = cp.fixed[0, a_cols], cp.fixed[1, a_cols]
            window, seek_w = np.full(act.size, window), np.ones(act.size)
            udp = np.ones(act.size, dtype=bool)
            p_read[k], think[k], window[k] = cp.p_read[a_cols], cp.think[a_cols], cp.window[a_cols]
            wbytes[k], seek_w[k], udp[k] = cp.wbytes[a_cols], cp.seek_w[a_cols], cp.udp[a_cols]
            n_req[k] = cp.n_req
            chunk_base[k] = cp.chunk
            async_io = np.zeros_like(wr)
            async_io[k] = ahead[a_cols]
            # ... and the second channel (to or from the share) runs alongside in a row of its own
            if b_cols.size:
                bi = cp.b_clients
                station = np.concatenate([station, topo.role_station[np.ix_(roles, bi)].T])
                wr, ww, lr, lw, vr, vw = (
                    np.concatenate([x, body[b_cols, j]]) for j, x in enumerate((wr, ww, lr, lw, vr, vw))
                )
                fixed_r = np.concatenate([fixed_r, cp.fixed[0, b_cols]])
                fixed_w = np.concatenate([fixed_w, cp.fixed[1, b_cols]])
                p_read, think, window, wbytes, seek_w, udp = (
                    np.concatenate([x, getattr(cp, name)[b_cols]])
                    for x, name in (
                        (p_read, "p_read"),
                        (think, "think"),
                        (window, "window"),
                        (wbytes, "wbytes"),
                        (seek_w, "seek_w"),
                        (udp, "udp"),
                    )
                )
                async_io = np.concatenate([async_io, ahead[b_cols]])
                rows = np.concatenate([act, self.n + bi])
                client = np.concatenate([act, bi])
        d = Demands(station, wr, ww, lr, lw, vr, vw, fixed_r, fixed_w, p_read, think, window, async_io)
        # a copy's writes are sequential: its next write is always the one nearest the head, so
        # disk reordering never starves it and its response spreads like a FIFO queue's (reads')
        copy_row = np.concatenate([copying, np.ones(rows.size - act.size, dtype=bool)])
        extra = {
            "n_req": n_req,
            "chunk": chunk_base,
            "copying": copying,
            "roles": roles,
            "miss": miss,
            "rows": rows,
            "client": client,
            "wbytes": wbytes,
            "seek_w": seek_w,
            "udp": udp,
            "sigma_w": (
                p.write_response_sigma
                if cp is None
                else np.where(copy_row, p.read_response_sigma, p.write_response_sigma)
            ),
            "copy": cp,
        }
        return d, extra

    def _copy_rows(self, idx: np.ndarray) -> _CopyRows:
        """The request streams of the clients copying a file (``idx``), physics in the comments.

        A Windows copy of a large file reads the source and writes the destination sequentially,
        the client's cache manager reading ahead of the copy loop and writing behind it:
        - local to local: both go through the client's one streaming request, so reads and writes
          take turns in a single stream (32 KB each, the protocol's largest);
        - with a share on one side (or both), the SMB side is a second stream of 60 KB requests
          with ``copy_smb_requests_in_flight`` outstanding (at most the server's MaxMpxCount),
          running alongside the streaming side. The copy goes as fast as its slower stream: the
          faster one waits for buffer space or data (its think time is stretched to match).
        Sequential I/O reaches the disks in runs: a read from disk is a read-ahead inside the
        cache manager's 256 KB view (one positioning per view); a write reaches the spindles with
        the rest of its stream's data that the controller's (or the cache manager's) write-behind
        buffer holds, one positioning per run (buffer / sequential streams on the volume).
        """
        p, n = self.p, self.n
        a = idx.size
        st = self._copy_static(idx)
        src, rkb = st.src, st.rkb
        size = self.cp_size[idx]
        pos = (self.cp_progress[idx] * size / KB / p.cache_chunk_kb).astype(np.int64)
        chunk = self.table.copy_base_chunk + pos  # the source file inside the image
        factor = np.where(src == SRC_VDISK, np.minimum(1.0, rkb / p.cache_read_io_kb), 0.0)
        miss, far = self._miss(idx, chunk, factor)
        miss_sh = np.zeros(a)
        smb = src == SRC_SMB
        if self.share_cache is not None and smb.any():
            miss_sh[smb] = ~self.share_cache.hit(pos[smb]) * np.minimum(1.0, rkb[smb] / p.cache_read_io_kb)
        # coupling: last step's response times say how fast each side could go alone
        two, b_cl = st.two, idx[st.two]
        r_a = np.where(two, self.resp_r[idx], 0.0)
        r_b = np.zeros(a)
        r_b[two] = self.resp_w[n + b_cl]
        free_a = _byte_rate(rkb * KB, st.win_r, st.z_a, r_a)
        free_b = _byte_rate(st.wkb * KB, st.win_w, np.zeros(a), r_b)
        pace = np.minimum(free_a, free_b)
        hold_a = np.where(two, _hold_s(rkb * KB, st.win_r, st.z_a, r_a, pace), 0.0)
        hold_b = _hold_s(st.wkb * KB, st.win_w, np.zeros(a), r_b, pace)
        # the costs are linear in cache misses and controller fullness: combine the templates
        sel, keep = st.sel, np.where(st.is_b, 0.0, 1.0)
        coef = np.stack(
            [
                np.ones(sel.size),
                miss[sel] * keep,
                far[sel] * keep,
                miss_sh[sel] * keep,
                self._full_frac[st.vol][sel],
            ]
        )
        q = np.einsum("kxrc,kc->xrc", st.tpl, coef)  # (7, roles, cols)
        fixed = np.einsum("kxc,kc->xc", st.tpl_fixed, coef)  # (2, cols)
        think = np.where(st.is_b, hold_b[sel], st.z_a[sel] + hold_a[sel])
        return _CopyRows(
            body=q[:6].transpose(2, 0, 1),
            ahead=(q[6] - q[4]).T,
            fixed=fixed,
            p_read=st.p_read,
            think=think,
            window=st.window,
            wbytes=st.wkb[sel] * KB,
            seek_w=st.seek_w[sel],
            udp=st.udp,
            n_req=st.n_req,
            chunk=chunk,
            clients=idx,
            two=two,
            b_clients=b_cl,
            read_b=rkb * KB,
            write_b=st.wkb * KB,
        )

    def _copy_static(self, idx: np.ndarray) -> _CopyStatic:
        """What does not change while the same clients copy: routes, windows, runs, cost templates."""
        key = b"".join(a.tobytes() for a in (idx, self.cp_src[idx], self.cp_dst[idx], self.cp_size[idx]))
        if self._copy_cache is not None and self._copy_cache[0] == key:
            return self._copy_cache[1]
        p, topo = self.p, self.topo
        a = idx.size
        src, dst = self.cp_src[idx], self.cp_dst[idx]
        rkb, wkb = self.cp_rkb[idx], self.cp_wkb[idx]
        size = self.cp_size[idx]
        two = self.cp_two[idx]
        n_r = np.maximum(1.0, size / KB / rkb)
        n_w = np.maximum(1.0, size / KB / wkb)
        local = p.copy_local_s_per_gb * size / 1e9 * self.local_factor[idx]
        vol = np.where(
            dst == DST_WC, topo.role_station[Role.WC_VOL, idx], topo.role_station[Role.SH_VOL, idx]
        )
        streams = np.bincount(vol, minlength=topo.n_stations)  # sequential writers per volume
        run_b = np.maximum(wkb * KB, self.ctrl_cap[vol] / np.maximum(1, streams[vol]))
        seek_w = wkb * KB / run_b
        seek_r = np.full(a, min(1.0, p.cache_read_io_kb / p.cache_chunk_kb))
        smb_window = float(min(p.copy_smb_requests_in_flight, p.smb_max_mpx_count))
        one = float(p.client_outstanding_requests)
        win_r = np.where(src == SRC_VDISK, one, smb_window)
        win_w = np.where(dst == DST_WC, one, smb_window)
        # columns: first channel of every copier, then the second channel of the two-stream ones
        b_cl = idx[two]
        cols = np.concatenate([idx, b_cl])
        sel = np.concatenate([np.arange(a), np.flatnonzero(two)])
        is_b = np.concatenate([np.zeros(a, dtype=bool), np.ones(b_cl.size, dtype=bool)])
        c = cols.size
        zero = np.zeros(c)

        def costs(miss: float, far: float, miss_sh: float, full: float) -> Costs:
            return request_costs(
                p,
                self.fx,
                topo.role_station[:, cols],
                src[sel],
                dst[sel],
                rkb[sel] * KB,
                wkb[sel] * KB,
                zero + miss,
                zero + far,
                zero + miss_sh,
                zero + full,
                topo.vdisk_remote[cols],
                topo.wc_remote[cols],
                topo.client_link_rate[cols],
                seek_r=seek_r[sel],
                seek_w=seek_w[sel],
                read_ahead=~is_b,
            )

        base = costs(0, 0, 0, 0)
        slopes = [costs(*unit) for unit in ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))]
        static = _CopyStatic(
            src=src,
            rkb=rkb,
            wkb=wkb,
            two=two,
            vol=vol,
            seek_w=seek_w,
            win_r=win_r,
            win_w=win_w,
            z_a=np.where(two, local / n_r, local / (n_r + n_w)),
            n_req=np.where(two, n_r, n_r + n_w),
            sel=sel,
            is_b=is_b,
            # first channel: the whole copy (local to local) or its source side; second: destination
            p_read=np.where(is_b, 0.0, np.where(two[sel], 1.0, (n_r / (n_r + n_w))[sel])),
            window=np.where(is_b, win_w[sel], np.where(two[sel], win_r[sel], one)),
            udp=np.where(is_b, dst[sel] == DST_WC, np.where(two[sel], src[sel] == SRC_VDISK, True)),
            tpl=np.stack([_body(base)] + [_body(c) - _body(base) for c in slopes]),
            tpl_fixed=np.stack([_fixed(base)] + [_fixed(c) - _fixed(base) for c in slopes]),
        )
        self._copy_cache = (key, static)
        return static

    def _reorder_factor(self) -> np.ndarray:
        """Per station: how much shorter positioning gets with the current queue (1: no gain).

        With q requests waiting per spindle the disk serves the nearest first; its average
        positioning time falls as q^-exponent (`queue_reorder_exponent`), up to a depth limit.
        """
        p = self.p
        q = self.customers * self.penalty / self.topo.m
        q = np.clip(q, 1.0, p.queue_reorder_max_depth)
        return np.where(self.is_volume, q ** (-p.queue_reorder_exponent), 1.0)

    @property
    def _full_frac(self) -> np.ndarray:
        """0 while a controller's cache has room, rising to 1 as it fills (no write-back: 1)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(self.ctrl_cap > 0, self.ctrl_fill / self.ctrl_cap, 1.0)
        return np.clip((frac - 0.9) / 0.1, 0.0, 1.0)

    def _count(self, dt: float, d: Demands, sol: Solution, extra: dict[str, Any]) -> None:
        p = self.p
        self.busy_s += sol.util * self.topo.m * dt
        self.q_integral += sol.customers * dt
        # transfers on volumes: reads are read-ahead I/Os of cache_read_io_kb, writes the host's
        vol = self.is_volume
        reads = sol.reads_at * dt
        writes = sol.writes_at * dt
        self.st_reads[vol] += reads[vol]
        self.st_writes[vol] += writes[vol]
        self.st_bytes_r[vol] += reads[vol] * p.cache_read_io_kb * KB
        # write bytes and the positionings they will cost, per station, from each row's writes
        n_st = self.busy_s.size
        w_visits = (sol.rate * (1.0 - d.p_read))[:, None] * d.visit_w * dt
        flat = d.station.ravel()
        wvol = np.bincount(flat, weights=(w_visits * extra["wbytes"][:, None]).ravel(), minlength=n_st)
        seeks: np.ndarray = writes
        if extra["copy"] is not None:  # else every write is random: one positioning each
            seeks = np.bincount(flat, weights=(w_visits * extra["seek_w"][:, None]).ravel(), minlength=n_st)
        self.st_bytes_w[vol] += wvol[vol]
        # what the write-behind buffers (controller, file-server cache) absorbed: the fast part
        full = self._full_frac
        keep = (1.0 - full) * vol * (self.ctrl_cap > 0)
        absorbed = wvol * keep
        if absorbed.any():
            self.ctrl_fill += absorbed
            self.ctrl_n += writes * keep
            self.ctrl_pos += seeks * keep * self.pos_s
            with np.errstate(divide="ignore", invalid="ignore"):
                self.ctrl_size = np.where(self.ctrl_n > 0, self.ctrl_fill / self.ctrl_n, self.ctrl_size)
        # session retries: each streaming request that outlives the client's timeout is re-sent
        # (SMB requests to a share are not the streaming protocol's and never count)
        udp: np.ndarray | None = extra["udp"]
        u: np.ndarray | slice = slice(None) if udp is None else np.flatnonzero(udp)
        if udp is None or udp.any():
            p_r = d.p_read[u]
            sig_all: np.ndarray | float = extra["sigma_w"]
            sig_w = sig_all if isinstance(sig_all, float) else sig_all[u]
            t_out = self._timeouts(sol.resp_r[u], sol.resp_w[u], p_r, sig_w)
            t_max = p.udp_timeout_max_ms / 1e3
            b = p.udp_timeout_backoff
            resends = (
                sol.rate[u]
                * dt
                * (
                    p_r * expected_resends(sol.resp_r[u], t_out, p.read_response_sigma, 4, b, t_max)
                    + (1.0 - p_r) * expected_resends(sol.resp_w[u], t_out, sig_w, 4, b, t_max)
                )
            )
            self._add_retries(extra["client"][u], resends)

    def _timeouts(
        self, resp_r: np.ndarray, resp_w: np.ndarray, p_read: np.ndarray, sigma_w: np.ndarray | float
    ) -> np.ndarray | float:
        """Each client's current timeout, s: fixed, or adapted to its own response times."""
        p = self.p
        floor = p.udp_timeout_ms / 1e3
        if not p.udp_timeout_adaptive:
            return floor
        return adaptive_timeout(
            resp_r,
            resp_w,
            p_read,
            p.read_response_sigma,
            sigma_w,
            floor,
            p.udp_timeout_var_factor,
            p.udp_timeout_max_ms / 1e3,
        )

    def _add_retries(self, idx: np.ndarray, expected: np.ndarray) -> None:
        # a Poisson process in 'expected retries': integer counts, deterministic for a seed
        self.retry_acc[idx] += expected
        due = idx[self.retry_acc[idx] >= self.retry_next[idx]]
        while due.size:
            self.retries[due] += 1
            self.retry_next[due] += self.rng.exponential(size=due.size)
            due = due[self.retry_acc[due] >= self.retry_next[due]]

    def _progress(self, dt: float, act: np.ndarray, sol: Solution, extra: dict[str, Any]) -> None:
        rate = sol.rate[: act.size]  # each client's own row
        copying = extra["copying"]
        n_req = extra["n_req"]
        # time credit: a client that entered its phase mid-step uses only the rest of the step
        span = dt + self.credit[act]
        self.credit[act] = 0.0
        dx = rate * span / n_req
        # post-boot activity is time-driven (services starting, logging): it lasts its local time
        # whatever the server's speed, and a slow server just means fewer requests in it
        timed = self.phase[act] == Phase.SETTLE
        if timed.any():
            dx[timed] = span[timed] / (self.table.local_s[Phase.SETTLE] * self.local_factor[act[timed]])
        cp: _CopyRows | None = extra["copy"]
        if cp is not None:
            # a copy with a second channel goes as fast as the slower of its two streams
            k = np.flatnonzero(copying)
            two = cp.two
            if two.any():
                b_rate = sol.rate[act.size :]
                bps = np.minimum(rate[k][two] * cp.read_b[two], b_rate * cp.write_b[two])
                dx[k[two]] = bps * span[k[two]] / self.cp_size[cp.clients[two]]
            self.cp_rate_bps[cp.clients] = dx[k] * self.cp_size[cp.clients] / np.maximum(span[k], 1e-12)
        # caches: the chunks read this step become resident for everyone
        self._touch_caches(act, extra["chunk"], dx, copying)
        if copying.any():
            ci = act[copying]
            before = self.cp_progress[ci].copy()
            self.cp_progress[ci] = np.minimum(1.0, before + dx[copying])
            for j in np.flatnonzero(self.cp_progress[ci] >= 1.0 - 1e-12):
                i = ci[j]
                rec = self.copy_list[int(self.copy_of[i])]
                # the last byte went some way into the step
                frac = (1.0 - before[j]) / dx[copying][j] if dx[copying][j] > 0 else 1.0
                rec.progress, rec.finished = 1.0, self.t + dt * min(1.0, frac)
                self.copy_of[i] = -1
                self.cp_rate_bps[i] = 0.0
        boot = ~copying
        idx = act[boot]
        self.x[idx] += dx[boot]
        over = self.x[idx] - 1.0
        done = over >= -1e-12
        for i, o, r, nreq in zip(idx[done], over[done], rate[boot][done], n_req[boot][done], strict=True):
            ph = int(self.phase[i])
            # the phase ended `late` seconds before the end of the step
            late = min(dt, o * nreq / r) if r > 0 else 0.0
            at = self.t + dt - late
            if ph == Phase.LOGON:
                # agent start: the boot is complete
                self.last_boot_s[i] = at - self.boot_start[i]
                self.boot_count[i] += 1
            self.phase[i] = ph + 1 if ph < Phase.IDLE else Phase.IDLE
            self.x[i] = 0.0
            self.credit[i] = late

    def _touch_caches(self, act: np.ndarray, chunk: np.ndarray, dx: np.ndarray, copying: np.ndarray) -> None:
        # who reads the image now: booting/idle clients, and copies whose source is on the vDisk
        reading = (self.miss_factor[self.phase[act]] > 0) & ~copying
        reading |= copying & (self.cp_src[act] == SRC_VDISK)
        ck = self.client_cache_key[act]
        tb = self.table
        file_chunks = self.cp_size[act] / (self.p.cache_chunk_kb * KB)
        for key_i, key in enumerate(self.cache_keys):
            sel = np.flatnonzero((ck == key_i) & reading)
            if sel.size:
                per = np.where(copying[sel], file_chunks[sel], tb.region_chunks[self.phase[act[sel]]])
                span = np.minimum((dx[sel] * per).astype(np.int64) + 1, 64)
                touched = chunk[sel] if int(span.max()) == 1 else _expand(chunk[sel], span)
                self.caches[key].touch(touched, self.t)
                remote = self.topo.vdisk_server
                if remote in self.caches and remote != key:
                    self.caches[remote].touch(touched, self.t)
        if self.share_cache is not None and copying.any():
            k = np.flatnonzero(copying & (self.cp_src[act] == SRC_SMB))
            if k.size:
                ck_b = self.p.cache_chunk_kb * KB
                i = act[k]
                c0 = (self.cp_progress[i] * self.cp_size[i] / ck_b).astype(np.int64)
                c1 = (np.minimum(1.0, self.cp_progress[i] + dx[k]) * self.cp_size[i] / ck_b).astype(np.int64)
                self.share_cache.touch(_expand(c0, np.minimum(c1 - c0 + 1, 64)), self.t)

    def _destage(self, dt: float) -> None:
        """Write-behind buffers write their data to the spindles with whatever time host I/O leaves.

        Each byte costs its transfer, and the held data cost the positionings they brought in: one
        per random write, one per run of a sequential stream (``ctrl_pos``). So a buffer of random
        8 KB writes drains at a few hundred writes/s, one of copies' sequential data near the
        spindles' media rate.
        """
        has = self.ctrl_fill > 0
        if not has.any():
            return
        spindle_busy = np.clip(self.util, 0.0, 1.0)  # host I/O share of the spindles
        free = self.topo.m * (1.0 - spindle_busy)
        with np.errstate(divide="ignore", invalid="ignore"):
            pos_per_byte = np.where(has, self.ctrl_pos / self.ctrl_fill, 0.0)
        drain = free / (self.penalty * (pos_per_byte + 1.0 / self.media)) * dt
        left = np.where(has, np.maximum(0.0, self.ctrl_fill - drain), 0.0)
        if self.os_buffered.any():
            # the file server's lazy writer is the OS's own I/O: its flushes are in the disk queue
            busy = (self.ctrl_fill - left) * self.penalty * (pos_per_byte + 1.0 / self.media)
            frac = np.clip(busy / (self.topo.m * dt), 0.0, 1.0)
            self.q_integral += np.where(self.os_buffered, self.p.lazy_writer_ios * frac * dt, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.ctrl_pos = np.where(has, self.ctrl_pos * left / self.ctrl_fill, 0.0)
        self.ctrl_fill = left
        self.ctrl_n = np.where(self.ctrl_fill > 0, self.ctrl_fill / self.ctrl_size, 0.0)

    def _idle_cpu(self, dt: float) -> None:
        idle = self.p.server_idle_cpu_pct / 100.0
        up = self.station_up & self.is_cpu
        extra = np.minimum(idle, np.maximum(0.0, 1.0 - self.util))
        self.busy_s += np.where(up, extra * self.topo.m * dt, 0.0)

    def _idle_interval(self, dt: float) -> None:
        if dt <= 0:
            return
        self.util = np.zeros_like(self.util)
        self.customers = np.zeros_like(self.customers)
        self._idle_cpu(dt)

    # --- views -----------------------------------------------------------------------------------
    def memory_used_mb(self, server: str) -> float:
        p = self.p
        node = self.topo.servers[server]
        used = p.server_os_base_mb
        mine = self.client_server_name == server
        sessions = int(np.count_nonzero(mine & (self.phase >= Phase.REALMODE) & (self.phase <= Phase.IDLE)))
        used += sessions * p.session_mb
        if server in self.caches:
            used += self.caches[server].working_set_mb(self.t)
        if server == self.topo.share_server and self.share_cache is not None:
            used += self.share_cache.working_set_mb(self.t)
            if self.share_station >= 0:  # buffered writes the lazy writer has not written yet
                st = self.share_station
                used += (
                    min(
                        float(self.os_dirty_cap[st]),
                        max(0.0, float(self.ctrl_fill[st] - (self.ctrl_cap[st] - self.os_dirty_cap[st]))),
                    )
                    / hwm.MB
                )
        total = node.hw.ram_gb * 1024.0
        return min(used, total)

    def offered_write_iops(self) -> dict[str, float]:
        """Host writes per second arriving at each volume in the last step (for the reader)."""
        sol = self.last_solution
        if sol is None:
            return {}
        return {f"{v.server}:{v.volume.name}": float(sol.writes_at[v.station]) for v in self.topo.volumes}

    def snapshot(self) -> dict[str, float]:
        """The queue story of the moment, with units: offered writes vs what the spindles take."""
        out: dict[str, float] = {"t": self.t}
        for v in self.topo.volumes:
            key = f"{v.server}:{v.volume.name}"
            out[f"{key}.queue"] = float(self.customers[v.station])
            out[f"{key}.write_iops"] = (
                float(self.last_solution.writes_at[v.station]) if self.last_solution else 0.0
            )
            out[f"{key}.controller_fill_mb"] = float(self.ctrl_fill[v.station] / hwm.MB)
            out[f"{key}.capacity_write_iops"] = hwm.write_capacity_iops(
                v.volume, self.p, float(self.ctrl_size[v.station] / KB)
            )
        return out


@dataclass
class _CopyRows:
    """The request streams of the copying clients for one step (see ``TwinModel._copy_rows``)."""

    # columns: the first channel of every copier, then the second channels
    body: np.ndarray  # (cols, 6, roles): work, latency, visits of a read and of a write
    ahead: np.ndarray  # (cols, roles): disk reads nobody waits for (read-ahead)
    fixed: np.ndarray  # (2, cols): no-queue delay of a read, of a write
    p_read: np.ndarray  # per column
    think: np.ndarray
    window: np.ndarray
    wbytes: np.ndarray
    seek_w: np.ndarray
    udp: np.ndarray  # streaming-protocol requests (their timeouts are session retries)
    n_req: np.ndarray  # per copier: requests of its first channel over the whole file
    chunk: np.ndarray  # per copier: the image chunk its source reads now
    clients: np.ndarray
    two: np.ndarray  # per copier: has a second channel
    b_clients: np.ndarray
    read_b: np.ndarray  # per copier: bytes per read / write request
    write_b: np.ndarray


@dataclass
class _CopyStatic:
    """Per copier (or per column), fixed while the same clients copy (see ``_copy_static``)."""

    src: np.ndarray
    rkb: np.ndarray
    wkb: np.ndarray
    two: np.ndarray
    vol: np.ndarray  # the volume each copy writes
    seek_w: np.ndarray  # positionings per write: the write over its stream's buffered run
    win_r: np.ndarray
    win_w: np.ndarray
    z_a: np.ndarray  # local work per request of the first channel
    n_req: np.ndarray
    sel: np.ndarray  # column -> copier
    is_b: np.ndarray  # column is a second channel
    p_read: np.ndarray  # per column
    window: np.ndarray
    udp: np.ndarray
    # the cost templates, linear in (1, miss, far miss, share miss, full): the costs with every chunk
    # cached and every buffer empty, then per unit of each; work, latency, visits and disk reads
    tpl: np.ndarray  # (5, 7, roles, cols): work_r, work_w, lat_r, lat_w, visit_r, visit_w, io_r
    tpl_fixed: np.ndarray  # (5, 2, cols): fixed_r, fixed_w


def _fixed(c: Costs) -> np.ndarray:
    return np.stack([c.fixed_r, c.fixed_w])


def _body(c: Costs) -> np.ndarray:
    """The per-role arrays of a cost, stacked: work, latency and visits (read, write), disk reads."""
    assert c.io_r is not None
    return np.concatenate([c.stack(), c.io_r[None]])


def _byte_rate(size_b: np.ndarray, window: np.ndarray, think_s: np.ndarray, resp_s: np.ndarray) -> np.ndarray:
    """Bytes/s of a request stream with ``window`` in flight: window x size / (window x think + R)."""
    den = window * think_s + resp_s
    with np.errstate(divide="ignore"):
        return np.where(den > 0, window * size_b / np.maximum(den, 1e-12), np.inf)


def _hold_s(
    size_b: np.ndarray, window: np.ndarray, think_s: np.ndarray, resp_s: np.ndarray, pace_bps: np.ndarray
) -> np.ndarray:
    """Extra wait per request that slows a stream to ``pace_bps`` (0 where it is the slower one)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per_req = np.where(np.isfinite(pace_bps) & (pace_bps > 0), size_b / pace_bps, 0.0)
    return np.maximum(0.0, per_req - resp_s / window - think_s)


def _expand(start: np.ndarray, span: np.ndarray) -> np.ndarray:
    """start[i], start[i]+1, ..., start[i]+span[i]-1 for every i, concatenated."""
    rep = np.repeat(start, span)
    return rep + (np.arange(rep.size) - np.repeat(np.cumsum(span) - span, span))


def _van_der_corput(n: int) -> np.ndarray:
    """0.5, 0.25, 0.75, 0.125, ...: the first n points of the base-2 van der Corput sequence."""
    out = np.zeros(n)
    for i in range(n):
        k, denom, x = i + 1, 1.0, 0.0
        while k:
            denom *= 2.0
            x += (k & 1) / denom
            k >>= 1
        out[i] = x
    return out
