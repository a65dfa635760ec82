"""The VDI twin's state and time step: desktops, hosts, PVS servers, arrays, counters.

:class:`VdiModel` knows nothing about threads or wall-clock time: ``advance_to(t)`` moves it to lab
time ``t`` in steps of 1 s while desktops boot or log on, a few seconds while they only work, one
jump while everything is off. Each step:

1. every powered-on desktop offers its phase's guest I/O (image reads, private reads, writes) as a
   closed loop: local work per I/O (stretched by its host's CPU contention) plus the I/O's response
   time over ``guest_outstanding_io`` in flight (:mod:`.phases`);
2. the route of each I/O kind follows from the provisioning and the caches: PVS reads go to the PVS
   server (and to the vDisk volume on a RAM-cache miss); clone image reads to the replica or base
   disk on the array (read cache, else tiers); writes to the desktop's datastore, acknowledged by
   the array's mirrored write cache while the drives keep up with destaging (RAID penalty), or
   waiting for the drives once it is full; a PVS RAM cache keeps writes in guest RAM until the
   session's distinct written data overflows it;
3. the closed network is solved by approximate mean-value analysis (:func:`..solver.solve`,
   warm-started): latencies, queue lengths and utilisations come out of the queueing;
4. desktops progress through their phases, counters accumulate (per VM, host, datastore, array
   volume, tier, controller), the write caches fill or drain, sessions record their operations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.faults import FaultKind
from labctl.inventory.vdi import VdiLab
from labctl.sim.faults import FaultBook
from labctl.sim.twin.solver import Demands, solve
from labctl.sim.twin.vdi.phases import PHASE_T, Phase, T
from labctl.sim.twin.vdi.topology import D_TIERS, I_TIERS, MAX_TIERS, N_ROLES, Mode, Role, build_topology

KB = 1024.0
MB = 1024.0 * 1024.0
DT_BUSY_S = 2.0  # desktops booting, logging on or off: phases of tens of seconds (ends are interpolated)
DT_WORK_S = 2.5  # only settling, working and idle desktops: rates change over minutes
DT_IDLE_S = 10.0  # only idle desktops: background I/O
_ROLES_D = (Role.DPORT, Role.DCTRL, *D_TIERS)
_ROLES_I = (Role.IPORT, Role.ICTRL, *I_TIERS)
# plain ints for the hot paths (an IntEnum attribute lookup costs a Python call)
_HNET, _DPORT, _DCTRL, _IPORT, _ICTRL, _PNIC, _PCPU = (
    int(r) for r in (Role.HNET, Role.DPORT, Role.DCTRL, Role.IPORT, Role.ICTRL, Role.PNIC, Role.PCPU)
)
_DT = [int(r) for r in D_TIERS]
_IT = [int(r) for r in I_TIERS]
_OFF, _PON, _BOOT, _SETTLE, _IDLE, _LOGIN, _WORK, _LOGOFF, _SHUT = (int(ph) for ph in Phase)
_T_BOOT, _T_IDLE, _T_WORK_FIRST = int(T.BOOT), int(T.IDLE), int(T.WORK_FIRST)
_M_DISK, _M_RAM, _M_SERVER, _M_CLONE, _M_FULL = (int(x) for x in Mode)
_BUSY = np.array([False, True, True, False, False, True, False, True, True])  # by Phase
_ON = np.array([False, True, True, True, True, True, True, True, True])


class SessionStateCode:
    LOGGING_IN = 0
    ACTIVE = 1
    LOGGING_OFF = 2
    ENDED = 3
    FAILED = 4


@dataclass
class SessionRecord:
    sid: str
    desktop: int
    user: str
    requested: float
    state: int = SessionStateCode.LOGGING_IN
    logged_in: float | None = None
    ended: float | None = None
    failed: str | None = None
    fail_at: float | None = None  # a logon that will fail (fault), at this lab time
    operations: int = 0
    loops: int = 0


@dataclass
class OpLog:
    """Every timed operation of every session, in growable columns (cheap to append by the thousand)."""

    session: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    op: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    response: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n: int = 0

    def append(
        self, session: np.ndarray, index: np.ndarray, op: np.ndarray, start: np.ndarray, resp: np.ndarray
    ) -> None:
        k = session.size
        if self.n + k > self.session.size:
            cap = max(1024, 2 * (self.n + k))
            for name in ("session", "index", "op", "start", "response"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        sl = slice(self.n, self.n + k)
        self.session[sl], self.index[sl], self.op[sl], self.start[sl], self.response[sl] = (
            session,
            index,
            op,
            start,
            resp,
        )
        self.n += k


@dataclass
class _ClassIo:
    """One step's solution per class of identical desktops (rows), and how it maps to desktops."""

    act: np.ndarray  # the active desktops
    inv: np.ndarray  # class of each active desktop
    cnt: np.ndarray  # desktops per class
    rows: np.ndarray  # a representative desktop per class
    st: np.ndarray  # (classes, roles) stations
    wait: np.ndarray  # (classes, roles) queueing wait per visit, s
    x: tuple[np.ndarray, np.ndarray, np.ndarray]  # I/Os per second of one desktop: image, private, write
    v: tuple[np.ndarray, np.ndarray, np.ndarray]  # visits per I/O by role
    svc: tuple[np.ndarray, np.ndarray, np.ndarray]  # service per visit by role, s
    r: tuple[np.ndarray, np.ndarray, np.ndarray]  # response per I/O, s
    kb: tuple[np.ndarray, np.ndarray, np.ndarray]  # I/O sizes
    ctrl: tuple[tuple[np.ndarray, np.ndarray], ...]  # controller fixed delays per kind (D side, I side)
    clone: np.ndarray
    full: np.ndarray
    a_d: np.ndarray
    a_i: np.ndarray


