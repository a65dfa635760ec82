"""Both stores give the same answers to the same queries: the embedded store (DuckDB over Parquet)
and PostgreSQL hold the same rows and answer the query helpers and plain SQL alike."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from labctl.store import BaselineSet, ResultsStore, StoreSink, import_run
from labctl.store.folder import read_run_folder
from labctl.store.postgres import PostgresStore
from labctl.store.schema import tables
from tests.store.runs import cell_id, make_run

# SQL both databases run; every answer is ordered so the comparison is exact
QUERIES = [
    "SELECT run_id, lab, plan, outcome, started_utc, cells FROM runs ORDER BY started_utc",
    "SELECT outcome, count(*) FROM cells GROUP BY outcome ORDER BY outcome",
    "SELECT c.run_id, c.cell, p.value_num FROM cells c JOIN cell_parameters p ON p.run_id = c.run_id "
    "AND p.cell = c.cell AND p.name = 'group_size' ORDER BY c.run_id, c.cell",
    "SELECT cell, count(*), min(boot_time_s), max(boot_time_s), sum(retries) FROM client_outcomes "
    "GROUP BY cell ORDER BY cell",
    "SELECT run_id, cell, client FROM client_outcomes WHERE boot_time_s IS NULL ORDER BY run_id, cell, client",
    "SELECT criterion, outcome, count(*) FROM verdicts GROUP BY criterion, outcome ORDER BY criterion, outcome",
    "SELECT run_id, cell, metric, peak, mean, coverage, gaps FROM series_summaries "
    "WHERE metric IN ('cpu_pct', 'disk_queue_len') ORDER BY run_id, cell, metric",
    "SELECT f.cell, avg(f.value), max(f.value) FROM cell_figures f JOIN runs r ON r.run_id = f.run_id "
    "WHERE f.figure = 'boot_time_s mean' AND r.lab = 'sim-2007' GROUP BY f.cell ORDER BY f.cell",
    "SELECT direction, count(*) FROM cell_figures GROUP BY direction ORDER BY direction",
    "SELECT run_id, cell, metric, count(*), min(ts_s), max(value) FROM samples "
    "GROUP BY run_id, cell, metric ORDER BY run_id, cell, metric",
    "SELECT action, backend, sum(machines), max(delivery_spread_s) FROM group_actions GROUP BY action, backend "
    "ORDER BY action, backend",
    "SELECT lab, plan, set_id, run_id, position FROM baselines ORDER BY set_utc, position",
]
UNSTABLE = {"stored_utc"}  # when each store wrote the row


def _norm(v: Any) -> Any:
    """Floats to 12 significant digits: the two databases may add a column's values in another order."""
    if isinstance(v, float):
        return float(f"{v:.12g}") if math.isfinite(v) else v
    return v


def _rows(store: ResultsStore, query: str) -> list[tuple[Any, ...]]:
    return [tuple(_norm(v) for v in r) for r in store.sql(query).rows]


def _fill(store: ResultsStore, runs: list[Path]) -> None:
    for i, folder in enumerate(runs):
        if i == 1:  # one run the way a running run writes it, the others imported
            data = read_run_folder(folder)
            sink = StoreSink(store, data.info, folder, batch_rows=100)
            for record in data.records.values():
                sink.cell_finished(record)
            sink.run_finished(data.info)
        else:
            import_run(store, folder)
    store.add_baseline(
        BaselineSet(
            set_id="20261122-000000-abcd",
            lab="sim-2007",
            plan="boot_storm",
            run_ids=[read_run_folder(runs[0]).info.run_id, read_run_folder(runs[1]).info.run_id],
            set_utc=datetime(2026, 11, 22),
            set_by="ci@host",
        )
    )


def test_both_stores_hold_the_same_rows_and_answer_alike(
    tmp_path: Path, duck_store: ResultsStore, pg_store: PostgresStore
) -> None:
    runs = [
        make_run(tmp_path / "results", seed=1, night=0),
        make_run(tmp_path / "results", seed=2, night=1),
        make_run(tmp_path / "results", seed=3, night=2, write_cache_spindles=2),
        make_run(
            tmp_path / "results",
            seed=4,
            night=3,
            faults={cell_id(50): "never_booted", cell_id(25): "no_data"},
        ),
        make_run(tmp_path / "results", seed=5, night=4, lab="lab-b", group_sizes=(1, 5)),
    ]
    for store in (duck_store, pg_store):
        _fill(store, runs)

    # every table, row for row (all columns but the time the store wrote the row)
    for name, table in tables().items():
        cols = [c for c in table.names if c not in UNSTABLE]
        order = ", ".join(cols)
        query = f"SELECT {order} FROM {name} ORDER BY {order}"
        assert _rows(duck_store, query) == _rows(pg_store, query), name
        assert _rows(duck_store, f"SELECT count(*) FROM {name}")[0][0] > 0, name

    for query in QUERIES:
        assert _rows(duck_store, query) == _rows(pg_store, query), query

    # the helpers the CLI and the comparison use
    ids = [r.run_id for r in duck_store.runs()]
    assert ids == [r.run_id for r in pg_store.runs()] and len(ids) == 5
    for kw in ({"lab": "sim-2007"}, {"outcome": "lab_fault"}, {"since": datetime(2026, 11, 19), "limit": 2}):
        assert duck_store.runs(**kw) == pg_store.runs(**kw), kw  # type: ignore[arg-type]
    for run_id in ids:
        assert duck_store.run(run_id) == pg_store.run(run_id)
        assert duck_store.cells(run_id) == pg_store.cells(run_id)
        assert duck_store.figures(run_id) == pg_store.figures(run_id)
    before = datetime(2027, 1, 1)
    assert duck_store.figure_history(
        "sim-2007", "boot_storm", before=before, runs=3
    ) == pg_store.figure_history("sim-2007", "boot_storm", before=before, runs=3)
    assert duck_store.baseline("sim-2007", "boot_storm") == pg_store.baseline("sim-2007", "boot_storm")
    assert duck_store.baseline_history() == pg_store.baseline_history()
