"""The typed run record as rows of the store's tables (column names as in ``schema.sql``).

Both backends write exactly these rows, so both hold the same data."""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from labctl.records.figures import BOOT_ROLES, cell_figures
from labctl.records.run_kind import run_kind
from labctl.records.run_record import CellRecord, RunInfo, RunOutcome
from labctl.records.series import Series
from labctl.store.schema import SCHEMA_VERSION, table

Row = dict[str, Any]
SampleRow = tuple[
    str, str, str, str, str, float, float | None
]  # cell, source, entity, metric, unit, ts_s, value


def utc(iso: str | None) -> datetime | None:
    """``2026-11-21T05:30:12.345Z`` as a naive UTC datetime (the store's TIMESTAMP)."""
    if not iso:
        return None
    parsed = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def now_utc() -> datetime:
    """Now, naive UTC, to the millisecond (both databases keep microseconds; Parquet too)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def finite(x: float | None) -> float | None:
    """NaN and infinities become NULL: the same on both databases (PostgreSQL would keep NaN)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def _json(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)


def folder_label(path: str | None) -> str | None:
    """``host:/abs/path`` of a run folder: where a team member finds the source of truth."""
    return f"{socket.gethostname()}:{path}" if path else None


def run_row(info: RunInfo, folder: str | None = None) -> Row:
    """The ``runs`` row of a run.json."""
    ended = info.ended
    kind = run_kind(info.parameters)
    return {
        "run_id": info.run_id,
        "lab": info.lab,
        "plan": info.plan,
        "configuration": info.configuration,
        "outcome": RunOutcome(info.outcome).value,
        "reason": info.reason or None,
        "started_utc": utc(info.started.wall_utc),
        "ended_utc": utc(ended.wall_utc) if ended else None,
        "duration_s": finite(info.duration_s),
        "started_lab_ts_s": finite(info.started.lab_ts),
        "ended_lab_ts_s": finite(ended.lab_ts) if ended else None,
        "cells": len(info.cells),
        "simulated": info.simulated,
        "time_scale": finite(info.time_scale),
        "host": info.host,
        "labctl_version": info.labctl_version,
        "git_commit": info.git_commit,
        "git_dirty": info.git_dirty,
        "inventory_file": info.inventory_file,
        "inventory_sha256": info.inventory_sha256,
        "lease": info.lease,
        "parameters_json": _json(info.parameters),
        "profile": kind.profile,
        "params_key": kind.key,
        "extra_json": _json(info.extra),
        "folder": folder_label(folder),
        "stored_utc": now_utc(),
        "schema_version": SCHEMA_VERSION,
    }


def _param_row(run_id: str, cell: str, name: str, value: Any) -> Row:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "run_id": run_id,
        "cell": cell,
        "name": name,
        "value_num": finite(float(value)) if number else None,
        "value_text": value if isinstance(value, str) else None,
        "value_json": _json(value),
    }


