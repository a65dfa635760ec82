"""Logon waterfalls (issue 24): each session's logon phase by phase, as the launchers report it,
recorded as series on the cell's timeline and summarised as percentiles per phase.

A phase's samples are series of the ``sessions`` source, entity the pool, metric
``logon_<phase>_s`` (unit s), stamped with the session's launch time: they sit next to the arrays'
and hosts' series and the pool's ``active_sessions`` / ``logging_in`` (the concurrency each logon
met). A phase no launcher could measure on its mechanism is named with the launcher's reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from labctl.lab.launchers.model import LogonWaterfall
from labctl.records import rt_index
from labctl.records.samples import Sample
from labctl.scenarios import vdi_metrics as M

TOTAL = "total"


def metric(phase: str) -> str:
    """``logon_protocol_connect_s``: the series of one phase (``logon_total_s``: launch to first operation)."""
    return f"logon_{phase}_s"


def samples(pool: str, w: LogonWaterfall) -> list[Sample]:
    """One sample per measured phase of ``w``, and its total, at the session's launch."""
    out = [Sample(M.SESSIONS_SOURCE, pool, metric(TOTAL), "s", w.launch_ts, w.total_s)]
    for ph in w.phases:
        if ph.measured and ph.duration_s is not None:
            out.append(Sample(M.SESSIONS_SOURCE, pool, metric(ph.name), "s", w.launch_ts, ph.duration_s))
    return out


def percentiles(logons: Iterable[LogonWaterfall]) -> dict[str, float | int | str | None]:
    """For a summary's ``extra``: ``logon_sessions``, ``logon_concurrent_max``, ``logon_connectors``,
    ``logon_<phase>_p50_s`` / ``_p95_s`` per
    measured phase (and the total), ``logon_<phase>_unmeasured`` (the reason) per phase no session
    measured. Phases in the launchers' order."""
    ws = list(logons)
    by_phase: dict[str, list[float]] = {TOTAL: [w.total_s for w in ws]} if ws else {}
    why: dict[str, str] = {}
    for w in ws:
        for ph in w.phases:
            if ph.measured and ph.duration_s is not None:
                by_phase.setdefault(ph.name, []).append(ph.duration_s)
            else:
                why.setdefault(ph.name, ph.why or "not measured")
    out: dict[str, float | int | str | None] = {"logon_sessions": len(ws)}
    if ws:  # the concurrency these percentiles were taken at: logons under way at once, at most
        out["logon_concurrent_max"] = concurrent_max(ws)
        # whose words the unmeasured phases are in (the report: "not measured by rdp: ...")
        out["logon_connectors"] = ", ".join(sorted({w.connector for w in ws if w.connector}))
    for name, values in by_phase.items():
        out[f"logon_{name}_p50_s"] = round(rt_index.quantile(values, 0.5), 3)
        out[f"logon_{name}_p95_s"] = round(rt_index.quantile(values, 0.95), 3)
    for name, reason in why.items():
        if name not in by_phase:
            out[f"logon_{name}_unmeasured"] = reason
    return out


def concurrent_max(logons: Iterable[LogonWaterfall]) -> int:
    """The most logons under way at one instant (launch to first operation)."""
    edges = sorted(e for w in logons for e in ((w.launch_ts, 1), (w.launch_ts + w.total_s, -1)))
    n = best = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        n += step
        best = max(best, n)
    return best
