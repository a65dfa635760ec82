"""The results store's interface: one protocol, two backends (DuckDB over Parquet, PostgreSQL).

    store = open_store("duckdb:results/store")          # or "postgresql://labctl@db/labctl"
    store.add_run(info); store.add_cell(run_id, record, seq); store.add_samples(run_id, cell, rows)
    store.finish_run(info)
    with store.replace_run(run_id) as w: ...            # re-import: the run's rows replaced at once
    store.runs(lab="sim-2007", outcome="failed")        # query helpers: the same SQL on both
    store.sql("SELECT cell, avg(value) FROM cell_figures WHERE figure = 'boot_time_s mean' GROUP BY cell")

The helpers in :class:`SqlQueries` are written once, in SQL both databases run, over ``sql()``;
a backend only implements how rows get in and how a query is executed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from labctl.errors import BadInputError, LabctlError
from labctl.records.figures import CellFigures, Direction, Figure, RunFigures
from labctl.records.run_kind import run_kind
from labctl.records.run_record import CellRecord, Outcome, RunInfo
from labctl.store.rows import SampleRow

FAULT_OUTCOMES = ("no_data", "lab_fault", "error", "interrupted")  # a cell that says nothing of the product


class StoreError(LabctlError):
    """The store could not be read or written; the message names the store and the fix."""


class StoreQueryError(BadInputError):
    """A query the store refused (a typo, or a write, in `labctl runs sql`): the database's words."""


@dataclass(frozen=True)
class SqlResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]


class RunRow(BaseModel):
    """A run as ``labctl runs`` lists it."""

    run_id: str
    lab: str
    plan: str
    configuration: str | None = None
    outcome: str
    reason: str | None = None
    started_utc: datetime
    ended_utc: datetime | None = None
    duration_s: float | None = None
    cells: int | None = None
    simulated: bool | None = None
    host: str | None = None
    git_commit: str | None = None
    labctl_version: str | None = None
    folder: str | None = None
    profile: str | None = None
    params_key: str | None = None


class CellRow(BaseModel):
    """A cell as ``labctl runs show`` lists it."""

    run_id: str
    cell: str
    seq: int
    plan: str
    scenario: str
    configuration: str | None = None
    outcome: str
    reason: str | None = None
    verdict_outcome: str | None = None
    clients: int
    never_booted: int
    window_s: float | None = None
    restore_ok: bool | None = None


class BaselineSet(BaseModel):
    """One ``labctl baseline set``: the runs a lab + plan of one kind (profile and plan parameters,
    :mod:`labctl.records.run_kind`) is compared against from then on."""

    set_id: str
    lab: str
    plan: str
    run_ids: list[str]
    profile: str | None = None
    params_key: str | None = None  # None: a set made before baselines had a kind (matches any run)
    parameters: dict[str, Any] = Field(default_factory=dict)
    set_utc: datetime
    set_by: str | None = None
    note: str | None = None


@runtime_checkable
class RunWriter(Protocol):
    """Writes one run's rows (inside :meth:`ResultsStore.replace_run`: all of them at once)."""

    def add_run(self, info: RunInfo, folder: str | None = None) -> None: ...

    def add_cell(self, run_id: str, record: CellRecord, seq: int) -> None: ...

    def add_samples(self, run_id: str, rows: Sequence[SampleRow]) -> int: ...


@runtime_checkable
class ResultsStore(RunWriter, Protocol):
    """Runs, cells, verdicts, summaries, per-client outcomes, figures and samples, queryable with SQL."""

    url: str

    def replace_samples(self, run_id: str, cell: str, batches: Iterable[Sequence[SampleRow]]) -> int: ...

    def finish_run(self, info: RunInfo, folder: str | None = None) -> None: ...

    def replace_run(self, run_id: str) -> AbstractContextManager[RunWriter]: ...

    def delete_run(self, run_id: str) -> bool: ...

    def add_baseline(self, baseline: BaselineSet) -> None: ...

    def sql(self, query: str, params: Sequence[Any] = ()) -> SqlResult: ...

    # query helpers (SqlQueries)
    def runs(
        self,
        *,
        lab: str | None = None,
        plan: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        profile: str | None = None,
    ) -> list[RunRow]: ...

    def run(self, run_id: str) -> RunRow | None: ...

    def cells(self, run_id: str) -> list[CellRow]: ...

    def figures(self, run_id: str) -> RunFigures | None: ...

    def figure_history(
        self, lab: str, plan: str, *, before: datetime, runs: int, params_key: str | None = None
    ) -> list[tuple[str, dict[str, dict[str, float]]]]: ...

    def baseline(self, lab: str, plan: str, params_key: str | None = None) -> BaselineSet | None: ...

    def current_baselines(self, lab: str, plan: str) -> list[BaselineSet]: ...

    def baseline_history(self, lab: str | None = None, plan: str | None = None) -> list[BaselineSet]: ...

    def labs(self) -> list[str]: ...

    def close(self) -> None: ...