class VdiModel:
    def __init__(
        self,
        vdi: VdiLab,
        start_t: float = 0.0,
        faults: FaultBook | None = None,
        fault_delays_s: tuple[float, ...] = (),
    ):
        """``fault_delays_s``: the inventory's fault delays (``after_s``), so steps land on them."""
        self.vdi = vdi
        self.p = p = vdi.twin
        self.topo = topo = build_topology(vdi)
        self.tm = topo.templates
        self.faults = faults
        self._fault_at = sorted(start_t + s for s in fault_delays_s if s > 0)
        self.t = start_t
        self.t0 = start_t
        n = len(topo.names)
        self.n = n
        h, d, a, s = len(topo.hosts), len(topo.datastores), len(topo.arrays), topo.n_st
        # --- desktops ---
        self.phase = np.zeros(n, dtype=np.int64)
        self.x = np.zeros(n)  # progress in the current pass of the phase (0..1)
        self.until = np.full(n, np.inf)  # end of a timed phase or of a session's connection
        self.restart = np.zeros(n, dtype=bool)
        self.loops = np.zeros(n, dtype=np.int64)
        self.op_next = np.zeros(n, dtype=np.int64)
        self.boot_count = np.zeros(n, dtype=np.int64)
        self.os_up_t = np.full(n, np.nan)
        self.stunned = np.zeros(n, dtype=bool)
        self.footprint_mb = np.zeros(n)  # distinct data written since boot
        self.session_of = np.full(n, -1, dtype=np.int64)
        self.vcpus = np.array([topo.pools[i].vcpus for i in topo.pool_of], dtype=float)
        self.ram_mb = np.array([topo.pools[i].ram_gb * 1024.0 for i in topo.pool_of])
        self.core_mhz = np.array([hh.ghz * 1000.0 for hh in topo.hosts])
        self.host_cap_mhz = np.array([hh.cpu_mhz for hh in topo.hosts])
        self.host_ram_mb = np.array([hh.ram_gb * 1024.0 for hh in topo.hosts])
        # --- live figures of the last step (for views and the next step) ---
        self.stretch = np.ones(h)  # host CPU demand over capacity (>= 1)
        self.vm_cpu_mhz = np.zeros(n)
        self.vm_consumed_mb = np.zeros(n)
        self.vm_active_mb = np.zeros(n)
        self.vm_balloon_mb = np.zeros(n)
        self.r_img = np.zeros(n)  # last response times by I/O kind, s
        self.r_priv = np.zeros(n)
        self.r_w = np.zeros(n)
        self.rate = np.zeros(n)  # guest I/Os per second
        self.xrate = np.zeros(n)  # progress through the current pass of the phase, per second
        # --- cumulative counters ---
        z = np.zeros
        self.vm_cpu = z(n)
        self.vm_mem_active = z(n)
        self.vm_mem_consumed = z(n)
        self.vm_balloon = z(n)
        self.vm_rx, self.vm_tx = z(n), z(n)
        self.vm_reads, self.vm_writes, self.vm_rbytes, self.vm_wbytes = z(n), z(n), z(n), z(n)
        self.vm_rlat, self.vm_wlat = z(n), z(n)
        self.host_cpu, self.host_mem_consumed, self.host_mem_active, self.host_balloon = (
            z(h),
            z(h),
            z(h),
            z(h),
        )
        self.host_rx, self.host_tx = z(h), z(h)
        self.host_maint = np.zeros(h, dtype=bool)
        self.hd = {k: z(h * d) for k in ("reads", "writes", "rbytes", "wbytes", "rlat", "wlat")}
        self.ds_tot = {k: z(d) for k in ("reads", "writes", "rbytes", "wbytes", "rlat", "wlat")}
        self.vol = {k: z(d) for k in ("reads", "writes", "rbytes", "wbytes", "rresp", "wresp", "queue")}
        self.st_reads, self.st_writes, self.st_rbytes, self.st_wbytes, self.st_busy = (
            z(s),
            z(s),
            z(s),
            z(s),
            z(s),
        )
        self.ds_full = np.zeros(d, dtype=bool)
        # --- arrays ---
        self.dirty = z(a)  # bytes
        self.wc_cap = np.array([am.write_cache_bytes for am in topo.arrays])
        self.sync = np.zeros(a, dtype=bool)  # write cache full: writes wait for the drives
        self.write_through = np.zeros(a, dtype=bool)
        self.stall_until = np.full(d, -np.inf)  # per volume: its controller failed, the peer takes over
        self.ctrl_failed = [np.zeros(len(am.ctrls), dtype=bool) for am in topo.arrays]
        self._arr_vectors()
        # --- PVS servers: RAM caches start warm (servers run for days; the papers' tests repeat) ---
        hot = p.image_hot_mb
        self.pvs_cached_mb = np.minimum(topo.pvs_cache_cap_mb, hot) if len(topo.pvs) else z(0)
        # --- solver warm start ---
        self.backlog = z(s)
        self.own = np.zeros((n, N_ROLES))
        self.util = z(s)
        self.open_rho = z(s)
        self._destage_s = z(s)  # drive time of one destaged write per tier station, s
        # --- sessions ---
        self.sessions: list[SessionRecord] = []
        self._failing: list[SessionRecord] = []  # logons that will fail (fault)
        self.session_ids: dict[str, int] = {}
        self.ops = OpLog()
        self.steps = 0

    # ------------------------------------------------------------------------------------------
    def _arr_vectors(self) -> None:
        """Per-array placement figures as arrays (index n_arrays is 'no array': zeros)."""
        topo = self.topo
        a = len(topo.arrays)
        self.miss_img = np.zeros(a + 1)
        self.miss_priv = np.zeros(a + 1)
        self.tiers_img = np.zeros((a + 1, MAX_TIERS))
        self.tiers_priv = np.zeros((a + 1, MAX_TIERS))
        self.tiers_w = np.zeros((a + 1, MAX_TIERS))
        self.penalty = np.ones((a + 1, MAX_TIERS))
        self.ctrl_w_s = np.zeros(a + 1)
        self.ctrl_r_s = np.zeros(a + 1)
        for i, am in enumerate(topo.arrays):
            pl = am.placement
            self.miss_img[i], self.miss_priv[i] = pl.image_read_miss, pl.private_read_miss
            k = len(am.tiers)
            self.tiers_img[i, :k] = pl.image_tiers[:k]
            self.tiers_priv[i, :k] = pl.private_tiers[:k]
            self.tiers_w[i, :k] = pl.write_tiers[:k]
            self.penalty[i, :k] = [t.penalty for t in am.tiers]
            self.ctrl_w_s[i], self.ctrl_r_s[i] = am.ctrl_write_s, am.ctrl_read_s

    # --- power -------------------------------------------------------------------------------------
    def power_on(self, idx: np.ndarray) -> None:
        idx = idx[self.phase[idx] == _OFF]
        self.phase[idx] = _PON
        self.until[idx] = self.t + self.p.power_on_s
        self.x[idx] = 0.0

    def force_off(self, idx: np.ndarray) -> None:
        self._end_sessions(idx, "the desktop was powered off")
        self.phase[idx] = _OFF
        self.until[idx] = np.inf
        self.restart[idx] = False
        self.stunned[idx] = False

    def shutdown(self, idx: np.ndarray, restart: bool) -> None:
        """Graceful guest shutdown (or restart); a desktop not yet up is reset instead."""
        idx = idx[(self.phase[idx] != _OFF) & (self.phase[idx] != _SHUT)]
        self._end_sessions(idx, "the desktop shut down")
        self.phase[idx] = _SHUT
        self.until[idx] = self.t + self.p.shutdown_s
        self.restart[idx] = restart

    def reset(self, idx: np.ndarray) -> None:
        self._end_sessions(idx, "the desktop was reset")
        self.phase[idx] = _PON
        self.until[idx] = self.t + self.p.power_on_s
        self.stunned[idx] = False

    def _end_sessions(self, idx: np.ndarray, why: str) -> None:
        for i in idx[self.session_of[idx] >= 0]:
            rec = self.sessions[int(self.session_of[i])]
            if rec.state in (
                SessionStateCode.LOGGING_IN,
                SessionStateCode.ACTIVE,
                SessionStateCode.LOGGING_OFF,
            ):
                done = rec.state == SessionStateCode.LOGGING_OFF
                rec.state = SessionStateCode.ENDED if done else SessionStateCode.FAILED
                rec.failed = None if done else why
                rec.ended = self.t
            self.session_of[i] = -1

    # --- sessions ----------------------------------------------------------------------------------
    def refusal(self, i: int) -> str | None:
        """Why desktop ``i`` cannot take a session now, or None."""
        ph = int(self.phase[i])
        if ph in (_OFF, _SHUT):
            return "it is off"
        if self.stunned[i]:
            return "ESXi stunned it: its datastore is full"
        if self.session_of[i] >= 0:
            return f"it already runs session {self.sessions[int(self.session_of[i])].sid}"
        if not self.registered()[i] or ph not in (_SETTLE, _IDLE):
            return "it is still booting: its broker agent has not registered yet"
        return None

    def start_session(self, i: int, user: str, fails: bool = False) -> SessionRecord:
        """A user logs on to desktop ``i`` (the caller checked :meth:`refusal`); ``fails``: the logon will fail."""
        rec = SessionRecord(sid=f"session-{len(self.sessions) + 1}", desktop=i, user=user, requested=self.t)
        if fails:
            rec.fail_at = self.t + self.p.login_fail_after_s
            self._failing.append(rec)
        self.session_ids[rec.sid] = len(self.sessions)
        self.session_of[i] = len(self.sessions)
        self.sessions.append(rec)
        self._enter(np.array([i]), _LOGIN)
        if self.p.session_connect_s > 0:
            self.until[i] = self.t + self.p.session_connect_s  # brokering and the protocol connection
        return rec

    def logoff(self, sid: int) -> SessionRecord:
        rec = self.sessions[sid]
        if rec.state in (SessionStateCode.LOGGING_IN, SessionStateCode.ACTIVE):
            rec.state = SessionStateCode.LOGGING_OFF
            rec.fail_at = None
            self._enter(np.array([rec.desktop]), _LOGOFF)
        return rec

    # --- questions -----------------------------------------------------------------------------------
    def os_up(self) -> np.ndarray:
        ph = self.phase
        return (ph >= _SETTLE) & (ph <= _LOGOFF) & ~self.stunned

    def registered(self) -> np.ndarray:
        # NaN (never up) compares False
        return self.os_up() & (self.os_up_t <= self.t - self.p.vda_registration_s + 1e-9)

    def available(self) -> np.ndarray:
        ph = self.phase
        idle = (ph == _SETTLE) | (ph == _IDLE)
        return (
            idle
            & ~self.stunned
            & (self.session_of < 0)
            & (self.os_up_t <= self.t - self.p.vda_registration_s + 1e-9)
        )

    # --- time --------------------------------------------------------------------------------------
    def advance_to(self, t: float) -> None:
        while self.t < t - 1e-9:
            dt = min(self._dt(), t - self.t)
            self._step(dt)

    def _dt(self) -> float:
        dt = self._dt_activity()
        while self._fault_at and self._fault_at[0] <= self.t + 1e-9:
            self._fault_at.pop(0)
        if self._fault_at:
            dt = min(dt, self._fault_at[0] - self.t)  # land on a fault's time: it acts from there
        return dt

    def _dt_activity(self) -> float:
        ph = self.phase
        if not (ph != _OFF).any():
            nxt = [rec.fail_at for rec in self._failing if rec.fail_at is not None]
            return max(1e-3, min(nxt) - self.t) if nxt else math.inf
        if _BUSY[ph].any() or np.isfinite(self.until).any():
            dt = DT_BUSY_S
        elif ((ph == _SETTLE) | (ph == _WORK)).any():
            dt = DT_WORK_S
        else:
            dt = DT_IDLE_S
        # timed ends (power-on, shutdown, a session's connection) are handled at the next step's
        # start: at most one step late, which the phases' tens of seconds absorb
        return dt

    def _step(self, dt: float) -> None:
        if math.isinf(dt):
            return
        self._check_faults()
        self._timed_transitions()
        ph = self.phase
        if not self._failing and not (ph != _OFF).any():
            # every desktop off: only the hosts' own memory counts (a quiet lab costs next to nothing)
            base = np.where(self.host_maint, 0.0, self.p.host_mem_base_gb * 1024.0)
            self.host_mem_consumed += base * KB * dt
            self.util[:] = 0.0
            self.t += dt
            self.steps += 1
            return
        on = _ON[ph]
        connecting = (ph == _LOGIN) & np.isfinite(self.until)
        tr = PHASE_T[ph]
        tr[(ph == _WORK) & (self.loops == 0)] = _T_WORK_FIRST
        tr[connecting] = _T_IDLE
        io_mask = on & ~self.stunned & (ph != _PON) & (ph != _SHUT)
        act = np.flatnonzero(io_mask)
        rates = np.zeros(self.n)
        self.xrate[~io_mask] = 0.0
        if act.size:
            self._io_step(act, tr[act], dt, connecting[act])
            rates[act] = self.rate[act]
        else:
            self.util[:] = 0.0
            self.open_rho[:] = 0.0
        self._hosts_step(on, tr, dt, rates)
        self.t += dt
        self.steps += 1

    # --- the I/O step --------------------------------------------------------------------------------
    def _io_step(self, act: np.ndarray, tr_all: np.ndarray, dt: float, conn_all: np.ndarray) -> None:
        """Solve one step for the active desktops, one row per class of identical desktops.

        Desktops of a class share pool, host, datastore, PVS server, phase template and (for a PVS
        RAM cache) a footprint within 4 MB: the same offered load, so the same rates and responses.
        """
        topo, p, tm = self.topo, self.p, self.tm
        F_all = self.footprint_mb[act]
        bucket = np.where(topo.mode[act] == _M_RAM, np.floor(F_all / 4.0), 0.0).astype(np.int64)
        key = ((topo.static_class[act] * 8 + tr_all) * 2 + conn_all) * (1 << 20) + bucket
        _, first, inv, cnt_i = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        cnt = cnt_i.astype(float)
        rows = act[first]
        tr, _connecting = tr_all[first], conn_all[first]
        C = rows.size
        pi = topo.pool_of[rows]
        n_img, n_priv, n_w = tm.n_img[pi, tr], tm.n_priv[pi, tr], tm.n_w[pi, tr]
        kb_img, kb_priv, kb_w = tm.kb_img[pi, tr], tm.kb_priv[pi, tr], tm.kb_w[pi, tr]
        n_tot = n_img + n_priv + n_w
        mode = topo.mode[rows]
        na = len(topo.arrays)
        a_d = topo.ds_array[topo.ds_of[rows]]
        img = topo.img_ds[rows]
        a_i = np.where(img >= 0, topo.ds_array[np.maximum(img, 0)], na)
        st = topo.station[rows]
        svc_io, svc_kb = topo.s_io[st], topo.s_kb[st]

        # --- what share of each kind leaves the guest, and where it goes (visits per I/O, C x roles) ---
        pvs = (mode == _M_DISK) | (mode == _M_RAM) | (mode == _M_SERVER)
        ram = mode == _M_RAM
        server = mode == _M_SERVER
        full = mode == _M_FULL
        clone = mode == _M_CLONE
        F = np.bincount(inv, F_all, C) / cnt
        cap = np.maximum(tm.footprint_cap_mb[pi], 1.0)
        RC = topo.ram_cache_mb[rows]
        spilled_share = np.divide(np.maximum(F - RC, 0.0), F, out=np.zeros(C), where=F > 0)
        new_share = np.maximum(0.0, 1.0 - F / cap)
        w_disk = np.where(
            ram,
            p.direct_write_share
            + (1 - p.direct_write_share) * (new_share * (F >= RC) + (1 - new_share) * spilled_share),
            1.0,
        )
        priv_disk = np.where(ram, spilled_share, 1.0)

        v_img = np.zeros((C, N_ROLES))
        v_priv = np.zeros((C, N_ROLES))
        v_w = np.zeros((C, N_ROLES))
        wt = self.sync | self.write_through
        sync_d = wt[a_d]
        sync_i = np.append(wt, False)[a_i]
        # image reads: PVS server (its RAM cache, else the vDisk volume), a clone's shared copy, or own disk
        miss_pvs = self._pvs_miss()[np.maximum(topo.pvs_of[rows], 0)] if len(topo.pvs) else np.zeros(C)
        miss_pvs = np.where(pvs, miss_pvs, 0.0)
        v_img[:, _HNET] = 1.0
        v_img[:, _PNIC] = pvs
        v_img[:, _PCPU] = pvs
        i_side = np.where(pvs, miss_pvs, np.where(clone, 1.0, 0.0))
        v_img[:, _IPORT] = i_side
        v_img[:, _ICTRL] = i_side
        v_img[:, _IT] = (i_side * self.miss_img[a_i])[:, None] * self.tiers_img[a_i]
        v_img[full, _DPORT] = 1.0
        v_img[full, _DCTRL] = 1.0
        v_img[:, _DT] += (full * self.miss_priv[a_d])[:, None] * self.tiers_priv[a_d]
        # private reads: own disk, or the PVS server, or guest RAM
        d_side = np.where(server, 0.0, priv_disk)
        v_priv[:, _HNET] = np.where(server, 1.0, priv_disk)
        v_priv[:, _DPORT] = d_side
        v_priv[:, _DCTRL] = d_side
        v_priv[:, _DT] = (d_side * self.miss_priv[a_d])[:, None] * self.tiers_priv[a_d]
        for r in (_PNIC, _PCPU, _IPORT, _ICTRL):
            v_priv[:, r] = server
        v_priv[:, _IT] += (server * self.miss_priv[a_i])[:, None] * self.tiers_priv[a_i]
        # writes: own disk (write cache, delta, full disk), or the PVS server, or guest RAM
        wd = np.where(server, 0.0, w_disk)
        v_w[:, _HNET] = np.where(server, 1.0, w_disk)
        v_w[:, _DPORT] = wd
        v_w[:, _DCTRL] = wd
        v_w[:, _DT] = (wd * sync_d)[:, None] * self.tiers_w[a_d] * self.penalty[a_d]
        for r in (_PNIC, _PCPU, _IPORT, _ICTRL):
            v_w[:, r] = server
        v_w[:, _IT] = (server * sync_i)[:, None] * self.tiers_w[a_i] * self.penalty[a_i]

        svc_img = svc_io + kb_img[:, None] * svc_kb
        svc_priv = svc_io + kb_priv[:, None] * svc_kb
        svc_w = svc_io + kb_w[:, None] * svc_kb
        n_r = n_img + n_priv
        safe_r = np.maximum(n_r, 1e-12)
        visit_r = (n_img[:, None] * v_img + n_priv[:, None] * v_priv) / safe_r[:, None]
        work_r = (n_img[:, None] * v_img * svc_img + n_priv[:, None] * v_priv * svc_priv) / safe_r[:, None]
        work_w = v_w * svc_w
        # no-queue delays: the network round trip, controller processing, a failover's stall
        rtt = p.network_rtt_ms / 1e3
        ctrl = self._ctrl_fixed(a_d, a_i, topo.ds_of[rows], img, v_img, v_priv, v_w)
        fix_img = rtt * v_img[:, _HNET] + ctrl[0][0] + ctrl[0][1]
        fix_priv = rtt * v_priv[:, _HNET] + ctrl[1][0] + ctrl[1][1]
        fix_w = rtt * v_w[:, _HNET] + ctrl[2][0] + ctrl[2][1]
        fixed_r = (n_img * fix_img + n_priv * fix_priv) / safe_r
        # local work per I/O: the CPU-bound share stretches with the host's contention
        cb = tm.cpu_bound[pi, tr]
        local = tm.local_s[pi, tr] * (1.0 - cb + cb * self.stretch[topo.host_of[rows]])
        d = Demands(
            station=st,
            work_r=work_r,
            work_w=work_w,
            lat_r=work_r,
            lat_w=work_w,
            visit_r=visit_r,
            visit_w=v_w,
            fixed_r=fixed_r,
            fixed_w=fix_w,
            p_read=n_r / n_tot,
            think_s=local / n_tot,
            window=float(p.guest_outstanding_io),
        )
        total = np.minimum(self.util + self.open_rho, 0.95)
        open_backlog = topo.parallel * self.open_rho / (1.0 - total) * self._destage_s
        sol, self.backlog = solve(d, self.backlog, self.own[rows], topo.parallel, open_backlog, 3, cnt)
        self.own[act] = sol.own[inv]
        wait = np.maximum(self.backlog[st] - sol.own, 0.0) / topo.parallel[st]
        r_img = fix_img + (v_img * (wait + svc_img)).sum(axis=1)
        r_priv = fix_priv + (v_priv * (wait + svc_priv)).sum(axis=1)
        r_w = fix_w + (v_w * (wait + svc_w)).sum(axis=1)
        rate = sol.rate
        self.rate[act], self.r_img[act], self.r_priv[act], self.r_w[act] = (
            rate[inv],
            r_img[inv],
            r_priv[inv],
            r_w[inv],
        )
        x_img, x_priv, x_w = rate * n_img / n_tot, rate * n_priv / n_tot, rate * n_w / n_tot

        io = _ClassIo(
            act,
            inv,
            cnt,
            rows,
            st,
            wait,
            (x_img, x_priv, x_w),
            (v_img, v_priv, v_w),
            (svc_img, svc_priv, svc_w),
            (r_img, r_priv, r_w),
            (kb_img, kb_priv, kb_w),
            ctrl,
            clone,
            full,
            a_d,
            a_i,
        )
        self._count_io(io, dt)
        self._arrays_step(dt, sol.util, io)
        self.util = sol.util
        # --- PVS RAM caches warm with misses; footprints grow with distinct writes ---
        if len(topo.pvs):
            miss_mb = x_img * miss_pvs * kb_img / 1024.0 * dt * cnt
            add = np.bincount(np.maximum(topo.pvs_of[rows], 0), miss_mb, len(topo.pvs))
            self.pvs_cached_mb = np.minimum(
                self.pvs_cached_mb + add, np.minimum(topo.pvs_cache_cap_mb, p.image_hot_mb)
            )
        new_all = np.maximum(0.0, 1.0 - F_all / cap[inv])
        self.footprint_mb[act] = F_all + (x_w * kb_w)[inv] / 1024.0 * dt * new_all
        # --- progress ---
        x_old = self.x[act].copy()
        self.xrate[act] = (rate / n_tot)[inv]
        adv = np.where(conn_all, 0.0, self.xrate[act] * dt)
        self.x[act] = x_old + adv
        self._sessions_ops(act, x_old, adv, dt, self.r_img[act], self.r_priv[act], self.r_w[act])
        self._phase_ends(act, x_old, adv, dt)

    def _pvs_miss(self) -> np.ndarray:
        return 1.0 - np.minimum(1.0, self.pvs_cached_mb / self.p.image_hot_mb)

    def _count_io(self, io: _ClassIo, dt: float) -> None:
        topo = self.topo
        x_img, x_priv, x_w = io.x
        v_img, v_priv, v_w = io.v
        r_img, r_priv, r_w = io.r
        kb_img, kb_priv, kb_w = io.kb
        cnt, inv, rows, act = io.cnt, io.inv, io.rows, io.act
        nd = len(topo.datastores)
        ds = topo.ds_of[rows]
        img = np.maximum(topo.img_ds[rows], 0)
        hosts = topo.host_of[rows]
        # what reaches the desktop's own datastore (host-visible) and the image copy's (clones only)
        rd_d = x_img * v_img[:, _DCTRL] + x_priv * v_priv[:, _DCTRL]
        wr_d = x_w * v_w[:, _DCTRL]
        rd_i_host = x_img * v_img[:, _ICTRL] * io.clone
        rd_i_all = x_img * v_img[:, _ICTRL] + x_priv * v_priv[:, _ICTRL]
        wr_i = x_w * v_w[:, _ICTRL]
        rb_d = (x_img * v_img[:, _DCTRL] * kb_img + x_priv * v_priv[:, _DCTRL] * kb_priv) * KB
        rb_i = (x_img * v_img[:, _ICTRL] * kb_img + x_priv * v_priv[:, _ICTRL] * kb_priv) * KB
        rb_host = rb_d + rd_i_host * kb_img * KB
        wb_d = wr_d * kb_w * KB
        wb_i = wr_i * kb_w * KB
        lat_rd = (
            np.where(io.full, r_img, 0.0) * x_img * v_img[:, _DCTRL] + r_priv * x_priv * v_priv[:, _DCTRL]
        )
        lat_r_host = lat_rd + rd_i_host * r_img
        # per-VM disk counters (datastore level, as ESXi counts them)
        self.vm_reads[act] += ((rd_d + rd_i_host) * dt)[inv]
        self.vm_writes[act] += (wr_d * dt)[inv]
        self.vm_rbytes[act] += (rb_host * dt)[inv]
        self.vm_wbytes[act] += (wb_d * dt)[inv]
        self.vm_rlat[act] += (lat_r_host * dt)[inv]
        self.vm_wlat[act] += (wr_d * r_w * dt)[inv]
        k = cnt * dt
        # host x datastore, and datastore totals (these also carry PVS servers' vDisk and cache I/O)
        key_d = hosts * nd + ds
        key_i = hosts * nd + img
        size = len(topo.hosts) * nd

        def both(kd: np.ndarray, wd: np.ndarray, ki: np.ndarray, wi: np.ndarray, n: int) -> np.ndarray:
            return np.bincount(kd, wd * k, n) + np.bincount(ki, wi * k, n)

        hd = self.hd
        hd["reads"] += both(key_d, rd_d, key_i, rd_i_host, size)
        hd["writes"] += np.bincount(key_d, wr_d * k, size)
        hd["rbytes"] += both(key_d, rb_d, key_i, rd_i_host * kb_img * KB, size)
        hd["wbytes"] += np.bincount(key_d, wb_d * k, size)
        hd["rlat"] += both(key_d, lat_rd, key_i, rd_i_host * r_img, size)
        hd["wlat"] += np.bincount(key_d, wr_d * r_w * k, size)
        tot = self.ds_tot
        lat_ri = x_img * v_img[:, _ICTRL] * r_img + x_priv * v_priv[:, _ICTRL] * r_priv
        tot["reads"] += both(ds, rd_d, img, rd_i_all, nd)
        tot["writes"] += both(ds, wr_d, img, wr_i, nd)
        tot["rbytes"] += both(ds, rb_d, img, rb_i, nd)
        tot["wbytes"] += both(ds, wb_d, img, wb_i, nd)
        tot["rlat"] += both(ds, lat_rd, img, lat_ri, nd)
        tot["wlat"] += both(ds, wr_d * r_w, img, wr_i * r_w, nd)
        # array volumes: the array's own view (front end to acknowledgement; no host network)
        d_roles, i_roles = list(_ROLES_D), list(_ROLES_I)
        resp = []
        for kind, x, v, svc in zip(range(3), io.x, io.v, io.svc, strict=True):
            part = v * (io.wait + svc)
            fd, fi = io.ctrl[kind]
            resp.append((x * (part[:, d_roles].sum(axis=1) + fd), x * (part[:, i_roles].sum(axis=1) + fi)))
        vol = self.vol
        vol["reads"] += both(ds, rd_d, img, rd_i_all, nd)
        vol["writes"] += both(ds, wr_d, img, wr_i, nd)
        vol["rbytes"] += both(ds, rb_d, img, rb_i, nd)
        vol["wbytes"] += both(ds, wb_d, img, wb_i, nd)
        rresp_d, rresp_i = resp[0][0] + resp[1][0], resp[0][1] + resp[1][1]
        vol["rresp"] += both(ds, rresp_d, img, rresp_i, nd)
        vol["wresp"] += both(ds, resp[2][0], img, resp[2][1], nd)
        # Little's law: I/Os outstanding at the array = response time x rate, summed
        vol["queue"] += both(ds, rresp_d + resp[2][0], img, rresp_i + resp[2][1], nd)
        # stations: visits and bytes by kind (tier visits are drive I/Os)
        ns = topo.n_st
        flat = io.st.ravel()
        for x, v, kb, is_w in (
            (x_img, v_img, kb_img, False),
            (x_priv, v_priv, kb_priv, False),
            (x_w, v_w, kb_w, True),
        ):
            ios = ((x * k)[:, None] * v).ravel()
            cnt_st = np.bincount(flat, ios, ns)
            byt = np.bincount(flat, ios * np.repeat(kb, N_ROLES) * KB, ns)
            if is_w:
                self.st_writes += cnt_st
                self.st_wbytes += byt
            else:
                self.st_reads += cnt_st
                self.st_rbytes += byt
        # networks: the host's NICs carry storage bytes and streams; the VM's vNIC only the streams
        pvs_rx = (x_img * v_img[:, _PNIC] * kb_img + x_priv * v_priv[:, _PNIC] * kb_priv) * KB
        srv_tx = x_w * v_w[:, _PNIC] * kb_w * KB
        self.vm_rx[act] += (pvs_rx * dt)[inv]
        self.vm_tx[act] += (srv_tx * dt)[inv]
        h = len(topo.hosts)
        self.host_rx += np.bincount(hosts, (rb_host + pvs_rx) * k, h)
        self.host_tx += np.bincount(hosts, (wb_d + srv_tx) * k, h)

    def _ctrl_fixed(
        self,
        a_d: np.ndarray,
        a_i: np.ndarray,
        ds: np.ndarray,
        img: np.ndarray,
        v_img: np.ndarray,
        v_priv: np.ndarray,
        v_w: np.ndarray,
    ) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Controller processing and failover stall per I/O kind, (D side, I side)."""
        stall = np.maximum(self.stall_until - self.t, 0.0)
        s_d, s_i = stall[ds], np.where(img >= 0, stall[np.maximum(img, 0)], 0.0)
        r_d, r_i = self.ctrl_r_s[a_d] + s_d, self.ctrl_r_s[a_i] + s_i
        w_d, w_i = self.ctrl_w_s[a_d] + s_d, self.ctrl_w_s[a_i] + s_i
        return (
            (v_img[:, _DCTRL] * r_d, v_img[:, _ICTRL] * r_i),
            (v_priv[:, _DCTRL] * r_d, v_priv[:, _ICTRL] * r_i),
            (v_w[:, _DCTRL] * w_d, v_w[:, _ICTRL] * w_i),
        )

    # --- arrays: write caches, destaging, tier load ----------------------------------------------------
    def _arrays_step(self, dt: float, util: np.ndarray, io: _ClassIo) -> None:
        topo = self.topo
        na = len(topo.arrays)
        self.open_rho = np.zeros(topo.n_st)
        if na == 0:
            return
        x_w, v_w, kb_w = io.x[2] * io.cnt, io.v[2], io.kb[2]
        into_d, into_i = x_w * v_w[:, _DCTRL], x_w * v_w[:, _ICTRL]
        w_ios = np.bincount(io.a_d, into_d, na + 1)[:na] + np.bincount(io.a_i, into_i, na + 1)[:na]
        w_kb = (
            np.bincount(io.a_d, into_d * kb_w, na + 1)[:na] + np.bincount(io.a_i, into_i * kb_w, na + 1)[:na]
        )
        for a, am in enumerate(topo.arrays):
            kb = w_kb[a] / w_ios[a] if w_ios[a] > 0 else 8.0
            sync = bool(self.sync[a] or self.write_through[a])
            cap_ios = math.inf
            for k, t in enumerate(am.tiers):
                share = self.tiers_w[a, k]
                if share <= 0:
                    continue
                stn = am.tier_st[k]
                svc = t.io_s(kb)
                self._destage_s[stn] = svc
                free = max(0.0, 1.0 - util[stn]) if not sync else 1.0
                cap_ios = min(cap_ios, free * t.servers / (t.penalty * svc) / share)
            if sync:
                # writes wait for the drives; back to write-back once the drives are not saturated
                tier_util = max(
                    (util[am.tier_st[k]] for k in range(len(am.tiers)) if self.tiers_w[a, k] > 0), default=0.0
                )
                if self.sync[a] and tier_util < 0.8:
                    self.sync[a] = False
                    self.dirty[a] = 0.9 * self.wc_cap[a]
                continue  # synchronous writes are drive I/Os of the solution, counted with the visits
            incoming = w_ios[a]
            backlog_ios = self.dirty[a] / (kb * KB)
            destage = min(cap_ios, incoming + backlog_ios / max(dt, 1e-9))
            if incoming > cap_ios:
                destage = cap_ios
            elif self.dirty[a] > 0:
                destage = min(destage, incoming + 0.9 * (cap_ios - incoming))
            self.dirty[a] = float(
                np.clip(self.dirty[a] + (incoming - destage) * kb * KB * dt, 0.0, self.wc_cap[a])
            )
            if self.dirty[a] >= self.wc_cap[a] * (1 - 1e-9) and incoming > cap_ios:
                self.sync[a] = True  # from the next step writes are drive I/Os of the closed loop
                continue
            for k, t in enumerate(am.tiers):
                share = self.tiers_w[a, k]
                if share <= 0:
                    continue
                stn = am.tier_st[k]
                drive_ios = destage * share * t.penalty
                self.open_rho[stn] = drive_ios * t.io_s(kb) / t.servers
                self.st_writes[stn] += drive_ios * dt
                self.st_wbytes[stn] += drive_ios * kb * KB * dt
        self.st_busy += (
            (np.minimum(util, 1.0) + self.open_rho) * topo.parallel * dt * (np.arange(topo.n_st) > 0)
        )

    # --- hosts: CPU, memory, network ---------------------------------------------------------------
    def _hosts_step(self, on: np.ndarray, tr: np.ndarray, dt: float, rates: np.ndarray) -> None:
        topo, p, tm = self.topo, self.p, self.tm
        h = len(topo.hosts)
        pi = topo.pool_of
        hosts = topo.host_of
        ph = self.phase
        # CPU follows the work done: a phase's CPU work (MHz x local s) at the pace the desktop goes
        # through it, so a desktop waiting for its disk or for the host's CPU asks for less per second
        cpu = np.where(on & ~self.stunned, tm.cpu_mhz[pi, tr] * tm.local_s[pi, tr] * self.xrate, 0.0)
        cpu = np.where(ph == _PON, tm.cpu_mhz[pi, _T_BOOT], cpu)
        cpu = np.minimum(cpu + rates * p.cpu_cycles_per_io / 1e6, self.vcpus * self.core_mhz[hosts])
        cpu = np.where(on, cpu + p.vm_overhead_mhz, 0.0)
        demand = np.bincount(hosts, cpu, h)
        self.stretch = np.maximum(1.0, demand / self.host_cap_mhz)
        used = cpu / self.stretch[hosts]
        self.vm_cpu_mhz = used
        self.vm_cpu += used * dt
        self.host_cpu += np.minimum(demand, self.host_cap_mhz) * dt
        # memory: in-use pages (less what page sharing folds), VM overhead; balloon past the host's RAM
        in_use = np.where(on, tm.in_use_mb[pi, tr] + np.minimum(self.footprint_mb, topo.ram_cache_mb), 0.0)
        in_use = np.minimum(in_use, self.ram_mb)
        active = np.minimum(np.where(on, tm.active_mb[pi, tr], 0.0), in_use)
        consumed = np.where(on, in_use * (1.0 - p.tps_share) + p.vm_overhead_mem_mb, 0.0)
        host_need = np.bincount(hosts, consumed, h) + p.host_mem_base_gb * 1024.0
        limit = self.host_ram_mb * (1.0 - p.host_mem_reserve_share)
        excess = np.maximum(0.0, host_need - limit)
        idle_mem = np.maximum(in_use - active, 0.0)
        idle_host = np.bincount(hosts, idle_mem, h)
        balloon = np.where(
            idle_host[hosts] > 0, excess[hosts] * idle_mem / np.maximum(idle_host[hosts], 1e-9), 0.0
        )
        balloon = np.minimum(balloon, 0.65 * self.ram_mb * on)
        consumed = consumed - balloon
        self.vm_consumed_mb, self.vm_active_mb, self.vm_balloon_mb = consumed, active, balloon
        self.vm_mem_consumed += consumed * KB * dt
        self.vm_mem_active += active * KB * dt
        self.vm_balloon += balloon * KB * dt
        base = np.where(self.host_maint, 0.0, p.host_mem_base_gb * 1024.0)
        self.host_mem_consumed += (np.bincount(hosts, consumed, h) + base) * KB * dt
        self.host_mem_active += np.bincount(hosts, active, h) * KB * dt
        self.host_balloon += np.bincount(hosts, balloon, h) * KB * dt
        # the VMs' own traffic (display protocol, directory, profile): mostly towards the user
        net = np.where(on & ~self.stunned, tm.net_kb_s[pi, tr], 0.0) * KB * dt
        self.vm_tx += 0.7 * net
        self.vm_rx += 0.3 * net
        self.host_tx += np.bincount(hosts, 0.7 * net, h)
        self.host_rx += np.bincount(hosts, 0.3 * net, h)

    # --- phases --------------------------------------------------------------------------------------
    def _timed_transitions(self) -> None:
        self._failing_logons()
        due = np.flatnonzero(self.until <= self.t + 1e-9)
        if not due.size:
            return
        ph = self.phase[due]
        at = self.until[due]
        on = due[ph == _PON]
        self._enter(on, _BOOT)
        self.footprint_mb[on] = 0.0  # a booted PVS target, a refreshed clone: the write cache starts empty
        login = due[ph == _LOGIN]
        self.until[login] = np.inf  # connected: the logon itself starts
        sd = due[ph == _SHUT]
        again = sd[self.restart[sd]]
        off = sd[~self.restart[sd]]
        self.phase[off] = _OFF
        self.until[off] = np.inf
        self.os_up_t[sd] = np.nan
        self.phase[again] = _PON
        self.until[again] = at[ph == _SHUT][self.restart[sd]] + self.p.power_on_s
        self.restart[sd] = False

    def _failing_logons(self) -> None:
        """Logons that fail (fault session_login_fails) give up at their time."""
        for rec in self._failing:
            if (
                rec.fail_at is not None
                and rec.fail_at <= self.t + 1e-9
                and rec.state == SessionStateCode.LOGGING_IN
            ):
                rec.state, rec.failed, rec.ended, rec.fail_at = (
                    SessionStateCode.FAILED,
                    "the logon failed: the desktop rejected the user (fault session_login_fails)",
                    rec.fail_at,
                    None,
                )
                i = rec.desktop
                self.session_of[i] = -1
                self._enter(np.array([i]), _IDLE)
        self._failing = [r for r in self._failing if r.fail_at is not None]

    def _enter(self, idx: np.ndarray, phase: int) -> None:
        self.phase[idx] = phase
        self.x[idx] = 0.0
        self.until[idx] = np.inf

    def _phase_ends(self, act: np.ndarray, x_old: np.ndarray, adv: np.ndarray, dt: float) -> None:
        """Desktops that finished a pass of their phase this step move on, stamped with the instant
        their progress crossed the end (not the end of the step)."""
        fin = self.x[act] >= 1.0 - 1e-12
        done = act[fin]
        if not done.size:
            return
        frac = np.clip((1.0 - x_old[fin]) / np.maximum(adv[fin], 1e-12), 0.0, 1.0)
        at_all = np.full(self.n, self.t)
        at_all[done] = self.t + frac * dt
        ph = self.phase[done]
        boot = done[ph == _BOOT]
        self._enter(boot, _SETTLE)
        self.os_up_t[boot] = at_all[boot]
        self.boot_count[boot] += 1
        self._enter(done[ph == _SETTLE], _IDLE)
        idle = done[ph == _IDLE]
        self.x[idle] -= 1.0
        login = done[ph == _LOGIN]
        for i in login:
            sid = int(self.session_of[i])
            if sid >= 0:
                rec = self.sessions[sid]
                if rec.fail_at is not None:
                    self.x[i] = 0.999  # a failing logon never completes; it fails at fail_at
                    continue
                rec.state, rec.logged_in = SessionStateCode.ACTIVE, float(at_all[i])
            self._enter(np.array([i]), _WORK)
            self.loops[i] = 0
            self.op_next[i] = 0
        work = done[ph == _WORK]
        self.x[work] -= 1.0
        self.loops[work] += 1
        self.op_next[work] = 0
        for i in work:
            sid = int(self.session_of[i])
            if sid >= 0:
                self.sessions[sid].loops += 1
        logoff = done[ph == _LOGOFF]
        for i in logoff:
            sid = int(self.session_of[i])
            if sid >= 0:
                rec = self.sessions[sid]
                rec.state, rec.ended = SessionStateCode.ENDED, float(at_all[i])
            self.session_of[i] = -1
        if self.p.reboot_after_logoff:
            self.phase[logoff] = _SHUT
            self.until[logoff] = at_all[logoff] + self.p.shutdown_s
            self.restart[logoff] = True
        else:
            self._enter(logoff, _IDLE)

    def _sessions_ops(
        self,
        act: np.ndarray,
        x_old: np.ndarray,
        adv: np.ndarray,
        dt: float,
        r_img: np.ndarray,
        r_priv: np.ndarray,
        r_w: np.ndarray,
    ) -> None:
        """Operations whose place in the loop the desktop passed this step: record their response times."""
        tm = self.tm
        sel = (self.phase[act] == _WORK) & (self.session_of[act] >= 0)
        if not sel.any():
            return
        idx = act[sel]
        k = np.flatnonzero(sel)
        pi = self.topo.pool_of[idx]
        window = float(self.p.guest_outstanding_io)
        for _ in range(4):  # at most a few operations per step
            nxt = self.op_next[idx]
            has = nxt < tm.op_count[pi]
            at = tm.op_at[pi, np.minimum(nxt, tm.op_at.shape[1] - 1)]
            due = has & (self.x[idx] >= at)
            if not due.any():
                break
            i, kk, p_i = idx[due], k[due], pi[due]
            j = nxt[due]
            frac = np.clip((at[due] - x_old[kk]) / np.maximum(adv[kk], 1e-12), 0.0, 1.0)
            start = self.t + frac * dt
            h = self.topo.host_of[i]
            resp = (
                tm.op_cpu_s[p_i, j] * self.stretch[h]
                + (
                    tm.op_img[p_i, j] * r_img[kk]
                    + tm.op_priv[p_i, j] * r_priv[kk]
                    + tm.op_w[p_i, j] * r_w[kk]
                )
                / window
                + self.p.network_rtt_ms / 1e3
            )
            sids = self.session_of[i]
            counts = np.array([self.sessions[int(s)].operations for s in sids], dtype=np.int64)
            self.ops.append(sids, counts, j, start, resp)
            for s in sids:
                self.sessions[int(s)].operations += 1
            self.op_next[i] += 1

    # --- faults --------------------------------------------------------------------------------------
    def _check_faults(self) -> None:
        fb = self.faults
        if fb is None:
            return
        topo = self.topo

        def due(kind: FaultKind, target: str) -> bool:
            # the fault's delay counts in model time: a lazily advanced model crosses it at its step
            f = fb.spec(kind, target)
            return f is not None and self.t - self.t0 >= f.after_s - 1e-6

        for a, am in enumerate(topo.arrays):
            if not self.ctrl_failed[a].any() and due(FaultKind.ARRAY_CONTROLLER_FAILOVER, am.hw.name):
                self.fail_controller(a)
        for h, host in enumerate(topo.hosts):
            if not self.host_maint[h] and due(FaultKind.HOST_IN_MAINTENANCE, host.name):
                self.set_maintenance(h, True)
        for d, ds in enumerate(topo.datastores):
            if not self.ds_full[d] and due(FaultKind.DATASTORE_FULL, ds.name):
                self.fill_datastore(d)

    def fail_controller(self, a: int) -> None:
        """The array's busiest active controller fails: its peer takes its volumes after a stall (their
        I/O waits ``controller_failover_s``; the other volumes carry on)."""
        topo = self.topo
        am = topo.arrays[a]
        if len(am.ctrls) < 2:
            return
        owners = {int(c) for j, c in enumerate(topo.ds_ctrl) if int(topo.ds_array[j]) == a}
        load = [
            float(self.st_reads[st] + self.st_writes[st]) if k in owners else -1.0
            for k, st in enumerate(am.ctrls)
        ]
        victim = int(np.argmax(load))
        peer = next(k for k in range(len(am.ctrls)) if k != victim and not self.ctrl_failed[a][k])
        self.ctrl_failed[a][victim] = True
        mine = (topo.ds_array == a) & (topo.ds_ctrl == victim)
        topo.ds_ctrl[mine] = peer
        self.stall_until[mine] = self.t + am.failover_s
        if self.p.write_through_after_failover:
            self.write_through[a] = True
        topo.rebuild_routes()

    def set_maintenance(self, h: int, on: bool) -> None:
        """A host enters maintenance: vMotion moves its desktops round-robin to the cluster's other hosts."""
        topo = self.topo
        self.host_maint[h] = on
        if not on:
            return
        cluster = topo.hosts[h].cluster
        others = [
            i
            for i, hh in enumerate(topo.hosts)
            if hh.cluster == cluster and i != h and not self.host_maint[i]
        ]
        if not others:
            return
        mine = np.flatnonzero(topo.host_of == h)
        topo.host_of[mine] = np.array(others)[np.arange(mine.size) % len(others)]
        topo.rebuild_routes()

    def fill_datastore(self, d: int) -> None:
        """No space left: ESXi stuns the powered-on VMs that write to it (their I/O stops)."""
        self.ds_full[d] = True
        writes_here = (self.topo.ds_of == d) & (self.topo.mode != _M_SERVER) & _ON[self.phase]
        self.stunned |= writes_here
