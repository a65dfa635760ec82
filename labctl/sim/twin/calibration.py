"""The 2007 boot storm, side by side with the published figures: the twin's calibration check.

The published figures (``shared/docs/lab-twin-targets.md``, from the 2007 paper) are written down
here by hand; nothing in this module comes from the model. :func:`calibrate` runs the storm for
each group size in fast-forward and gives a verdict per row and per quantity.

Boot times the paper gives only as statements (27 s local-disk baseline; "+15 s from 25 to 100
clients"; "almost 10 s slower" from 50 to 75+; a small rise below 25). The *implied* value of each
row follows from those statements alone, anchored where the paper anchors them:

- 1, 5, 10 clients: 27 s + the boot image over the client's link (an idle server), absolute;
- 25 clients: the 1-client value + 2.5 s ("rises slowly"), i.e. 0 to +5 s;
- 50 clients: the twin's 25-client time + 5 s (100 = 25 + 15, 75+ = 50 + 10);
- 75 clients: the twin's 50-client time + 10 s;
- 100 clients: the twin's 25-client time + 15 s.

Each must hold within +-5 s. The 50-100 rows are relative by nature: the paper states differences.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.model import Lab
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.copies import PATHS, copy_limits, expected_copy_s, run_copy_cell
from labctl.sim.twin.storm import STORM_WINDOW_S, StormResult, run_storm

GROUP_SIZES = (1, 5, 10, 25, 50, 75, 100)
LOCAL_BOOT_S = 27.0  # the paper's local-disk boot, same metric
BOOT_TOLERANCE_S = 5.0
RETRY_TOLERANCE = 2.0

# published retries per client in the 6-minute storm: "about 2 at 50, about 6 at 75-100, low
# everywhere" (figure 4); 'low' below 50 read as at most 2
PUBLISHED_RETRIES: dict[int, float | None] = {
    1: None,
    5: None,
    10: None,
    25: None,
    50: 2.0,
    75: 6.0,
    100: 6.0,
}
LOW_RETRIES = 2.0


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    text: str

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass
class Check:
    quantity: str
    value: float
    published: str
    ok: bool
    # False: shown beside the paper but not part of the verdict, a known limit the twin's README
    # explains (no physical mechanism found that would produce the published shape)
    judged: bool = True


@dataclass
class Row:
    clients: int
    result: StormResult
    boot_s: float
    boot_implied_s: float
    retries: float
    cpu_avg_pct: float
    cpu_peak_pct: float
    cpu_100_s: float  # seconds at >= 97% CPU
    nic_peak_pct: float
    queue_peak: float
    queue_over_8_s: float
    mem_min_free_mb: float
    end_cpu_pct: float
    end_queue: float
    end_nic_pct: float
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


@dataclass
class Calibration:
    lab: Lab
    rows: list[Row]
    trends: list[Check]
    streaming_server: str
    write_cache: str

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows) and all(t.ok or not t.judged for t in self.trends)


def stream_time_s(lab: Lab) -> float:
    """The boot image over the client's port: the 'time to stream the boot image' on an idle server."""
    p = lab.twin
    read_mb = sum(ph.read_mb for ph in p.boot_phases())
    link = (
        lab.clients[0].client_hardware.nic_speed_gbps
        if lab.clients and lab.clients[0].client_hardware
        else 1.0
    )
    return read_mb * hwm.MB / hwm.nic_counted_bytes_per_s(link, p)


def implied_boot_s(lab: Lab, measured: dict[int, float] | None = None) -> dict[int, float]:
    """Implied boot time per group size; rows stated relative to others use ``measured`` anchors."""
    t1 = LOCAL_BOOT_S + stream_time_s(lab)
    out = {1: t1, 5: t1, 10: t1, 25: t1 + 2.5}
    m = measured or {}
    if 25 in m:
        out[50] = m[25] + 5.0
        out[100] = m[25] + 15.0
    if 50 in m:
        out[75] = m[50] + 10.0
    return out


def _bands(n: int) -> dict[str, Band]:
    """Published bands per group size for CPU, NIC, queue, memory (targets doc)."""
    b: dict[str, Band] = {"mem": Band(3072.0, math.inf, ">3072")}
    if n == 50:
        b["cpu_avg"] = Band(50.0, 70.0, "~60")
        b["cpu_peak"] = Band(75.0, 95.0, "~85")
    if n in (75, 100):
        b["cpu_peak"] = Band(97.0, 100.0, "100")
    if n >= 50:
        b["nic_peak"] = Band(60.0, 100.0, ">60") if n == 50 else Band(93.0, 100.0, "~98")
    if n <= 50:
        b["queue_peak"] = Band(0.0, 10.0, "<=10")
    else:
        b["queue_peak"] = Band(20.0, 70.0, "20-70")
    return b


