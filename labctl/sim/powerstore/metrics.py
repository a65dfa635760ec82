"""``POST /api/rest/metrics/generate`` of a simulated PowerStore: samples from the twin's counters.

Request ``{"entity", "entity_id", "interval"}``; answer a JSON array of samples, oldest first, each
stamped with the end of its period (``timestamp``) on a round time. Field names and units follow
the PowerStore REST API as gopowerstore (``metrics_types.go``: ``CommonMetricsFields``,
``CommonMaxAvgIopsBandwidthFields``) and PyPowerStore (``metrics.py``) read them, and the API
reference's ``performance_metrics_by_volume`` model (its docs mirrored in
taylorliu1/py_auto_test ``PowerStore/prime/docs/BasePerformanceMetricsByVolume.md``):

- ``read_iops`` / ``write_iops`` / ``total_iops``: operations per second;
- ``read_bandwidth`` / ``write_bandwidth`` / ``total_bandwidth``: bytes per second;
- ``avg_read_latency`` / ``avg_write_latency`` / ``avg_latency``: microseconds (0 with no I/O);
- ``avg_read_size`` / ``avg_write_size`` / ``avg_io_size``: bytes;
- ``repeat_count``: consecutive samples with identical values are sent once; the sample stands for
  ``repeat_count`` periods, the first of which ends at ``timestamp`` (an idle volume's hour of
  zeros is one sample);
- rolled-up intervals (``Five_Mins``, ``One_Hour``, ``One_Day``) add ``avg_*`` rates (a Five_Mins
  client script reads ``avg_read_iops``) and ``max_*`` (the largest 20-second value in the period).

Retention: 20-second samples for an hour, five-minute ones for a day (as the array keeps them).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from labctl.sim.arrays.history import CounterHistory, Snapshot, VolumeRates, combine, window_rates

INTERVALS_S: dict[str, float] = {
    "Twenty_Sec": 20.0,
    "Five_Mins": 300.0,
    "One_Hour": 3600.0,
    "One_Day": 86400.0,
}
RETENTION_S: dict[str, float] = {
    "Twenty_Sec": 3600.0,
    "Five_Mins": 86400.0,
    "One_Hour": 86400.0,
    "One_Day": 86400.0,
}
STEP_S = 20.0
VOLUME, APPLIANCE, NODE = (
    "performance_metrics_by_volume",
    "performance_metrics_by_appliance",
    "performance_metrics_by_node",
)
RATE_FIELDS = (
    "read_iops",
    "write_iops",
    "total_iops",
    "read_bandwidth",
    "write_bandwidth",
    "total_bandwidth",
)
AVG_FIELDS = (
    "avg_read_latency",
    "avg_write_latency",
    "avg_latency",
    "avg_read_size",
    "avg_write_size",
    "avg_io_size",
)


def iso(lab_s: float) -> str:
    """``2020-05-11T07:40:20Z``"""
    return dt.datetime.fromtimestamp(round(lab_s), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def values(r: VolumeRates) -> dict[str, float]:
    """One period's figures in PowerStore's units."""
    ios = r.ios_s

    def per(n: float, total: float) -> float:
        return total / n if n > 0 else 0.0

    return {
        "read_iops": r.reads_s,
        "write_iops": r.writes_s,
        "total_iops": ios,
        "read_bandwidth": r.read_bytes_s,
        "write_bandwidth": r.write_bytes_s,
        "total_bandwidth": r.read_bytes_s + r.write_bytes_s,
        "avg_read_latency": (r.read_latency_s or 0.0) * 1e6,
        "avg_write_latency": (r.write_latency_s or 0.0) * 1e6,
        "avg_latency": (r.latency_s or 0.0) * 1e6,
        "avg_read_size": per(r.reads_s, r.read_bytes_s),
        "avg_write_size": per(r.writes_s, r.write_bytes_s),
        "avg_io_size": per(ios, r.read_bytes_s + r.write_bytes_s),
    }


def generate(
    history: CounterHistory,
    entity: str,
    ident_fields: dict[str, str],
    covers: Callable[[Snapshot], list[str]],
    interval: str,
) -> list[dict[str, Any]]:
    """Samples of one entity over the retention of ``interval``; ``covers`` names the volumes the
    entity stands for in a period (a node: the volumes it owned at the period's end)."""
    step = INTERVALS_S[interval]
    now = history.feed.now()
    out: list[dict[str, Any]] = []

    def figures(x: Snapshot, y: Snapshot) -> dict[str, float]:
        per_vol = window_rates(x, y)
        return values(combine([per_vol[v] for v in covers(y) if v in per_vol], entity))

    for a, b in history.samples(step, since=now - RETENTION_S[interval]):
        sample: dict[str, Any] = {"entity": entity, **ident_fields, "timestamp": iso(b.t), "repeat_count": 1}
        sample.update(figures(a, b))
        if step > STEP_S:
            subs = [figures(x, y) for x, y in history.samples(STEP_S, since=a.t, until=b.t)]
            for f in RATE_FIELDS:
                sample[f"avg_{f}"] = sample[f]
                sample[f"max_{f}"] = max((s[f] for s in subs), default=sample[f])
            for f in AVG_FIELDS:
                sample[f"max_{f}"] = max((s[f] for s in subs), default=sample[f])
        _append(out, sample)
    return out


def _append(out: list[dict[str, Any]], sample: dict[str, Any]) -> None:
    """Append, or count a repeat of the previous sample when every figure is the same."""
    if out:
        last = out[-1]
        same = all(last.get(k) == v for k, v in sample.items() if k not in ("timestamp", "repeat_count"))
        if same:
            last["repeat_count"] += 1
            return
    out.append(sample)
