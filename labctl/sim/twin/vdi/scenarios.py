"""Fast-forward VDI storms on the twin: boot, login (launchers and a broker), steady state.

These drive :class:`~.model.VdiModel` directly, the way the plans will drive the simulated lab:
vCenter powers desktops on at ``vcenter_power_ops_per_s``; session launchers start sessions one
after the other (each waits until its user is logged on) or at a fixed rate; the broker hands out
registered free desktops and, when none is left, powers one on for the waiting user (at most
``broker_max_power_actions_per_min``). Arrays are sampled every ``sample_s`` like SAN HQ or
Unisphere real-time queries (deltas of the cumulative counters), hosts like vCenter.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.vdi import VdiLab
from labctl.sim.twin.vdi.model import SessionStateCode, VdiModel
from labctl.sim.twin.vdi.phases import Phase

SAMPLE_S = 10.0
TICK_S = 2.0  # how often launchers and the broker act, lab s (a model step while desktops log on)
PREBOOT_IDLE_S = 1200.0  # "waiting for at least 20 minutes after the desktops registered" (2012 paper 4.2)


@dataclass
class Series:
    """Array and host figures per sample interval (index k covers [t[k] - sample_s, t[k]])."""

    t: list[float] = field(default_factory=list)  # lab seconds since the scenario started
    read_iops: list[float] = field(default_factory=list)  # every array
    write_iops: list[float] = field(default_factory=list)
    read_kb: list[float] = field(default_factory=list)  # bytes read / reads in the interval
    write_kb: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)  # I/O-weighted array response time
    array_iops: dict[str, list[float]] = field(default_factory=dict)
    host_cpu_pct_max: list[float] = field(default_factory=list)  # the busiest host
    host_mem_pct_max: list[float] = field(default_factory=list)  # consumed / RAM, busiest host
    balloon_mb: list[float] = field(default_factory=list)  # all hosts
    host_iops: dict[str, list[float]] = field(default_factory=dict)  # datastore I/Os issued per host

    @property
    def iops(self) -> np.ndarray:
        return np.asarray(self.read_iops) + np.asarray(self.write_iops)

    def window(self, t0: float, t1: float) -> np.ndarray:
        t = np.asarray(self.t)
        return (t > t0) & (t <= t1)


@dataclass
class Result:
    series: Series
    desktops: int
    wall_s: float
    lab_s: float
    marks: dict[str, float] = field(default_factory=dict)  # named instants, lab s since start
    login_s: list[float] = field(default_factory=list)  # per session: request to logged on
    failed_sessions: int = 0

    def peak_iops(self, t0: float = 0.0, t1: float = np.inf) -> float:
        sel = self.series.window(t0, t1)
        return float(self.series.iops[sel].max()) if sel.any() else 0.0

    def mean_iops(self, t0: float, t1: float) -> float:
        sel = self.series.window(t0, t1)
        return float(self.series.iops[sel].mean()) if sel.any() else 0.0

    def shares(self, t0: float, t1: float) -> tuple[float, float, float]:
        """Read share, read size KB, write size KB over a window (I/O-weighted)."""
        s = self.series
        sel = s.window(t0, t1)
        r, w = np.asarray(s.read_iops)[sel], np.asarray(s.write_iops)[sel]
        rk, wk = np.asarray(s.read_kb)[sel], np.asarray(s.write_kb)[sel]
        tot_r, tot_w = r.sum(), w.sum()
        share = tot_r / (tot_r + tot_w) if tot_r + tot_w > 0 else 0.0
        return (
            float(share),
            float((r * rk).sum() / tot_r) if tot_r > 0 else 0.0,
            float((w * wk).sum() / tot_w) if tot_w > 0 else 0.0,
        )

    def max_latency_ms(self, t0: float = 0.0, t1: float = np.inf) -> float:
        sel = self.series.window(t0, t1)
        return float(np.asarray(self.series.latency_ms)[sel].max()) if sel.any() else 0.0

    def mean_latency_ms(self, t0: float, t1: float) -> float:
        s = self.series
        sel = s.window(t0, t1)
        lat, n = np.asarray(s.latency_ms)[sel], s.iops[sel]
        return float((lat * n).sum() / n.sum()) if n.sum() > 0 else 0.0


class Sampler:
    def __init__(self, m: VdiModel, sample_s: float = SAMPLE_S):
        self.m = m
        self.sample_s = sample_s
        self.t0 = m.t
        self.series = Series()
        self.arrays = [a.hw.name for a in m.topo.arrays]
        for a in self.arrays:
            self.series.array_iops[a] = []
        for h in m.topo.hosts:
            self.series.host_iops[h.name] = []
        self._prev = self._read()
        self.next_t = m.t + sample_s

    def _read(self) -> dict[str, np.ndarray]:
        m = self.m
        nd = len(m.topo.datastores)
        hd_ios = (m.hd["reads"] + m.hd["writes"]).reshape(len(m.topo.hosts), nd).sum(axis=1)
        return {
            **{k: v.copy() for k, v in m.vol.items()},
            "cpu": m.host_cpu.copy(),
            "mem": m.host_mem_consumed.copy(),
            "balloon": m.host_balloon.copy(),
            "host_ios": hd_ios,
            "t": np.array([m.t]),
        }

    def maybe_sample(self) -> None:
        while self.m.t >= self.next_t - 1e-9:
            self.sample()
            self.next_t += self.sample_s

    def sample(self) -> None:
        m, s = self.m, self.series
        cur = self._read()
        prev = self._prev
        dt = float(cur["t"][0] - prev["t"][0])
        if dt <= 0:
            return
        d = {k: cur[k] - prev[k] for k in cur}
        reads, writes = d["reads"].sum(), d["writes"].sum()
        s.t.append(m.t - self.t0)
        s.read_iops.append(reads / dt)
        s.write_iops.append(writes / dt)
        s.read_kb.append(d["rbytes"].sum() / reads / 1024 if reads > 0 else 0.0)
        s.write_kb.append(d["wbytes"].sum() / writes / 1024 if writes > 0 else 0.0)
        ios = reads + writes
        s.latency_ms.append((d["rresp"].sum() + d["wresp"].sum()) / ios * 1e3 if ios > 0 else 0.0)
        for a, name in enumerate(self.arrays):
            on_a = m.topo.ds_array == a
            s.array_iops[name].append((d["reads"][on_a].sum() + d["writes"][on_a].sum()) / dt)
        cap = np.array([h.cpu_mhz for h in m.topo.hosts])
        ram = np.array([h.ram_gb * 1024 * 1024 for h in m.topo.hosts])
        s.host_cpu_pct_max.append(float((d["cpu"] / dt / cap).max() * 100) if cap.size else 0.0)
        s.host_mem_pct_max.append(float((d["mem"] / dt / ram).max() * 100) if ram.size else 0.0)
        s.balloon_mb.append(float(d["balloon"].sum() / dt / 1024))
        for k, h in enumerate(m.topo.hosts):
            s.host_iops[h.name].append(float(d["host_ios"][k] / dt))
        self._prev = cur


def preboot(m: VdiModel, idx: np.ndarray, idle_for_s: float = PREBOOT_IDLE_S) -> None:
    """Desktops booted and registered ``idle_for_s`` ago, idle now (the papers' pre-booted state)."""
    m.phase[idx] = Phase.IDLE
    m.x[idx] = 0.0
    m.until[idx] = np.inf
    m.os_up_t[idx] = m.t - idle_for_s
    m.boot_count[idx] = np.maximum(m.boot_count[idx], 1)
    tm = m.tm
    pi = m.topo.pool_of[idx]
    # what boot, settle and idle wrote stays in the write cache
    boot_w = (tm.n_w[pi, 0] * tm.kb_w[pi, 0] + tm.n_w[pi, 1] * tm.kb_w[pi, 1]) / 1024.0
    m.footprint_mb[idx] = np.minimum(boot_w, tm.footprint_cap_mb[pi])


def _run(m: VdiModel, sampler: Sampler, until: float, tick: float) -> None:
    while m.t < until - 1e-9:
        m.advance_to(min(until, m.t + tick))
        sampler.maybe_sample()


def boot_storm(
    vdi: VdiLab, desktops: int | None = None, sample_s: float = SAMPLE_S, tail_s: float = 120.0
) -> Result:
    """Power every desktop on (or the first ``desktops``) as vCenter does: ``vcenter_power_ops_per_s``.

    Marks: ``dispatched`` (last power-on), ``all_up`` (last guest up), ``all_registered``,
    ``storm_end`` (last desktop done with the boot's I/O: the end of the storm on the array).
    """
    wall = time.perf_counter()
    m = VdiModel(vdi, 0.0)
    n = m.n if desktops is None else min(desktops, m.n)
    s = Sampler(m, sample_s)
    rate = vdi.twin.vcenter_power_ops_per_s
    started = 0
    marks: dict[str, float] = {}
    limit = n / rate + 3600.0
    while m.t < limit:
        due = min(n, int((m.t + 1e-9) * rate) + 1)
        if due > started:
            m.power_on(np.arange(started, due))
            started = due
            if started == n:
                marks["dispatched"] = m.t
        m.advance_to(m.t + 1.0)
        s.maybe_sample()
        ph = m.phase[:n]
        if "all_up" not in marks and started == n and (ph >= Phase.SETTLE).all():
            marks["all_up"] = m.t
        if "all_registered" not in marks and started == n and m.registered()[:n].all():
            marks["all_registered"] = m.t
        if started == n and (ph == Phase.IDLE).all():
            marks["storm_end"] = m.t
            break
    _run(m, s, m.t + tail_s, 5.0)
    return Result(s.series, n, time.perf_counter() - wall, m.t, marks)


@dataclass
class _Launcher:
    name: str
    left: int
    waiting_since: float | None = None  # a request made, no desktop yet
    desktop: int = -1  # its current logon's desktop (-1 none)
    next_t: float = 0.0


def login_storm(
    vdi: VdiLab,
    prebooted_share: float = 1.0,
    sessions: int | None = None,
    rate_per_s: float | None = None,
    steady_s: float = 2700.0,
    sample_s: float = SAMPLE_S,
    model: VdiModel | None = None,
    order: list[str] | None = None,
) -> Result:
    """Log users on to a pool, then let them work for ``steady_s``.

    Sessions come from the inventory's launchers (each starts its next session once its last user
    is logged on), or at ``rate_per_s`` if given. ``prebooted_share`` of the desktops are booted and
    idle at the start; the broker powers the others on as users arrive (``order``: the desktops it
    hands out first; default a seeded random order, as a pooled-random broker does). Marks: ``first_request``, ``last_logon`` (every user
    logged on), ``end``: lab seconds since the start.
    """
    wall = time.perf_counter()
    m = model or VdiModel(vdi, 0.0)
    t_start = m.t
    n = m.n
    total = min(sessions or n, n)
    # a pooled-random broker hands out desktops in no particular order (seeded: runs repeat)
    rank = np.random.default_rng(0).permutation(n)
    if order is not None:
        rank = np.full(n, n)
        for k, name in enumerate(order):
            if name in m.topo.index:
                rank[m.topo.index[name]] = k
    by_rank = np.argsort(rank, kind="stable")
    pre = round(prebooted_share * n)
    preboot(m, by_rank[:pre])
    s = Sampler(m, sample_s)
    p = vdi.twin
    launchers: list[_Launcher] = []
    if rate_per_s is None:
        left = total
        for spec in vdi.launchers:
            take = min(spec.sessions, left)
            if take > 0:
                launchers.append(_Launcher(spec.name, take))
            left -= take
        if left > 0 or not launchers:
            rate_per_s = 1.0  # no launchers declared for all: one session per second
            launchers = []
    queue: collections.deque[int] = collections.deque()  # launchers waiting for a desktop
    reserved = np.zeros(n, dtype=bool)  # powered on by the broker for a waiting user
    boots_this_min: collections.deque[float] = collections.deque()
    sent = 0
    logged = 0
    login_s: list[float] = []
    marks: dict[str, float] = {"first_request": 0.0}
    rec_of: dict[int, int] = {}  # desktop -> session index of the storm
    waiting_desktop: dict[int, int] = {}  # desktop powered on for launcher k

    def request(k: int) -> None:
        nonlocal sent
        sent += 1
        queue.append(k)

    while logged < total and m.t < 48 * 3600:
        # new requests
        if rate_per_s is not None:
            due = min(total, int((m.t - t_start) * rate_per_s + 1e-9) + 1)
            while sent < due:
                launchers.append(_Launcher(f"rate-{sent}", 1))
                request(len(launchers) - 1)
        else:
            for k, ln in enumerate(launchers):
                if ln.left > 0 and ln.desktop < 0 and ln.waiting_since is None and ln.next_t <= m.t + 1e-9:
                    ln.left -= 1
                    ln.waiting_since = m.t
                    request(k)
        # the broker: free registered desktops first, else power one on for the first waiting user
        free = m.available()
        avail = by_rank[(free & ~reserved)[by_rank]]
        ai = 0
        while queue and ai < avail.size:
            k = queue.popleft()
            d = int(avail[ai])
            ai += 1
            _start(m, launchers[k], d, rec_of)
        for d, k in list(waiting_desktop.items()):
            if free[d]:
                del waiting_desktop[d]
                reserved[d] = False
                _start(m, launchers[k], d, rec_of)
        while boots_this_min and boots_this_min[0] <= m.t - 60.0:
            boots_this_min.popleft()
        while queue and len(boots_this_min) < p.broker_max_power_actions_per_min:
            off = by_rank[((m.phase == Phase.OFF) & ~reserved)[by_rank]]
            if not off.size:
                break
            d = int(off[0])
            k = queue.popleft()
            reserved[d] = True
            waiting_desktop[d] = k
            m.power_on(np.array([d]))
            boots_this_min.append(m.t)
        m.advance_to(m.t + TICK_S)
        s.maybe_sample()
        # logons that completed (or failed)
        for ln in launchers:
            if ln.desktop < 0:
                continue
            rec = m.sessions[rec_of[ln.desktop]]
            if rec.state in (SessionStateCode.ACTIVE, SessionStateCode.FAILED, SessionStateCode.ENDED):
                if rec.state == SessionStateCode.ACTIVE and rec.logged_in is not None:
                    login_s.append(rec.logged_in - (ln.waiting_since or rec.requested))
                logged += 1
                ln.desktop = -1
                ln.waiting_since = None
                ln.next_t = m.t
    marks["last_logon"] = m.t - t_start
    end = m.t + steady_s
    _run(m, s, end, 5.0)
    marks["end"] = m.t - t_start
    failed = sum(1 for r in m.sessions if r.state == SessionStateCode.FAILED)
    return Result(s.series, total, time.perf_counter() - wall, m.t - t_start, marks, login_s, failed)


def _start(m: VdiModel, ln: _Launcher, d: int, rec_of: dict[int, int]) -> None:
    rec = m.start_session(d, f"user-{len(m.sessions) + 1}")
    rec_of[d] = m.session_ids[rec.sid]
    ln.desktop = d
