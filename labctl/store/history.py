"""A lab + plan's past nights, read from the results store for the nightly's reports.

    nights = night_history(store, "sim-2007", "boot_storm", until=started, runs=30)
    for figures, extra in nights: ...             # RunFigures and run.json's `extra`, oldest first
    path = allure_history_from_store(store, "sim-2007", "boot_storm", before=started, out=path)
    build_report(run, history=path)               # Allure 3's historyPath: trends across machines

The store is the team's memory: a report built on any machine shows the same trends, because they
come from the store and not from an ``allure-history.jsonl`` that lives on one controller. Only
finished runs count (``outcome`` not ``running``); given a run kind's ``params_key`` (its profile
and plan parameters, :mod:`labctl.records.run_kind`), only runs of that kind: a quick run's trend
line is not a full run's.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labctl.recorder.sinks.allure import KIND, STATUS, history_key
from labctl.records.figures import RunFigures
from labctl.records.run_record import Outcome
from labctl.store.base import ResultsStore

NIGHTS = 30  # nights the trends show by default: a month of nightly runs
ALLURE_HISTORY_LIMIT = 100  # data points in an Allure history file (as labctl.report.build keeps)
ALLURE_HISTORY_FILE = "allure-history.jsonl"


def _recent_runs(
    store: ResultsStore,
    lab: str,
    plan: str,
    *,
    until: datetime | None,
    before: datetime | None,
    runs: int,
    params_key: str | None = None,
) -> list[dict[str, Any]]:
    """The last ``runs`` finished runs of lab + plan (started <= ``until`` / < ``before``), oldest first."""
    query = (
        "SELECT run_id, started_utc, started_lab_ts_s, time_scale, extra_json FROM runs "
        "WHERE lab = ? AND plan = ? AND outcome <> 'running'"
    )
    params: list[Any] = [lab, plan]
    if params_key is not None:
        query += " AND params_key = ?"
        params.append(params_key)
    if until is not None:
        query += " AND started_utc <= ?"
        params.append(until)
    if before is not None:
        query += " AND started_utc < ?"
        params.append(before)
    query += f" ORDER BY started_utc DESC, run_id DESC LIMIT {int(runs)}"
    return list(reversed(store.sql(query, params).dicts()))


def _extra(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def night_history(
    store: ResultsStore,
    lab: str,
    plan: str,
    *,
    until: datetime | None = None,
    runs: int = NIGHTS,
    params_key: str | None = None,
) -> list[tuple[RunFigures, dict[str, Any]]]:
    """The key figures of the last ``runs`` finished runs of ``lab`` + ``plan`` that started at or
    before ``until`` (default: all), oldest first, each with its run.json ``extra`` (where the
    nightly records its verdict). Lab-fault cells are included, with their outcome: a trend shows
    the nights the lab broke as well."""
    out = []
    for row in _recent_runs(store, lab, plan, until=until, before=None, runs=runs, params_key=params_key):
        figures = store.figures(row["run_id"])
        if figures is not None:
            out.append((figures, _extra(row["extra_json"])))
    return out


# --- Allure 3's history file -------------------------------------------------------------------------


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _param(value: Any) -> str:
    """A parameter's value as the Allure sink writes it (lists joined by ", ")."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def allure_history_id(lab: str, plan: str, cell: str, parameters: Sequence[tuple[str, str]]) -> str:
    """The history id Allure 3 gives the Allure sink's result of a cell: the md5 of the test case
    id (the sink's ``testCaseId``, :func:`history_key`), a dot, and the md5 of the parameters as
    ``name:value`` sorted by name and joined by commas (``@allurereport/core``'s calculateHistoryId)."""
    params = ",".join(f"{n}:{v}" for n, v in sorted(parameters, key=lambda p: (p[0].casefold(), p[1])))
    return f"{_md5(history_key(lab, plan, cell))}.{_md5(params)}"


def _wall_ms(run: dict[str, Any], lab_ts: float | None) -> int | None:
    """A lab timestamp of a run as wall-clock milliseconds (the run's start on both clocks)."""
    started: datetime = run["started_utc"]
    wall_s = started.replace(tzinfo=UTC).timestamp()
    if lab_ts is None or run.get("started_lab_ts_s") is None:
        return None
    return int((wall_s + (lab_ts - run["started_lab_ts_s"]) / (run.get("time_scale") or 1.0)) * 1000)


def _regressed(extra: dict[str, Any]) -> dict[str, list[str]]:
    """The cells the nightly found regressed that night (run.json ``extra.nightly.regressed``)."""
    nightly = extra.get("nightly")
    found = nightly.get("regressed") if isinstance(nightly, dict) else None
    if not isinstance(found, dict):
        return {}
    return {str(k): [str(f) for f in v] for k, v in found.items() if isinstance(v, list)}


