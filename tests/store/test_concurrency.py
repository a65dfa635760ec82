"""Concurrent writers never corrupt the store: two runs written at once by their sinks, one of them
imported again meanwhile by `labctl runs import`, and a reader querying all along (the embedded
store by construction: each run writes its own files by atomic renames; PostgreSQL by transactions)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest

from labctl.store import open_store
from labctl.store.folder import read_run_folder
from tests.store import writers
from tests.store.runs import make_run

CELLS = tuple(range(1, 13))  # twelve cells a run: many small writes that interleave
JOIN_TIMEOUT_S = 240
KEYS = {  # what makes a row unique, per table
    "runs": "run_id",
    "cells": "run_id, cell",
    "cell_parameters": "run_id, cell, name",
    "verdicts": "run_id, cell, criterion",
    "series_summaries": "run_id, cell, source, entity, metric",
    "client_outcomes": "run_id, cell, client",
    "group_actions": "run_id, cell, seq",
    "cell_figures": "run_id, cell, figure",
    "samples": "run_id, cell, source, entity, metric, ts_s",
}


def _start(target: Callable[..., None], *args: str | int) -> multiprocessing.process.BaseProcess:
    p = multiprocessing.get_context("spawn").Process(
        target=target, args=args
    )  # no DuckDB state shared by fork
    p.start()
    return p


def _join(procs: list[multiprocessing.process.BaseProcess]) -> None:
    for p in procs:
        p.join(JOIN_TIMEOUT_S)
        if p.is_alive():
            p.kill()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["duckdb", "postgresql"])
def test_two_runs_and_an_import_at_once_leave_every_run_whole(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"duckdb:{tmp_path / 'store'}" if backend == "duckdb" else request.getfixturevalue("pg_dsn")
    a = make_run(tmp_path / "results", seed=11, group_sizes=CELLS)
    b = make_run(tmp_path / "results", seed=12, night=1, group_sizes=CELLS)
    stop, err = tmp_path / "stop", tmp_path / "err"
    err.mkdir()
    reader = _start(writers.read_while, url, str(stop), str(err / "reader"))
    writers_ = [
        _start(writers.sink_run, url, str(a), str(err / "sink-a")),
        _start(writers.sink_run, url, str(b), str(err / "sink-b")),
        _start(writers.import_again, url, str(a), 3, str(err / "import-a")),
    ]
    try:
        _join(writers_)
    finally:
        stop.write_text("done")
        _join([reader])
    failures = {f.name: f.read_text() for f in err.iterdir()}
    assert not failures, failures
    assert [p.exitcode for p in [*writers_, reader]] == [0, 0, 0, 0]

    store = open_store(url)
    try:
        for folder in (a, b):
            data = read_run_folder(folder)
            run_id = data.info.run_id
            assert store.figures(run_id) == data.figures()
            assert store.run(run_id).outcome == data.info.outcome.value  # type: ignore[union-attr]
            n = store.sql("SELECT count(*) FROM samples WHERE run_id = ?", [run_id]).rows[0][0]
            assert n == sum(len(s) for s in data.series())
        for table, key in KEYS.items():
            doubled = store.sql(
                f"SELECT {key}, count(*) FROM {table} GROUP BY {key} HAVING count(*) > 1"
            ).rows
            assert doubled == [], table
    finally:
        store.close()
    if backend == "duckdb":  # nothing left half-written, every run folder compacted to one file a table
        assert not list((tmp_path / "store").rglob("*.tmp"))
        for run_dir in (tmp_path / "store" / "runs").iterdir():
            assert sorted(p.name for p in run_dir.rglob("*.parquet")) == ["_run.parquet"] * len(KEYS)
