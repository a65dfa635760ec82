"""The series labctl records, by source and metric: a criteria selector is checked against them
before a storm runs, so ``select: {source: typeprf, metric: disk_queue_len}`` is one line at
collection instead of a whole storm and then "no data".

A series is ``(source, entity, metric)``; the sources and their metrics are fixed by the drivers
(``labctl/drivers``: typeperf's counter table, vSphere's performance counters, the arrays'
normalised set, the PVS console, Redfish power) and the VDI plans' own ``sessions`` series
(``labctl/scenarios/vdi_metrics.py``). The entity is the lab's (a machine, ``<array>/<volume>``,
``group:<name>``) and is not checked here. Selectors are shell patterns: a pattern is known when
it matches at least one name.

Only a *required* criterion is refused: one written ``required: false`` may name a series no
source reports yet (e.g. ``retransmit_pct``), and is reported as no data until one does.
"""

from __future__ import annotations

import difflib
from fnmatch import fnmatchcase

from labctl.criteria.model import CriteriaFile

_ARRAY_METRICS = frozenset(
    {
        "read_iops",
        "write_iops",
        "iops",
        "read_mb_s",
        "write_mb_s",
        "throughput_mb_s",
        "latency_ms",
        "read_latency_ms",
        "write_latency_ms",
        "io_size_kb",
        "busy_pct",
        "controller_up",
        "write_cache_used_pct",
    }
)

SOURCE_METRICS: dict[str, frozenset[str]] = {
    "typeperf": frozenset(
        {
            "cpu_pct",
            "cpu_privileged_pct",
            "cpu_user_pct",
            "disk_busy_pct",
            "disk_bytes_per_s",
            "disk_current_queue_len",
            "disk_iops",
            "disk_latency_ms",
            "disk_queue_len",
            "disk_read_iops",
            "disk_write_iops",
            "memory_available_mb",
            "memory_cache_mb",
            "memory_committed_mb",
            "memory_committed_pct",
            "memory_pages_per_s",
            "memory_used_mb",
            "nic_bandwidth_bps",
            "nic_received_bytes_per_s",
            "nic_sent_bytes_per_s",
            "nic_total_bytes_per_s",
            "nic_received_util_pct",
            "nic_sent_util_pct",
        }
    ),
    "pvs": frozenset({"active", "retries", "boot_time_s", "ram_cache_pct"}),
    "redfish": frozenset({"power_w"}),
    "vcenter": frozenset(
        {
            "cpu_pct",
            "cpu_mhz",
            "mem_usage_pct",
            "mem_balloon_kb",
            "mem_active_kb",
            "mem_consumed_kb",
            "net_kbps",
            "ds_read_iops",
            "ds_write_iops",
            "ds_read_latency_ms",
            "ds_write_latency_ms",
            # vCenter's own counter names, which the same source reported before normalising
            "cpu.usage.average",
            "cpu.usagemhz.average",
            "mem.usage.average",
            "mem.vmmemctl.average",
            "mem.active.average",
            "mem.consumed.average",
            "net.usage.average",
        }
    ),
    "sessions": frozenset({"active_sessions", "logging_in", "login_s", "response_s", "index_s"}),
    **{kind: _ARRAY_METRICS for kind in ("unity", "powerstore", "sc", "equallogic")},
}


def _matches(pattern: str, names: frozenset[str] | list[str]) -> bool:
    return any(fnmatchcase(n, pattern) for n in names)


def _hint(pattern: str, names: list[str]) -> str:
    close = difflib.get_close_matches(pattern, names, n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known: {', '.join(sorted(names)[:12])}" + (" ..." if len(names) > 12 else "")


def unknown_selectors(criteria: CriteriaFile, source: str) -> list[str]:
    """One line per required criterion whose ``source`` or ``metric`` names no series labctl
    records: ``file: criteria[i] (name): select.metric 'x' names no recorded series (fix)``."""
    out: list[str] = []
    for i, c in enumerate(criteria.criteria):
        sel = c.select
        if sel.is_result or not c.required:
            continue
        where = f"{source}: criteria[{i}] ({c.name})"
        sources = sorted(SOURCE_METRICS)
        if sel.source is not None and not _matches(sel.source, sources):
            out.append(
                f"{where}: select.source {sel.source!r} is not a source labctl records ({_hint(sel.source, sources)})"
            )
            continue
        picked = [s for s in sources if sel.source is None or fnmatchcase(s, sel.source)]
        metrics = sorted({m for s in picked for m in SOURCE_METRICS[s]})
        if sel.metric is not None and not _matches(sel.metric, metrics):
            of = f" of source {sel.source!r}" if sel.source is not None else ""
            out.append(
                f"{where}: select.metric {sel.metric!r} is not a metric{of} labctl records "
                f"({_hint(sel.metric, metrics)}; or write required: false for a series no source reports yet)"
            )
    return out
