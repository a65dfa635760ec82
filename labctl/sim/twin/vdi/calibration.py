"""The VDI twin beside the published figures: the 2012 EqualLogic paper and the 2014 write-cache post.

Published figures are written here by hand from `shared/reference/` (tables 5-7 of the 2012 paper,
the ESXi table of the 2014 post); nothing here comes from the model. Each study runs the lab's
storms in fast-forward (:mod:`.scenarios`) and gives a verdict per quantity:

- IOPS totals (steady state, login and boot peaks): within +-25% of the paper;
- IOPS per desktop per phase (table 7's ranges): inside the range widened by 20% on each side;
- read shares: within half of the published share (or 1 point); block sizes: within 1.5x;
- times (logon storm, boot storm): inside the published range widened by 10%;
- latency: below the published bound;
- 2014 host IOPS per user: within a factor of 2 (or 0.3 IOPS for the sub-1 figures).

The 2012 study needs both of the paper's configurations: from a one-array lab the two-array one is
built by adding an identical array with its hosts, datastores and desktops (the same two PVS
servers, as the paper did), from a two-array lab the one-array one is its first array's share.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.vdi import ProvisioningKind, VdiLab, WriteCacheMode
from labctl.sim.twin.vdi.scenarios import Result, boot_storm, login_storm

STEADY_FROM_S = 900.0  # steady state measured from 15 minutes after the last logon ...
STEADY_TO_S = 2700.0  # ... to 45 minutes after it
VSI_LAUNCH_WINDOW_S = 2880.0  # Login VSI 4 benchmark mode starts every session within 48 minutes
VSI_STEADY_S = 1800.0  # the 2014 test: 30 minutes of work after the last logon (assumed)


@dataclass(frozen=True)
class Check:
    group: str  # "table 7", "1 array (630)", "2014 ESXi", ...
    quantity: str
    value: float
    published: str  # as the paper says it
    ok: bool | None  # None: shown, not judged
    unit: str = ""


@dataclass
class Study:
    name: str
    lab_name: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def add(
        self, group: str, quantity: str, value: float, published: str, ok: bool | None, unit: str = ""
    ) -> None:
        self.checks.append(Check(group, quantity, value, published, ok, unit))


def _within(value: float, target: float, rel: float) -> bool:
    return abs(value - target) <= rel * target


def _in_range(value: float, lo: float, hi: float, widen: float) -> bool:
    return lo * (1 - widen) <= value <= hi * (1 + widen)


def _share_ok(value: float, target: float) -> bool:
    return abs(value - target) <= max(0.5 * target, 0.01)


def _size_ok(value: float, target: float) -> bool:
    return target / 1.5 <= value <= target * 1.5


# --- lab variants ---------------------------------------------------------------------------------------


def subset_to_array(vdi: VdiLab, array: str) -> VdiLab:
    """The share of a lab on one array: its datastores, the desktops on them and their hosts."""
    keep_ds = {n for n, d in vdi.datastores.items() if d.array == array}
    keep_ds |= {s.vdisk_datastore for s in vdi.pvs_servers.values()}
    placement = {k: v for k, v in vdi.placement.items() if v[2] in keep_ds}
    hosts = {h for _, h, _ in placement.values()}
    arrays = {vdi.datastores[d].array for d in keep_ds}
    pools = {
        n: p.model_copy(update={"desktops": tuple(d for d in p.desktops if d in placement)})
        for n, p in vdi.pools.items()
    }
    sessions = {n: len(p.desktops) for n, p in pools.items()}
    launchers = []
    for ln in vdi.launchers:
        if sessions.get(ln.pool, 0) > 0:
            launchers.append(ln)
            sessions[ln.pool] -= ln.sessions
    return vdi.model_copy(
        update={
            "datastores": {n: d for n, d in vdi.datastores.items() if n in keep_ds},
            "arrays": {n: a for n, a in vdi.arrays.items() if n in arrays},
            "hosts": {n: h for n, h in vdi.hosts.items() if n in hosts},
            "placement": placement,
            "pools": pools,
            "launchers": tuple(launchers),
        }
    )


def scale_out(vdi: VdiLab, suffix: str = "-b") -> VdiLab:
    """The lab with an identical second array, its hosts, datastores, desktops and launchers (the
    paper's scale-out: PVS servers and their vDisk stay shared)."""
    shared = {s.vdisk_datastore for s in vdi.pvs_servers.values()}
    arrays = dict(vdi.arrays)
    for n, a in vdi.arrays.items():
        if any(d.array == n and d.name not in shared for d in vdi.datastores.values()):
            arrays[n + suffix] = a.model_copy(update={"name": n + suffix})
    datastores = dict(vdi.datastores)
    for n, d in vdi.datastores.items():
        if n not in shared:
            datastores[n + suffix] = d.model_copy(
                update={"name": n + suffix, "array": d.array + suffix, "volume": d.volume + suffix}
            )
    hosts = dict(vdi.hosts)
    for n, host in vdi.hosts.items():
        hosts[n + suffix] = host.model_copy(update={"name": n + suffix})
    placement = dict(vdi.placement)
    pools = {}
    for n, p in vdi.pools.items():
        new = []
        for name in p.desktops:
            if name in vdi.placement:
                pool, h, ds = vdi.placement[name]
                placement[name + suffix] = (pool, h + suffix, ds + suffix if ds not in shared else ds)
                new.append(name + suffix)
        pools[n] = p.model_copy(update={"desktops": (*p.desktops, *new)})
    launchers = (*vdi.launchers, *(ln.model_copy(update={"name": ln.name + suffix}) for ln in vdi.launchers))
    return vdi.model_copy(
        update={
            "arrays": arrays,
            "datastores": datastores,
            "hosts": hosts,
            "placement": placement,
            "pools": pools,
            "launchers": launchers,
        }
    )


def with_write_cache(vdi: VdiLab, mode: WriteCacheMode, ram_mb: float | None) -> VdiLab:
    pools = {
        n: p.model_copy(
            update={
                "provisioning": p.provisioning.model_copy(
                    update={"write_cache": mode, "ram_cache_mb": ram_mb}
                )
            }
        )
        for n, p in vdi.pools.items()
    }
    return vdi.model_copy(update={"pools": pools})


# --- which study a lab is shaped for -------------------------------------------------------------------


def study_of(vdi: VdiLab) -> str | None:
    """'2014' for PVS pools of several profiles, '2012' for PVS task workers, else None."""
    pools = [p for p in vdi.pools.values() if not p.implicit]
    if not pools or any(p.provisioning.kind is not ProvisioningKind.PVS for p in pools):
        return None
    if len({p.workload for p in pools}) > 1:
        return "2014"
    return "2012" if pools[0].workload == "task" else None


# --- 2012: tables 5-7 -------------------------------------------------------------------------------


TABLE7 = {
    "boot": ((16.0, 18.0), 0.13, 32.0, 5.0),
    "login": ((11.0, 13.0), 0.03, 23.0, 5.0),
    "steady": ((7.0, 8.0), 0.002, 1.0, 9.0),
}


@dataclass(frozen=True)
class _Published:
    desktops: int
    steady: float  # IOPS
    login_peak: float
    boot_peak: float
    login_min: tuple[float, float]  # all users logged on, minutes (0: "within")


CONFIGS = {
    1: _Published(630, 4500.0, 6846.0, 10000.0, (20.0, 25.0)),
    2: _Published(1270, 9000.0, 12400.0, 15000.0, (0.0, 25.0)),
}
BOOT_ALL_MIN_2 = (10.0, 12.0)  # 1,270 desktops booted in 10-12 minutes
LOGIN_20PCT_MIN = 100.0  # "almost 100 minutes" with 20% pre-booted (630 desktops)
LATENCY_MAX_MS = 10.0


@dataclass
class _Runs:
    boot: Result
    login: Result

    @property
    def last_logon(self) -> float:
        return self.login.marks["last_logon"]


def _runs(vdi: VdiLab) -> _Runs:
    return _Runs(boot_storm(vdi), login_storm(vdi, steady_s=STEADY_TO_S))


def calibrate_2012(vdi: VdiLab, lab_name: str, progress: Callable[[str], object] | None = None) -> Study:
    say = progress or (lambda _m: None)
    st = Study(
        "2012 EqualLogic paper, tables 5-7 (task workers, PVS, write cache on the device disk)", lab_name
    )
    arrays = list(dict.fromkeys(d.array for d in vdi.datastores.values()))
    one = subset_to_array(vdi, arrays[0]) if len(arrays) > 1 else vdi
    two = vdi if len(arrays) > 1 else scale_out(vdi)
    if len(arrays) > 1:
        st.notes.append(f"1 array: the lab's share on {arrays[0]} ({len(one.placement)} desktops)")
    else:
        st.notes.append(
            f"2 arrays: the lab plus an identical array with its hosts and desktops ({len(two.placement)} desktops)"
        )
    runs = {}
    for k, v in ((1, one), (2, two)):
        say(f"{k} array(s): boot and login storms of {len(v.placement)} desktops...")
        runs[k] = _runs(v)
    say("1 array, 20% pre-booted: login storm...")
    pre20 = login_storm(one, prebooted_share=0.2, steady_s=0.0)
    r1 = runs[1]
    n1 = r1.login.desktops
    # table 7: per desktop, per phase (one array, as the paper derived it)
    end1 = r1.last_logon
    phases = {
        "boot": (r1.boot.peak_iops() / n1, r1.boot.shares(0, r1.boot.marks["storm_end"])),
        "login": (r1.login.peak_iops(0, end1 + 60) / n1, r1.login.shares(0, end1)),
        "steady": (
            r1.login.mean_iops(end1 + STEADY_FROM_S, end1 + STEADY_TO_S) / n1,
            r1.login.shares(end1 + STEADY_FROM_S, end1 + STEADY_TO_S),
        ),
    }
    for ph, (iops, (share, rkb, wkb)) in phases.items():
        (lo, hi), p_share, p_rkb, p_wkb = TABLE7[ph]
        g = "table 7"
        st.add(g, f"{ph}: IOPS per desktop", iops, f"{lo:g}-{hi:g}", _in_range(iops, lo, hi, 0.2))
        st.add(g, f"{ph}: read share", 100 * share, f"{100 * p_share:g}%", _share_ok(share, p_share), "%")
        st.add(g, f"{ph}: read size", rkb, f"{p_rkb:g} KB", _size_ok(rkb, p_rkb), "KB")
        st.add(g, f"{ph}: write size", wkb, f"{p_wkb:g} KB", _size_ok(wkb, p_wkb), "KB")
    # tables 5 and 6: one array vs two
    for k, r in runs.items():
        c = CONFIGS[k]
        g = f"{k} array{'s' if k > 1 else ''} ({r.login.desktops})"
        end = r.last_logon
        steady = r.login.mean_iops(end + STEADY_FROM_S, end + STEADY_TO_S)
        st.add(g, "steady-state IOPS", steady, f"{c.steady:,.0f}", _within(steady, c.steady, 0.25))
        st.add(
            g,
            "login storm peak IOPS",
            r.login.peak_iops(0, end + 60),
            f"{c.login_peak:,.0f}",
            _within(r.login.peak_iops(0, end + 60), c.login_peak, 0.25),
        )
        st.add(
            g,
            "boot storm peak IOPS",
            r.boot.peak_iops(),
            f"{c.boot_peak:,.0f}",
            _within(r.boot.peak_iops(), c.boot_peak, 0.25),
        )
        lat = max(r.boot.max_latency_ms(), r.login.max_latency_ms())
        st.add(g, "array latency, worst 10 s", lat, f"< ~{LATENCY_MAX_MS:g} ms", lat < LATENCY_MAX_MS, "ms")
        lo, hi = c.login_min
        pub = f"{lo:g}-{hi:g} min" if lo else f"within {hi:g} min"
        st.add(
            g,
            "all users logged on (100% pre-booted)",
            end / 60,
            pub,
            _in_range(end / 60, lo or end / 60, hi, 0.1),
            "min",
        )
        if k == 2:
            boot_min = r.boot.marks["storm_end"] / 60
            st.add(
                g,
                "boot storm over (all booted)",
                boot_min,
                f"{BOOT_ALL_MIN_2[0]:g}-{BOOT_ALL_MIN_2[1]:g} min",
                _in_range(boot_min, *BOOT_ALL_MIN_2, 0.1),
                "min",
            )
        cpu = max(max(r.boot.series.host_cpu_pct_max), max(r.login.series.host_cpu_pct_max))
        st.add(g, "host CPU, busiest host", cpu, "< 95%", cpu < 95.0, "%")
        mem = max(r.login.series.host_mem_pct_max)
        st.add(
            g,
            "host memory used",
            mem,
            "< 50%, no ballooning",
            mem < 50.0 and max(r.login.series.balloon_mb) == 0,
            "%",
        )
    g = f"1 array, 20% pre-booted ({pre20.desktops})"
    m20 = pre20.marks["last_logon"] / 60
    st.add(
        g,
        "all users logged on",
        m20,
        f"almost {LOGIN_20PCT_MIN:g} min",
        _in_range(m20, LOGIN_20PCT_MIN * 0.8, LOGIN_20PCT_MIN, 0.1),
        "min",
    )
    ratio = pre20.marks["last_logon"] / max(r1.last_logon, 1.0)
    st.add(g, "20% vs 100% pre-booted logon time", ratio, "~4-5x", _in_range(ratio, 4.0, 5.0, 0.2), "x")
    scale = runs[2].login.mean_iops(
        runs[2].last_logon + STEADY_FROM_S, runs[2].last_logon + STEADY_TO_S
    ) / max(r1.login.mean_iops(end1 + STEADY_FROM_S, end1 + STEADY_TO_S), 1.0)
    st.add(
        "scale-out",
        "steady IOPS, 2 arrays / 1 array",
        scale,
        "~2 (linear)",
        _in_range(scale, 1.9, 2.1, 0.05),
        "x",
    )
    st.wall_s = sum(x.boot.wall_s + x.login.wall_s for x in runs.values()) + pre20.wall_s
    return st


# --- 2014: host IOPS per user by write-cache mode ------------------------------------------------------

# (mode label, write-cache mode, RAM MB) x (Standard, Enhanced, Professional): ESXi rows of the post.
MODES_2014 = (
    (
        "device disk",
        WriteCacheMode.DEVICE_DISK,
        None,
        {"task": (5.0,), "knowledge": (8.0,), "power": (9.1, 11.7)},
    ),
    (
        "RAM 256 MB + overflow",
        WriteCacheMode.DEVICE_RAM_OVERFLOW,
        256.0,
        {"task": (0.4,), "knowledge": (1.2,), "power": (1.9,)},
    ),
    (
        "RAM 512 MB + overflow",
        WriteCacheMode.DEVICE_RAM_OVERFLOW,
        512.0,
        {"task": (0.3,), "knowledge": (0.2,), "power": (0.3,)},
    ),
)
PROFILE = {"task": "Standard", "knowledge": "Enhanced", "power": "Professional"}


def _interleaved(vdi: VdiLab) -> list[str]:
    """Every desktop, pools interleaved in proportion to their sizes (each pool's users arrive
    evenly over the same launch window, as each host's did in the post)."""
    keyed = []
    for p in vdi.pools.values():
        n = len(p.desktops)
        keyed += [((k + 0.5) / n, d) for k, d in enumerate(p.desktops)]
    return [d for _, d in sorted(keyed)]


def host_iops_per_user(vdi: VdiLab) -> dict[str, float]:
    """One VSI-style test: every desktop pre-booted, sessions over 48 minutes, 30 minutes of work;
    datastore I/Os per second each host issued, per user of its pool, first logon to the end."""
    order = _interleaved(vdi)
    ordered = vdi.model_copy(
        update={
            "pools": {
                n: p.model_copy(update={"desktops": tuple(d for d in order if d in set(p.desktops))})
                for n, p in vdi.pools.items()
            }
        }
    )
    n = len(order)
    r = login_storm(ordered, rate_per_s=n / VSI_LAUNCH_WINDOW_S, steady_s=VSI_STEADY_S, order=order)
    out = {}
    for pool in vdi.pools.values():
        hosts = {vdi.placement[d][1] for d in pool.desktops}
        t = np.asarray(r.series.t)
        sel = (t > 0) & (t <= r.marks["end"])
        ios = sum(np.asarray(r.series.host_iops[h])[sel].mean() for h in hosts)
        out[pool.workload] = float(ios / max(len(pool.desktops), 1))
    return out


def calibrate_2014(vdi: VdiLab, lab_name: str, progress: Callable[[str], object] | None = None) -> Study:
    say = progress or (lambda _m: None)
    st = Study("2014 PVS write-cache post: host IOPS per user on ESXi", lab_name)
    got: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    for label, mode, ram, published in MODES_2014:
        say(f"{label}: a VSI test of every pool...")
        res = host_iops_per_user(with_write_cache(vdi, mode, ram))
        got[label] = res
        for wl, value in res.items():
            if wl not in published:
                continue
            pub = published[wl]
            target = sum(pub) / len(pub)
            ok = (target / 2 <= value <= target * 2) or abs(value - target) <= 0.3
            text = "-".join(f"{x:g}" for x in pub)
            st.add(label, f"{PROFILE.get(wl, wl)} ({wl})", value, text, ok, "IOPS/user")
    for wl in got["device disk"]:
        disk, r256, r512 = (got[m[0]][wl] for m in MODES_2014)
        st.add(
            "directions",
            f"{PROFILE.get(wl, wl)}: RAM 256 MB vs device disk",
            disk / max(r256, 1e-9),
            "far fewer (>= 3x)",
            disk >= 3 * r256,
            "x",
        )
        st.add(
            "directions",
            f"{PROFILE.get(wl, wl)}: 512 MB <= 256 MB",
            r512,
            f"<= {r256:.2f}",
            r512 <= r256 + 1e-9,
            "IOPS/user",
        )
    st.wall_s = time.perf_counter() - t0
    return st


def calibrate(vdi: VdiLab, lab_name: str, progress: Callable[[str], object] | None = None) -> Study | None:
    kind = study_of(vdi)
    if kind == "2012":
        return calibrate_2012(vdi, lab_name, progress)
    if kind == "2014":
        return calibrate_2014(vdi, lab_name, progress)
    return None


def figures(vdi: VdiLab, lab_name: str, progress: Callable[[str], object] | None = None) -> Study:
    """For a lab no published study matches: its boot, login (1 per second) and steady figures, unjudged."""
    say = progress or (lambda _m: None)
    st = Study("no published study matches this lab: the twin's figures, not judged", lab_name)
    say(f"boot storm of {len(vdi.placement)} desktops...")
    b = boot_storm(vdi)
    say("login storm at one session per second...")
    lg = login_storm(vdi, rate_per_s=1.0, steady_s=STEADY_TO_S)
    n = lg.desktops
    end = lg.marks["last_logon"]
    g = f"{n} desktops"
    st.add(g, "boot storm peak IOPS", b.peak_iops(), "-", None)
    st.add(g, "boot storm over", b.marks.get("storm_end", math.nan) / 60, "-", None, "min")
    st.add(g, "login storm peak IOPS", lg.peak_iops(0, end + 60), "-", None)
    steady = lg.mean_iops(end + STEADY_FROM_S, end + STEADY_TO_S)
    st.add(g, "steady-state IOPS", steady, "-", None)
    st.add(g, "steady IOPS per desktop", steady / n, "-", None)
    share, _rkb, _wkb = lg.shares(end + STEADY_FROM_S, end + STEADY_TO_S)
    st.add(g, "steady read share", 100 * share, "-", None, "%")
    st.add(g, "array latency, worst 10 s", max(b.max_latency_ms(), lg.max_latency_ms()), "-", None, "ms")
    st.add(g, "mean logon", float(np.mean(lg.login_s)) if lg.login_s else math.nan, "-", None, "s")
    st.add(
        g,
        "host CPU, busiest host",
        max(max(b.series.host_cpu_pct_max), max(lg.series.host_cpu_pct_max)),
        "-",
        None,
        "%",
    )
    st.add(g, "host memory used", max(lg.series.host_mem_pct_max), "-", None, "%")
    st.wall_s = b.wall_s + lg.wall_s
    return st


__all__ = ["Check", "Study", "calibrate", "figures", "scale_out", "study_of", "subset_to_array"]