def measure(res: StormResult, server: str, write_cache: str) -> dict[str, float]:
    w = res.window()
    cpu = res.cpu_pct[server]
    nics = [v for k, v in res.nic_out_pct.items() if k.startswith(server + "/")]
    q = res.disk_queue[write_cache]
    mem = res.mem_available_mb[server]
    dt = float(res.t[1] - res.t[0]) if res.t.size > 1 else 1.0
    tail = res.t >= res.t[-1] - 60.0  # the last minute of the window
    return {
        "cpu_avg": float(cpu[w].mean()) if w.any() else 0.0,
        "cpu_peak": float(cpu.max()),
        "cpu_100_s": float((cpu >= 97.0).sum() * dt),
        "nic_peak": float(max(n.max() for n in nics)),
        "queue_peak": float(q.max()),
        "queue_over_8_s": float((q > 8.0).sum() * dt),
        "mem_min": float(mem.min()),
        "end_cpu": float(cpu[tail].mean()),
        "end_queue": float(q[tail].mean()),
        "end_nic": float(max(n[tail].mean() for n in nics)),
    }


def calibrate(
    lab: Lab,
    sizes: tuple[int, ...] = GROUP_SIZES,
    *,
    duration_s: float = STORM_WINDOW_S,
    progress: Callable[[int, StormResult], None] | None = None,
) -> Calibration:
    conf = lab.configuration
    server = conf.streaming_servers[0] if conf else lab.servers[0].name
    wc = f"{conf.write_cache_server}:{conf.write_cache_volume}" if conf else ""
    published = conf is not None and conf.name == "standalone"
    rows: list[Row] = []
    measured: dict[int, float] = {}
    for n in sizes:
        res = run_storm(lab, n, duration_s=duration_s)
        if progress:
            progress(n, res)
        m = measure(res, server, wc)
        measured[n] = res.mean_boot_s()
        row = Row(
            clients=n,
            result=res,
            boot_s=res.mean_boot_s(),
            boot_implied_s=implied_boot_s(lab, measured).get(n, float("nan")),
            retries=float(res.retries.mean()),
            cpu_avg_pct=m["cpu_avg"],
            cpu_peak_pct=m["cpu_peak"],
            cpu_100_s=m["cpu_100_s"],
            nic_peak_pct=m["nic_peak"],
            queue_peak=m["queue_peak"],
            queue_over_8_s=m["queue_over_8_s"],
            mem_min_free_mb=m["mem_min"],
            end_cpu_pct=m["end_cpu"],
            end_queue=m["end_queue"],
            end_nic_pct=m["end_nic"],
        )
        row.checks = _row_checks(row, published)
        rows.append(row)
    return Calibration(lab, rows, _trend_checks(rows, published), server, wc)


def _row_checks(r: Row, published_config: bool) -> list[Check]:
    checks: list[Check] = []
    n = r.clients
    booted = r.result.booted == n
    checks.append(Check("all booted", float(r.result.booted), f"{n}", booted))
    if not math.isnan(r.boot_implied_s) and published_config:
        checks.append(
            Check(
                "boot time",
                r.boot_s,
                f"{r.boot_implied_s:.0f}+-{BOOT_TOLERANCE_S:.0f}",
                abs(r.boot_s - r.boot_implied_s) <= BOOT_TOLERANCE_S,
            )
        )
    if published_config and n in PUBLISHED_RETRIES:
        want = PUBLISHED_RETRIES[n]
        if want is None:
            checks.append(Check("retries", r.retries, f"<={LOW_RETRIES:.0f}", r.retries <= LOW_RETRIES))
        else:
            checks.append(
                Check(
                    "retries",
                    r.retries,
                    f"{want:.0f}+-{RETRY_TOLERANCE:.0f}",
                    abs(r.retries - want) <= RETRY_TOLERANCE,
                )
            )
    if published_config:
        for key, value in (
            ("cpu_avg", r.cpu_avg_pct),
            ("cpu_peak", r.cpu_peak_pct),
            ("nic_peak", r.nic_peak_pct),
            ("queue_peak", r.queue_peak),
            ("mem", r.mem_min_free_mb),
        ):
            band = _bands(n).get(key)
            if band is not None:
                checks.append(Check(key, value, band.text, band.holds(value)))
    # back to idle in the last minute of the window
    idle = r.end_cpu_pct < 10.0 and r.end_queue < 2.0 and r.end_nic_pct < 5.0
    checks.append(Check("idle after", r.end_cpu_pct, "CPU < 10%, queue < 2, NIC < 5%", idle))
    return checks


def _monotone(values: list[float], slack: float) -> bool:
    return all(b >= a - slack for a, b in itertools.pairwise(values))