def _data_point(
    run: dict[str, Any], lab: str, plan: str, cells: list[dict[str, Any]], url: str
) -> dict[str, Any]:
    started_ms = int(run["started_utc"].replace(tzinfo=UTC).timestamp() * 1000)
    regressed = _regressed(_extra(run["extra_json"]))
    results: dict[str, Any] = {}
    for c in cells:
        outcome = Outcome(c["outcome"])
        params = [("configuration", c["configuration"] or "-"), *c["parameters"]]
        key = allure_history_id(lab, c["plan"], c["cell"], params)
        start = _wall_ms(run, c["window_start_ts_s"]) or started_ms
        stop = max(start, _wall_ms(run, c["window_end_ts_s"]) or start)
        labels = [
            {"name": "epic", "value": c["plan"]},
            {"name": "feature", "value": c["scenario"]},
            {"name": "story", "value": c["cell"]},
            {"name": "lab", "value": lab},
            {"name": "outcome", "value": outcome.value},
        ]
        item: dict[str, Any] = {
            "id": _md5(f"{run['run_id']}/{c['cell']}"),
            "name": f"{c['scenario'].replace('_', ' ')} · {c['cell']}",
            "fullName": f"{lab}/{c['plan']}/{c['cell']}",
            "environment": "default",
            "status": str(STATUS[outcome]),
            "start": start,
            "stop": stop,
            "duration": stop - start,
            "labels": labels,
            "url": url,
            "historyId": key,
            "reportLinks": [],
        }
        if c["cell"] in regressed and item["status"] == "passed":  # as the nightly marked it that night
            figures = ", ".join(regressed[c["cell"]][:3])
            item.update(status="failed", message=f"regression: {figures}\noutcome: regression (Regression)")
            labels.append({"name": "tag", "value": "regression"})
        elif outcome is not Outcome.PASS:
            item["message"] = f"{c['reason'] or outcome.value}\noutcome: {outcome.value} ({KIND[outcome]})"
        results[key] = item
    return {
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"labctl-run:{run['run_id']}")),
        "name": f"{plan} on {lab} - {run['run_id']}",
        "timestamp": started_ms,
        "knownTestCaseIds": sorted({_md5(history_key(lab, c["plan"], c["cell"])) for c in cells}),
        "testResults": results,
        "metrics": {},
        "url": url,
    }


def _cells_of(store: ResultsStore, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    cells = store.sql(
        "SELECT run_id, cell, seq, plan, scenario, configuration, outcome, reason, window_start_ts_s, "
        f"window_end_ts_s FROM cells WHERE run_id IN ({marks}) ORDER BY run_id, seq, cell",
        run_ids,
    ).dicts()
    params: dict[tuple[str, str], list[tuple[str, str]]] = {}
    rows = store.sql(
        f"SELECT run_id, cell, name, value_json FROM cell_parameters WHERE run_id IN ({marks}) "
        "ORDER BY run_id, cell, name",
        run_ids,
    ).rows
    for run_id, cell, name, value_json in rows:
        params.setdefault((run_id, cell), []).append((name, _param(json.loads(value_json))))
    out: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        c["parameters"] = params.get((c["run_id"], c["cell"]), [])
        out.setdefault(c["run_id"], []).append(c)
    return out


def allure_history_from_store(
    store: ResultsStore,
    lab: str,
    plan: str,
    *,
    before: datetime | None = None,
    out: Path | None = None,
    limit: int = ALLURE_HISTORY_LIMIT,
    report_url: str | None = None,
    params_key: str | None = None,
) -> Path:
    """Write Allure 3's history file (JSON lines, one data point per run, oldest first) for
    ``lab`` + ``plan`` from the store's finished runs that started before ``before`` (default:
    all), and return its path: give it to ``labctl.report.build.build_report(run, history=path)``
    (Allure's ``historyPath``). Each cell's entry carries the history id Allure computes for the
    Allure sink's result of the same cell, so the report's history and trends show that cell's
    earlier nights, from any machine that reads the store.

    ``out``: where to write (default: a new temporary file the caller removes); ``report_url``:
    the absolute http(s) URL the results folder is published at, so a history entry links to that
    night's report (``<report_url>/<run-id>/report/index.html``)."""
    runs = _recent_runs(store, lab, plan, until=None, before=before, runs=limit, params_key=params_key)
    cells = _cells_of(store, [r["run_id"] for r in runs])
    if out is None:
        fd, name = tempfile.mkstemp(prefix="labctl-allure-history-", suffix=".jsonl")
        os.close(fd)
        out = Path(name)
    out.parent.mkdir(parents=True, exist_ok=True)
    base = report_url.rstrip("/") if report_url and report_url.startswith(("http://", "https://")) else ""
    lines = []
    for run in runs:
        url = f"{base}/{run['run_id']}/report/index.html" if base else ""
        if cells.get(run["run_id"]):
            lines.append(
                json.dumps(_data_point(run, lab, plan, cells[run["run_id"]], url), separators=(",", ":"))
            )
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    tmp.replace(out)
    return out