def cell_rows(run_id: str, record: CellRecord, seq: int) -> dict[str, list[Row]]:
    """The rows of one cell in every per-cell table (see ``schema.CELL_TABLES``)."""
    s, v = record.summary, record.verdict
    cell = s.cell
    key = {"run_id": run_id, "cell": cell}
    booting = [c for c in s.clients.values() if c.role in BOOT_ROLES and c.outcome != "excluded"]
    restore = s.restore
    cells = [
        {
            **key,
            "seq": seq,
            "plan": s.plan,
            "scenario": s.scenario,
            "configuration": s.configuration,
            "outcome": s.outcome.value,
            "reason": s.reason or None,
            "verdict_outcome": v.outcome.value if v is not None else None,
            "window_start_ts_s": s.window.start_ts_s if s.window else None,
            "window_end_ts_s": s.window.end_ts_s if s.window else None,
            "window_s": s.window.duration_s if s.window else None,
            "storm_start_ts_s": finite(s.storm_start_ts_s),
            "clients": len(s.clients),
            "never_booted": sum(1 for c in booting if c.boot_time_s is None),
            "restore_ok": restore.ok if restore else None,
            "restore_detail": (restore.detail or None) if restore else None,
            "left_on": (", ".join(restore.left_on) or None) if restore else None,
            "entities_json": _json(s.entities),
            "extra_json": _json(s.extra),
            "response_index_json": s.response_index.model_dump_json() if s.response_index else None,
        }
    ]
    params = [_param_row(run_id, cell, name, value) for name, value in sorted(s.parameters.items())]
    verdicts = []
    for c in v.criteria if v is not None else []:
        verdicts.append(
            {
                **key,
                "criterion": c.name,
                "outcome": c.outcome.value,
                "required": c.required,
                "statistic": c.statistic,
                "unit": c.unit or None,
                "selector": c.selector,
                "observed": finite(c.observed),
                "entity": c.entity,
                "pass_min": c.pass_band.min if c.pass_band else None,
                "pass_max": c.pass_band.max if c.pass_band else None,
                "marginal_min": c.marginal_band.min if c.marginal_band else None,
                "marginal_max": c.marginal_band.max if c.marginal_band else None,
                "threshold": finite(c.threshold),
                "coverage": finite(c.coverage),
                "first_crossing_ts_s": finite(c.first_crossing_ts),
                "missing": ", ".join(c.missing) or None,
                "message": c.message or None,
            }
        )
    summaries = []
    for m in s.metrics.values():
        summaries.append(
            {
                **key,
                "source": m.source,
                "entity": m.entity,
                "metric": m.metric,
                "unit": m.unit,
                "samples": m.samples,
                "expected_interval_s": finite(m.expected_interval_s),
                "coverage": finite(m.coverage),
                "gaps": len(m.gaps),
                "longest_gap_s": max((g.duration_s for g in m.gaps), default=None),
                "start_ts_s": finite(m.start_ts_s),
                "end_ts_s": finite(m.end_ts_s),
                "peak": finite(m.peak),
                "peak_ts_s": finite(m.peak_ts_s),
                "mean": finite(m.mean),
                "p95": finite(m.p95),
                "minimum": finite(m.min),
                "last_value": finite(m.last),
            }
        )
    clients = [
        {
            **key,
            "client": c.name,
            "role": c.role,
            "outcome": c.outcome,
            "boot_time_s": finite(c.boot_time_s),
            "retries": c.retries,
            "time_to_ready_s": finite(c.time_to_ready_s),
            "copy_s": finite(c.copy_s),
            "sent_ts_s": finite(c.sent_ts_s),
            "delivered_ts_s": finite(c.delivered_ts_s),
            "detail": c.detail or None,
        }
        for c in s.by_role()
    ]
    actions = [
        {
            **key,
            "seq": i,
            "action": a.action,
            "backend": a.backend,
            "machines": a.machines,
            "ok": a.ok,
            "failed": "; ".join(f"{m}: {why}" for m, why in sorted(a.failed.items())) or None,
            "first_sent_ts_s": finite(a.first_sent_ts_s),
            "send_spread_s": finite(a.send_spread_s),
            "send_spread_wall_s": finite(a.send_spread_wall_s),
            "delivery_spread_s": finite(a.delivery_spread_s),
        }
        for i, a in enumerate(s.actions)
    ]
    figures = [
        {
            **key,
            "figure": f.key,
            "kind": f.kind,
            "statistic": f.statistic,
            "source": f.source,
            "entity": f.entity,
            "unit": f.unit or None,
            "direction": f.direction.value,
            "value": f.value,
            "n": f.n,
            "coverage": finite(f.coverage),
        }
        for f in cell_figures(s, v).figures.values()
        if math.isfinite(f.value)
    ]
    return {
        "cells": cells,
        "cell_parameters": params,
        "verdicts": verdicts,
        "series_summaries": summaries,
        "client_outcomes": clients,
        "group_actions": actions,
        "cell_figures": figures,
    }


def sample_rows(series: Iterable[Series], cell: str | None = None) -> Iterator[SampleRow]:
    """Every sample of ``series`` as a ``samples`` row (without run_id), NaN as NULL.
    ``cell`` overrides the series' own cell (a recorder's series may not carry it)."""
    for s in series:
        c = s.cell if cell is None else cell
        for ts, value in zip(s.ts, s.values, strict=True):
            yield (c, s.source, s.entity, s.metric, s.unit, float(ts), finite(value))


def batched(rows: Iterable[SampleRow], size: int) -> Iterator[list[SampleRow]]:
    """``rows`` in lists of at most ``size``."""
    batch: list[SampleRow] = []
    for r in rows:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def columns(name: str) -> tuple[str, ...]:
    """A table's columns in DDL order."""
    return table(name).names