_RUN_COLUMNS = ", ".join(RunRow.model_fields)


def _where(conditions: Sequence[tuple[str, Any]]) -> tuple[str, list[Any]]:
    """`` WHERE a = ? AND ...`` of the conditions whose value is given, and those values."""
    given = [(cond, value) for cond, value in conditions if value is not None]
    if not given:
        return "", []
    return " WHERE " + " AND ".join(c for c, _ in given), [v for _, v in given]


_CELL_COLUMNS = ", ".join(CellRow.model_fields)


class SqlQueries:
    """The query helpers, in SQL that DuckDB and PostgreSQL both run (``?`` placeholders)."""

    def sql(self, query: str, params: Sequence[Any] = ()) -> SqlResult:
        raise NotImplementedError

    def runs(
        self,
        *,
        lab: str | None = None,
        plan: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        profile: str | None = None,
    ) -> list[RunRow]:
        """Runs, newest first, filtered by lab, plan, profile, outcome and start (``since`` <=
        start < ``until``)."""
        where, params = _where(
            [
                ("lab = ?", lab),
                ("plan = ?", plan),
                ("profile = ?", profile),
                ("outcome = ?", outcome),
                ("started_utc >= ?", since),
                ("started_utc < ?", until),
            ]
        )
        query = f"SELECT {_RUN_COLUMNS} FROM runs{where} ORDER BY started_utc DESC, run_id DESC"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        return [RunRow(**d) for d in self.sql(query, params).dicts()]

    def run(self, run_id: str) -> RunRow | None:
        rows = self.sql(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id]).dicts()
        return RunRow(**rows[0]) if rows else None

    def labs(self) -> list[str]:
        """The labs the store has runs of."""
        return [str(r[0]) for r in self.sql("SELECT DISTINCT lab FROM runs ORDER BY lab").rows]

    def cells(self, run_id: str) -> list[CellRow]:
        query = f"SELECT {_CELL_COLUMNS} FROM cells WHERE run_id = ? ORDER BY seq, cell"
        return [CellRow(**d) for d in self.sql(query, [run_id]).dicts()]

    def figures(self, run_id: str) -> RunFigures | None:
        """A stored run's cells and key figures, as :func:`labctl.records.figures.run_figures`
        makes them from a run folder."""
        run = self.run(run_id)
        if run is None:
            return None
        cells: dict[str, CellFigures] = {}
        for c in self.cells(run_id):
            cells[c.cell] = CellFigures(
                cell=c.cell,
                plan=c.plan,
                scenario=c.scenario,
                configuration=c.configuration,
                outcome=Outcome(c.outcome),
                reason=c.reason or "",
                verdict_outcome=Outcome(c.verdict_outcome) if c.verdict_outcome else None,
            )
        query = (
            "SELECT cell, figure, kind, statistic, source, entity, unit, direction, value, n, coverage "
            "FROM cell_figures WHERE run_id = ? ORDER BY cell, figure"
        )
        for d in self.sql(query, [run_id]).dicts():
            cell = cells.get(d.pop("cell"))
            if cell is None:
                continue
            key = d.pop("figure")
            cell.figures[key] = Figure(
                key=key, **{**d, "unit": d["unit"] or "", "direction": Direction(d["direction"])}
            )
        found = self.sql("SELECT parameters_json FROM runs WHERE run_id = ?", [run_id]).rows
        try:
            parameters = json.loads(found[0][0]) if found and found[0][0] else {}
        except ValueError:
            parameters = {}
        return RunFigures(
            run_id=run.run_id,
            lab=run.lab,
            plan=run.plan,
            configuration=run.configuration,
            started_utc=run.started_utc.isoformat(timespec="milliseconds") + "Z",
            outcome=run.outcome,
            kind=run_kind(parameters if isinstance(parameters, dict) else {}),
            cells=cells,
        )

    def figure_history(
        self, lab: str, plan: str, *, before: datetime, runs: int, params_key: str | None = None
    ) -> list[tuple[str, dict[str, dict[str, float]]]]:
        """The key figures of the last ``runs`` finished runs of ``lab`` + ``plan`` (of the kind
        ``params_key`` when given: a quick run's noise is not a full run's) that started before
        ``before``, oldest first: ``[(run_id, {cell: {figure: value}})]``. Cells that were a lab
        fault (no_data, lab_fault, error, interrupted) are left out: they measured the lab."""
        faults = ", ".join(f"'{o}'" for o in FAULT_OUTCOMES)
        same_kind = " AND params_key = ?" if params_key else ""
        query = (
            "SELECT f.run_id, f.cell, f.figure, f.value FROM cell_figures f "
            "JOIN cells c ON c.run_id = f.run_id AND c.cell = f.cell "
            "JOIN (SELECT run_id, started_utc FROM runs WHERE lab = ? AND plan = ? AND started_utc < ? "
            f"      AND outcome <> 'running'{same_kind} ORDER BY started_utc DESC, run_id DESC LIMIT ?) r "
            "  ON r.run_id = f.run_id "
            f"WHERE c.outcome NOT IN ({faults}) "
            "ORDER BY r.started_utc, f.run_id, f.cell, f.figure"
        )
        params: list[Any] = [lab, plan, before, *([params_key] if params_key else []), int(runs)]
        out: dict[str, dict[str, dict[str, float]]] = {}
        for run_id, cell, figure, value in self.sql(query, params).rows:
            out.setdefault(run_id, {}).setdefault(cell, {})[figure] = float(value)
        return list(out.items())

    def baseline_history(self, lab: str | None = None, plan: str | None = None) -> list[BaselineSet]:
        """Every baseline set (of ``lab`` / ``plan`` when given), oldest first."""
        where, params = _where([("lab = ?", lab), ("plan = ?", plan)])
        query = (
            "SELECT set_id, lab, plan, run_id, set_utc, set_by, note, profile, params_key, parameters_json "
            f"FROM baselines{where} ORDER BY set_utc, set_id, position"
        )
        sets: dict[str, BaselineSet] = {}
        for d in self.sql(query, params).dicts():
            run_id = d.pop("run_id")
            try:
                d["parameters"] = json.loads(d.pop("parameters_json") or "{}")
            except ValueError:
                d["parameters"] = {}
            s = sets.setdefault(d["set_id"], BaselineSet(run_ids=[], **d))
            s.run_ids.append(run_id)
        return list(sets.values())

    def current_baselines(self, lab: str, plan: str) -> list[BaselineSet]:
        """The newest baseline set of each kind (profile and parameters) of ``lab`` + ``plan``."""
        newest: dict[str | None, BaselineSet] = {}
        for b in self.baseline_history(lab, plan):
            newest.pop(b.params_key, None)
            newest[b.params_key] = b
        return list(newest.values())

    def baseline(self, lab: str, plan: str, params_key: str | None = None) -> BaselineSet | None:
        """The baseline of ``lab`` + ``plan`` for runs of the kind ``params_key``: the newest set of
        that kind, else the newest set made before sets had a kind; None when there is neither.
        Without ``params_key``: the newest set of any kind."""
        history = self.baseline_history(lab, plan)
        if params_key is None:
            return history[-1] if history else None
        same = [b for b in history if b.params_key == params_key]
        legacy = [b for b in history if b.params_key is None]
        chosen = same or legacy
        return chosen[-1] if chosen else None


def baseline_rows(b: BaselineSet) -> list[dict[str, Any]]:
    return [
        {
            "set_id": b.set_id,
            "lab": b.lab,
            "plan": b.plan,
            "run_id": run_id,
            "position": i,
            "set_utc": b.set_utc,
            "set_by": b.set_by,
            "note": b.note,
            "profile": b.profile,
            "params_key": b.params_key,
            "parameters_json": json.dumps(b.parameters, sort_keys=True, default=str),
        }
        for i, run_id in enumerate(b.run_ids)
    ]
