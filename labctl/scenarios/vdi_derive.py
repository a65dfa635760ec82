"""The derived figures of a VDI storm, from the arrays' recorded series: pure arithmetic.

Per phase and per array (and all arrays together): mean and peak IOPS, the paper's IOPS per
desktop (peak / desktops for the boot and login storms, mean / desktops in steady state: how the
2012 paper's table 7 derives them), read share and sizes, latency, throughput, and the storm
duration: lab seconds the IOPS stayed above a threshold (1.2 x the steady-state mean when there is
one, else half the phase's own peak).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labctl.records.run_record import PhaseFigures
from labctl.records.series import Series
from labctl.scenarios import vdi_metrics as M

STORM_OVER_STEADY = 1.2  # a storm is IOPS above 1.2 x the steady state
STORM_SHARE_OF_PEAK = 0.5  # without a steady state: above half the phase's peak
PEAK_PHASES = ("boot", "login")  # per desktop from the peak; other phases from the mean


@dataclass(frozen=True)
class ArraySeries:
    """One array's total series (or several arrays' summed): aligned by sample time."""

    ts: tuple[float, ...]
    read_iops: tuple[float, ...]
    write_iops: tuple[float, ...]
    read_mb_s: tuple[float, ...]
    write_mb_s: tuple[float, ...]
    latency_ms: tuple[float | None, ...]

    def iops(self, k: int) -> float:
        return self.read_iops[k] + self.write_iops[k]


def _by_ts(s: Series | None) -> dict[float, float]:
    return dict(zip(s.ts, s.values, strict=True)) if s is not None else {}


def array_series(found: Mapping[str, Series | None]) -> ArraySeries:
    """From one array's total series by metric (``read_iops``, ``write_iops``, ``read_mb_s``,
    ``write_mb_s``, ``latency_ms``), on the read series' timestamps."""
    r, w = _by_ts(found.get(M.READ_IOPS)), _by_ts(found.get(M.WRITE_IOPS))
    rmb, wmb = _by_ts(found.get(M.READ_MB_S)), _by_ts(found.get(M.WRITE_MB_S))
    lat = _by_ts(found.get(M.LATENCY_MS))
    ts = tuple(sorted(set(r) & set(w)))
    return ArraySeries(
        ts,
        tuple(r[t] for t in ts),
        tuple(w[t] for t in ts),
        tuple(rmb.get(t, 0.0) for t in ts),
        tuple(wmb.get(t, 0.0) for t in ts),
        tuple(lat.get(t) for t in ts),
    )


def summed(parts: Sequence[ArraySeries], bucket_s: float) -> ArraySeries:
    """Several arrays' series added up, samples matched to the same ``bucket_s`` slot (the arrays
    are polled one after the other, so their stamps differ by a little)."""
    slots: dict[int, list[tuple[int, ArraySeries]]] = {}
    for a in parts:
        for k, t in enumerate(a.ts):
            slots.setdefault(round(t / bucket_s), []).append((k, a))
    keep = sorted(n for n, items in slots.items() if len(items) == len(parts))
    ts: list[float] = []
    r: list[float] = []
    w: list[float] = []
    rmb: list[float] = []
    wmb: list[float] = []
    lat: list[float | None] = []
    for n in keep:
        items = slots[n]
        ts.append(max(a.ts[k] for k, a in items))
        r.append(sum(a.read_iops[k] for k, a in items))
        w.append(sum(a.write_iops[k] for k, a in items))
        rmb.append(sum(a.read_mb_s[k] for k, a in items))
        wmb.append(sum(a.write_mb_s[k] for k, a in items))
        ios = [(x, a.iops(k)) for k, a in items if (x := a.latency_ms[k]) is not None]
        total = sum(n_ for _, n_ in ios)
        lat.append(sum(x * n_ for x, n_ in ios) / total if total > 0 else None)
    return ArraySeries(tuple(ts), tuple(r), tuple(w), tuple(rmb), tuple(wmb), tuple(lat))


def time_above(a: ArraySeries, idx: Sequence[int], threshold: float) -> float:
    """Lab seconds with IOPS above ``threshold``: each sample above counts the time since the one before."""
    total = 0.0
    for j, k in enumerate(idx):
        if a.iops(k) > threshold and j > 0:
            total += a.ts[k] - a.ts[idx[j - 1]]
    return total


def figures(
    a: ArraySeries,
    phase: str,
    span: tuple[float, float],
    desktops: int,
    *,
    array: str = "",
    steady_mean: float | None = None,
) -> PhaseFigures:
    t0, t1 = span
    # a sample stamped at t covers the interval before it: the first one inside starts after t0
    idx = [k for k, t in enumerate(a.ts) if t0 < t <= t1]
    fig = PhaseFigures(
        phase=phase, array=array, desktops=desktops, start_ts_s=t0, end_ts_s=t1, samples=len(idx)
    )
    if not idx:
        return fig
    iops = [a.iops(k) for k in idx]
    reads = sum(a.read_iops[k] for k in idx)
    writes = sum(a.write_iops[k] for k in idx)
    mean, peak = sum(iops) / len(iops), max(iops)
    lat = [(x, a.iops(k)) for k in idx if (x := a.latency_ms[k]) is not None]
    lat_ios = sum(n for _, n in lat)
    threshold = STORM_OVER_STEADY * steady_mean if steady_mean else STORM_SHARE_OF_PEAK * peak
    base = peak if phase in PEAK_PHASES else mean
    return fig.model_copy(
        update={
            "iops_mean": mean,
            "iops_peak": peak,
            "iops_per_desktop": base / desktops if desktops else None,
            "read_share_pct": 100.0 * reads / (reads + writes) if reads + writes > 0 else None,
            "read_kb": sum(a.read_mb_s[k] for k in idx) * 1e6 / 1024 / reads if reads > 0 else None,
            "write_kb": sum(a.write_mb_s[k] for k in idx) * 1e6 / 1024 / writes if writes > 0 else None,
            "latency_mean_ms": sum(x * n for x, n in lat) / lat_ios if lat_ios > 0 else None,
            "latency_peak_ms": max((x for x, _ in lat), default=None),
            "throughput_mb_s": sum(a.read_mb_s[k] + a.write_mb_s[k] for k in idx) / len(idx),
            "storm_duration_s": time_above(a, idx, threshold),
            "storm_threshold_iops": threshold,
        }
    )
