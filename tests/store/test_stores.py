"""The results store's behaviour, on both backends (the ``store`` fixture runs each test twice: the
embedded DuckDB-over-Parquet store and a real PostgreSQL server)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from labctl.errors import BadInputError
from labctl.records.run_record import Outcome, RunOutcome
from labctl.store import BaselineSet, ResultsStore, StoreError, StoreSink, import_run, open_store
from labctl.store.folder import read_run_folder
from labctl.store.schema import RUN_TABLES
from tests.store.runs import cell_id, make_run


def counts(store: ResultsStore, run_id: str) -> dict[str, int]:
    return {
        t: store.sql(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).rows[0][0] for t in RUN_TABLES
    }


def test_import_holds_the_whole_record_and_reads_back_the_same_figures(
    store: ResultsStore, tmp_path: Path
) -> None:
    folder = make_run(tmp_path, seed=1)
    data = read_run_folder(folder)
    got = import_run(store, folder)
    assert got.cells == 5 and got.samples == 5 * 5 * 24 and not got.skipped
    run = store.run(got.run_id)
    assert run is not None and run.lab == "sim-2007" and run.outcome == data.info.outcome.value
    assert run.folder is not None and run.folder.endswith(str(folder.resolve()))
    assert [c.cell for c in store.cells(got.run_id)] == [cell_id(n) for n in (1, 5, 25, 50, 100)]
    # per-client outcomes, verdicts per criterion, series summaries, parameters: all there
    n = counts(store, got.run_id)
    assert n["client_outcomes"] == 1 + 5 + 25 + 50 + 100
    assert n["verdicts"] == 5 * 3 and n["series_summaries"] == 5 * 5 and n["cell_parameters"] == 5 * 2
    boot = store.sql(
        "SELECT boot_time_s FROM client_outcomes WHERE run_id = ? AND cell = ? AND client = 'optiplex-007'",
        [got.run_id, cell_id(25)],
    ).rows[0][0]
    assert boot == data.records[cell_id(25)].summary.clients["optiplex-007"].boot_time_s
    assert store.figures(got.run_id) == data.figures()


def test_reimport_is_idempotent_and_takes_what_the_folder_holds_now(
    store: ResultsStore, tmp_path: Path
) -> None:
    folder = make_run(tmp_path, seed=2)
    run_id = import_run(store, folder).run_id
    before = counts(store, run_id)
    import_run(store, folder)
    assert counts(store, run_id) == before
    # the folder is the source of truth: edit it, import again, the store follows
    f = folder / "cells" / cell_id(5) / "summary.json"
    summary = json.loads(f.read_text())
    summary["clients"]["optiplex-002"]["boot_time_s"] = 99.5
    f.write_text(json.dumps(summary))
    import_run(store, folder)
    assert counts(store, run_id) == before
    assert store.sql(
        "SELECT boot_time_s FROM client_outcomes WHERE run_id = ? AND client = 'optiplex-002' AND cell = ?",
        [run_id, cell_id(5)],
    ).rows == [(99.5,)]


def test_runs_are_filtered_by_lab_plan_outcome_and_date(store: ResultsStore, tmp_path: Path) -> None:
    a = import_run(store, make_run(tmp_path, seed=1, night=0)).run_id
    b = import_run(store, make_run(tmp_path, seed=2, night=2, faults={cell_id(50): "never_booted"})).run_id
    c = import_run(store, make_run(tmp_path, seed=3, night=4, lab="lab-b")).run_id
    assert [r.run_id for r in store.runs()] == [c, b, a]
    assert [r.run_id for r in store.runs(lab="sim-2007")] == [b, a]
    assert [r.run_id for r in store.runs(outcome="lab_fault")] == [b]
    assert [r.run_id for r in store.runs(since=datetime(2026, 11, 19), until=datetime(2026, 11, 21))] == [b]
    assert [r.run_id for r in store.runs(limit=1)] == [c]
    assert store.runs(plan="copy_reboot") == []
    assert store.run("20990101-000000-nothing-0000") is None


def test_baselines_are_sets_with_a_history(store: ResultsStore, tmp_path: Path) -> None:
    assert store.baseline("sim-2007", "boot_storm") is None
    first = BaselineSet(
        set_id="20261120-010000-aaaa",
        lab="sim-2007",
        plan="boot_storm",
        run_ids=["r1", "r2"],
        set_utc=datetime(2026, 11, 20, 1),
        set_by="ci@host",
        note="first week",
    )
    second = first.model_copy(
        update={"set_id": "20261127-010000-bbbb", "run_ids": ["r3"], "set_utc": datetime(2026, 11, 27, 1)}
    )
    other = first.model_copy(update={"set_id": "20261121-010000-cccc", "lab": "lab-b", "run_ids": ["x"]})
    for b in (first, second, other):
        store.add_baseline(b)
    store.add_baseline(second)  # loaded again: replaced, not doubled
    assert store.baseline("sim-2007", "boot_storm") == second
    assert store.baseline_history("sim-2007", "boot_storm") == [first, second]
    assert [b.set_id for b in store.baseline_history()] == [first.set_id, other.set_id, second.set_id]


def test_figure_history_leaves_out_lab_faults_and_later_runs(store: ResultsStore, tmp_path: Path) -> None:
    ids = [import_run(store, make_run(tmp_path, seed=s, night=s)).run_id for s in range(1, 5)]
    faulty = import_run(
        store, make_run(tmp_path, seed=9, night=5, faults={cell_id(50): "never_booted"})
    ).run_id
    later = store.run(ids[-1])
    assert later is not None
    hist = store.figure_history("sim-2007", "boot_storm", before=datetime(2027, 1, 1), runs=3)
    assert [rid for rid, _ in hist] == [ids[2], ids[3], faulty]  # the last three, oldest first
    assert cell_id(50) not in dict(hist)[faulty] and cell_id(25) in dict(hist)[faulty]
    assert "boot_time_s mean" in dict(hist)[ids[2]][cell_id(25)]
    early = store.figure_history("sim-2007", "boot_storm", before=later.started_utc, runs=30)
    assert [rid for rid, _ in early] == ids[:3]


def test_the_sink_writes_cell_by_cell_and_ends_like_an_import(store: ResultsStore, tmp_path: Path) -> None:
    folder = make_run(tmp_path, seed=4)
    data = read_run_folder(folder)
    running = data.info.model_copy(update={"outcome": RunOutcome.RUNNING, "ended": None, "duration_s": None})
    sink = StoreSink(store, running, folder, batch_rows=50)
    records = list(data.records.values())
    sink.cell_finished(records[0])
    run = store.run(data.info.run_id)
    assert run is not None and run.outcome == "running"
    assert [c.cell for c in store.cells(data.info.run_id)] == [records[0].cell]
    for r in records[1:]:
        sink.cell_finished(r)
    sink.run_finished(data.info)
    assert store.run(data.info.run_id).outcome == data.info.outcome.value  # type: ignore[union-attr]
    streamed = counts(store, data.info.run_id)
    streamed_figures = store.figures(data.info.run_id)
    # a cell written again (a retried sink call) replaces its rows, also after the run was compacted
    sink.cell_finished(records[2])
    assert counts(store, data.info.run_id) == streamed
    import_run(store, folder)
    assert counts(store, data.info.run_id) == streamed
    assert store.figures(data.info.run_id) == streamed_figures


def test_raw_sql_is_read_only_and_a_typo_is_bad_input(store: ResultsStore, tmp_path: Path) -> None:
    import_run(store, make_run(tmp_path, seed=1, group_sizes=(5,)))
    with pytest.raises(BadInputError):
        store.sql("SELEC 1")
    with pytest.raises(BadInputError):
        store.sql("SELECT no_such_column FROM runs")
    with pytest.raises(BadInputError, match=r"read-only|only queries"):  # PostgreSQL: a read-only transaction
        store.sql("DELETE FROM runs")
    with pytest.raises(BadInputError, match=r"read-only|only queries"):
        store.sql("SELECT 1; DROP TABLE runs")
    assert store.sql("SELECT count(*) FROM runs").rows == [(1,)]


def test_delete_run_removes_every_row(store: ResultsStore, tmp_path: Path) -> None:
    run_id = import_run(store, make_run(tmp_path, seed=1, group_sizes=(1, 5))).run_id
    assert store.delete_run(run_id) is True
    assert all(v == 0 for v in counts(store, run_id).values())
    assert store.delete_run(run_id) is False


def test_store_urls(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="PGPASSWORD"):
        open_store("postgresql://labctl:s3cret@db.example/labctl")
    try:
        open_store("postgresql://labctl:s3cret@db.example/labctl")
    except BadInputError as exc:
        assert "s3cret" not in str(exc)
    with pytest.raises(BadInputError, match="folder of Parquet files"):
        open_store(f"duckdb:{tmp_path}/store.duckdb")
    with pytest.raises(BadInputError, match="unknown kind"):
        open_store("mysql://db/labctl")
    store = open_store(f"duckdb:{tmp_path}/nothing-yet")
    assert store.runs() == [] and store.baseline("a", "b") is None  # an empty store reads as empty
    assert not (tmp_path / "nothing-yet").exists()  # and reading creates nothing


def test_cell_outcomes_survive_the_round_trip(store: ResultsStore, tmp_path: Path) -> None:
    folder = make_run(tmp_path, seed=6, faults={cell_id(25): "no_data", cell_id(50): "interrupted"})
    run_id = import_run(store, folder).run_id
    outcomes = {c.cell: c.outcome for c in store.cells(run_id)}
    assert outcomes[cell_id(25)] == Outcome.NO_DATA.value
    assert outcomes[cell_id(50)] == Outcome.INTERRUPTED.value
    cov = store.sql(
        "SELECT coverage, gaps FROM series_summaries WHERE run_id = ? AND cell = ? AND metric = 'disk_queue_len'",
        [run_id, cell_id(25)],
    ).rows[0]
    assert cov[0] < 0.6 and cov[1] == 1


def test_a_store_that_fails_mid_run_costs_the_run_nothing_and_gets_it_whole_at_the_end(
    tmp_path: Path,
) -> None:
    folder = make_run(tmp_path / "results", seed=7)
    data = read_run_folder(folder)
    root = tmp_path / "store"
    root.mkdir()
    (root / "runs").write_text("not a folder")  # every write of a run fails (the disk, the server ...)
    said: list[str] = []
    sink = StoreSink(open_store(f"duckdb:{root}"), data.info, folder, say=said.append)
    for record in data.records.values():
        sink.cell_finished(record)  # never raises into the runner
    assert sink.failed is not None and len(said) == 1 and "kept" in said[0]
    (root / "runs").unlink()  # the store is back when the run ends: the whole folder goes in
    sink.run_finished(data.info)
    assert [c.cell for c in sink.store.cells(data.info.run_id)] == list(data.records)
    assert "imported whole" in said[-1]


def test_a_store_that_stays_down_names_the_import_that_adds_the_run_later(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "results", seed=8, group_sizes=(5,))
    data = read_run_folder(folder)
    said: list[str] = []
    store = open_store("postgresql://nobody@127.0.0.1:9/none")  # nothing listens on port 9
    sink = StoreSink(store, data.info, folder, say=said.append)
    sink.cell_finished(next(iter(data.records.values())))
    with pytest.raises(StoreError, match=f"labctl runs import {data.info.run_id}"):
        sink.run_finished(data.info)
    assert len(said) == 2 and f"labctl runs import {data.info.run_id}" in said[-1]


def test_histories_and_trends_are_per_kind(store: ResultsStore, tmp_path: Path) -> None:
    from labctl.store.history import allure_history_from_store, night_history

    quick = [make_run(tmp_path, seed=s, night=s, profile="quick", group_sizes=(5,)) for s in (1, 2, 3)]
    full = [
        make_run(tmp_path, seed=s, night=s, profile="full", window_s=600, group_sizes=(5,)) for s in (4, 5)
    ]
    for f in quick + full:
        import_run(store, f)
    q_key = read_run_folder(quick[0]).figures().kind.key
    f_key = read_run_folder(full[0]).figures().kind.key
    assert q_key != f_key
    assert {r.params_key for r in store.runs(profile="quick")} == {q_key}
    later = datetime(2030, 1, 1)
    assert [rid for rid, _ in store.figure_history("sim-2007", "boot_storm", before=later, runs=30)] == [
        p.name for p in quick + full
    ]
    hist = store.figure_history("sim-2007", "boot_storm", before=later, runs=30, params_key=f_key)
    assert [rid for rid, _ in hist] == [p.name for p in full]
    nights = night_history(store, "sim-2007", "boot_storm", params_key=q_key)
    assert [f.run_id for f, _ in nights] == [p.name for p in quick]
    assert all(f.kind.profile == "quick" for f, _ in nights)
    lines = allure_history_from_store(
        store, "sim-2007", "boot_storm", params_key=f_key, out=tmp_path / "h.jsonl"
    )
    assert len(lines.read_text().splitlines()) == len(full)


def test_a_postgresql_store_made_before_the_new_columns_gets_them(pg_dsn: str, tmp_path: Path) -> None:
    import psycopg

    from labctl.store.postgres import PostgresStore
    from labctl.store.schema import statements

    with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as raw:  # yesterday's schema
        for stmt in statements():
            raw.execute(stmt.encode())
        for table, col in (("runs", "profile"), ("runs", "params_key"), ("baselines", "parameters_json")):
            raw.execute(f"ALTER TABLE {table} DROP COLUMN {col}".encode())
    store = PostgresStore(pg_dsn)
    try:
        run_id = import_run(store, make_run(tmp_path, seed=3, profile="quick", group_sizes=(5,))).run_id
        assert store.sql("SELECT profile FROM runs WHERE run_id = ?", [run_id]).rows == [("quick",)]
    finally:
        store.close()
