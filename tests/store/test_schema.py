"""The schema is written down once (schema.sql), every column with its meaning, and both backends
and the row builders follow it exactly."""

from __future__ import annotations

from pathlib import Path

import duckdb

from labctl.store import schema
from labctl.store.folder import read_run_folder
from labctl.store.rows import cell_rows, run_row
from tests.store.runs import make_run


def test_every_column_has_a_meaning_and_a_portable_type() -> None:
    portable = {"TEXT", "INTEGER", "DOUBLE PRECISION", "BOOLEAN", "TIMESTAMP"}
    assert set(schema.tables()) == {*schema.RUN_TABLES, "baselines"}
    assert {"runs", "cells", "verdicts", "client_outcomes", "series_summaries", "samples"} <= set(
        schema.RUN_TABLES
    )
    for t in schema.tables().values():
        for c in t.columns:
            assert c.sql_type in portable, (t.name, c.name, c.sql_type)
            assert c.meaning, f"{t.name}.{c.name} has no comment saying what it means"


def test_the_parsed_schema_is_what_duckdb_creates() -> None:
    con = duckdb.connect(":memory:")
    for stmt in schema.statements():
        con.execute(stmt)
    for t in schema.tables().values():
        cols = con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [t.name],
        ).fetchall()
        assert tuple(c for (c,) in cols) == t.names


def test_row_builders_fill_exactly_the_columns(tmp_path: Path) -> None:
    data = read_run_folder(make_run(tmp_path, seed=1, group_sizes=(5,)))
    assert set(run_row(data.info)) == set(schema.table("runs").names)
    (record,) = data.records.values()
    rows = cell_rows(data.info.run_id, record, 0)
    assert set(rows) == set(schema.CELL_TABLES)
    for table, table_rows in rows.items():
        assert table_rows, table
        for r in table_rows:
            assert set(r) == set(schema.table(table).names), table