def _trend_checks(rows: list[Row], published: bool = True) -> list[Check]:
    if len(rows) < 2:
        return []
    boot = [r.boot_s for r in rows]
    retries = [r.retries for r in rows]
    cpu = [r.cpu_peak_pct for r in rows]
    nic = [r.nic_peak_pct for r in rows]
    queue = [r.queue_peak for r in rows]
    cpu_long = [r.cpu_100_s for r in rows]
    out = [
        Check("boot time rises with group size", boot[-1], "monotone", _monotone(boot, 0.5)),
        Check("retries rise with group size", retries[-1], "monotone", _monotone(retries, 0.5)),
        Check("CPU peak rises", cpu[-1], "monotone", _monotone(cpu, 1.0)),
        Check("NIC peak rises", nic[-1], "monotone", _monotone(nic, 1.0)),
        Check("queue peak rises", queue[-1], "monotone", _monotone(queue, 0.5)),
        Check(
            "CPU at 100% lasts longer with more clients",
            cpu_long[-1],
            "non-decreasing",
            _monotone(cpu_long, 0.0),
        ),
    ]
    by_n = {r.clients: r for r in rows}
    if not published:
        return out
    if 25 in by_n and 100 in by_n:
        d = by_n[100].boot_s - by_n[25].boot_s
        out.append(Check("boot 25 -> 100", d, "+15 +-5 s", abs(d - 15.0) <= BOOT_TOLERANCE_S))
    if 50 in by_n and 75 in by_n:
        d = by_n[75].boot_s - by_n[50].boot_s
        out.append(Check("boot 50 -> 75", d, "+10 +-5 s", abs(d - 10.0) <= BOOT_TOLERANCE_S))
    out.extend(_shape_75_100(by_n))
    return out


def _shape_75_100(by_n: dict[int, Row]) -> list[Check]:
    """75 -> 100: the paper's statements make boot time and retries nearly level there.

    Boot time: 100 = 25 + 15 s and 75 = 50 + 10 s leave 100 - 75 = 5 - (50 - 25) s, with the twin's
    own 25 and 50. Retries: about 6 at both. Reported, not judged: past the saturated port and CPU
    each added client adds its demand at the bottleneck, and no protocol or hardware mechanism the
    twin knows levels that off (README: 'The 75 -> 100 shape').
    """
    if not all(n in by_n for n in (25, 50, 75, 100)):
        return []
    implied = 5.0 - (by_n[50].boot_s - by_n[25].boot_s)
    d_boot = by_n[100].boot_s - by_n[75].boot_s
    d_retries = by_n[100].retries - by_n[75].retries
    return [
        Check(
            "boot 75 -> 100 (paper: nearly level)",
            d_boot,
            f"{implied:+.0f} +-5 s",
            abs(d_boot - implied) <= BOOT_TOLERANCE_S,
            judged=False,
        ),
        Check(
            "retries 75 -> 100 (paper: ~6 at both)",
            d_retries,
            f"+0 +-{RETRY_TOLERANCE:.0f}",
            abs(d_retries) <= RETRY_TOLERANCE,
            judged=False,
        ),
    ]


COPY_SIZES = (1, 25, 50)
# the twin's copy time against the bottleneck bound: never faster, and a closed network near its
# knee queues a little more than the bound (approximate MVA is itself a few percent pessimistic)
COPY_AGREEMENT = (0.95, 1.5)


@dataclass
class CopyRow:
    path: str
    copiers: int
    limit: str  # the resource with the largest least-time
    expected_s: float  # the bottleneck bound
    twin_s: np.ndarray  # each copier's copy time in the twin (no rebooters)

    @property
    def ok(self) -> bool:
        med = float(np.median(self.twin_s))
        lo, hi = COPY_AGREEMENT
        return bool(np.isfinite(self.twin_s).all()) and lo * self.expected_s <= med <= hi * self.expected_s


def copy_table(
    lab: Lab, sizes: tuple[int, ...] = COPY_SIZES, progress: Callable[[str, int], None] | None = None
) -> list[CopyRow]:
    """Each copy path alone and with 25 / 50 copiers: the physics' expectation beside the twin."""
    rows = []
    for path in PATHS:
        for n in sizes:
            if n > len(lab.clients):
                continue
            if progress:
                progress(path, n)
            expected, limit = expected_copy_s(copy_limits(lab, path, n))
            res = run_copy_cell(lab, path, n, 0, sample_s=5.0, tail_s=0.0)
            rows.append(CopyRow(path, n, limit, expected, res.copy_s))
    return rows


def score(cal: Calibration) -> float:
    """How far from the published figures, in tolerance units (0: everything centred)."""
    s = 0.0
    for r in cal.rows:
        if not math.isnan(r.boot_implied_s):
            s += ((r.boot_s - r.boot_implied_s) / BOOT_TOLERANCE_S) ** 2
        want = PUBLISHED_RETRIES.get(r.clients)
        if want is not None:
            s += ((r.retries - want) / RETRY_TOLERANCE) ** 2
        s += 4.0 * sum(not c.ok for c in r.checks)
    s += 4.0 * sum(not t.ok for t in cal.trends if t.judged)
    return float(s)


def summary_numbers(cal: Calibration) -> list[dict[str, float]]:
    return [
        {
            "clients": r.clients,
            "boot_s": r.boot_s,
            "implied_s": r.boot_implied_s,
            "retries": r.retries,
            "cpu_avg": r.cpu_avg_pct,
            "cpu_peak": r.cpu_peak_pct,
            "nic_peak": r.nic_peak_pct,
            "queue_peak": r.queue_peak,
            "queue_over_8_s": r.queue_over_8_s,
            "mem_min_free_mb": r.mem_min_free_mb,
        }
        for r in cal.rows
    ]


__all__ = ["GROUP_SIZES", "Calibration", "Row", "calibrate", "implied_boot_s", "np", "score"]
