"""The team's results store: the same schema on PostgreSQL (psycopg 3).

    store = PostgresStore("postgresql://labctl@db.lab.example/labctl")

The password never goes in the URL (it would reach shell history, CI logs and error messages):
libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``. The schema is created on first use (under an
advisory lock, so two first users do not race). Every write is one transaction: a cell's rows are
replaced at once, a re-imported run's rows too; writers of the same run take turns on an advisory
lock keyed by the run id. Raw ``sql()`` runs in a read-only transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg

from labctl.errors import BadInputError
from labctl.records.run_record import CellRecord, RunInfo
from labctl.store.base import BaselineSet, SqlQueries, SqlResult, StoreError, StoreQueryError, baseline_rows
from labctl.store.rows import Row, SampleRow, cell_rows, columns, run_row
from labctl.store.schema import CELL_TABLES, RUN_TABLES, statements

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 120_000  # no query of the store takes longer; a hung server gives an error
_SCHEMA_LOCK = 0x6C616263  # advisory lock key while creating the schema ("labc")


def check_url(url: str) -> str:
    """``url`` unless it carries a password (refused: it would be printed and logged)."""
    parts = urlsplit(url)
    if parts.password:
        safe = url.replace(f":{parts.password}@", ":***@")
        raise BadInputError(
            f"store URL {safe} contains a password: remove it and set PGPASSWORD or a ~/.pgpass line instead"
        )
    return url


def _placeholders(query: str) -> str:
    """The helpers' ``?`` placeholders as psycopg's ``%s`` (their SQL has no literal ? or %)."""
    return query.replace("%", "%%").replace("?", "%s")


class PostgresStore(SqlQueries):
    """PostgreSQL 15 (or newer) through psycopg 3; one connection, opened on first use."""

    def __init__(self, url: str):
        self.url = check_url(url)
        self._conn: psycopg.Connection[Any] | None = None

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def _connect(self) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            conn = psycopg.connect(
                self.url,
                connect_timeout=CONNECT_TIMEOUT_S,
                options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
                application_name="labctl",
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"{self.url}: cannot connect: {str(exc).strip().splitlines()[-1]} "
                "(is the server up, and the user allowed? password: PGPASSWORD or ~/.pgpass)"
            ) from exc
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
                for stmt in statements():
                    cur.execute(stmt.encode())
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"{self.url}: cannot create the schema: {str(exc).splitlines()[0]}") from exc
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @contextmanager
    def _tx(self, run_id: str | None = None) -> Iterator[psycopg.Cursor[Any]]:
        conn = self._connect()
        try:
            with conn.transaction(), conn.cursor() as cur:
                if run_id is not None:  # writers of one run take turns
                    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [run_id])
                yield cur
        except psycopg.Error as exc:
            raise StoreError(f"{self.url}: {str(exc).strip().splitlines()[0]}") from exc

    # --- writing ------------------------------------------------------------------------------------

    def add_run(self, info: RunInfo, folder: str | None = None) -> None:
        with self._tx(info.run_id) as cur:
            _PgWriter(cur).add_run(info, folder)

    def add_cell(self, run_id: str, record: CellRecord, seq: int) -> None:
        with self._tx(run_id) as cur:
            _PgWriter(cur).add_cell(run_id, record, seq)

    def add_samples(self, run_id: str, rows: Sequence[SampleRow]) -> int:
        with self._tx() as cur:
            return _PgWriter(cur).add_samples(run_id, rows)

    def replace_samples(self, run_id: str, cell: str, batches: Iterable[Sequence[SampleRow]]) -> int:
        """The cell's samples become ``batches``, in one transaction."""
        total = 0
        with self._tx(run_id) as cur:
            cur.execute("DELETE FROM samples WHERE run_id = %s AND cell = %s", [run_id, cell])
            writer = _PgWriter(cur)
            for batch in batches:
                total += writer.add_samples(run_id, [(cell, *r[1:]) for r in batch])
        return total

    def finish_run(self, info: RunInfo, folder: str | None = None) -> None:
        self.add_run(info, folder)

    @contextmanager
    def replace_run(self, run_id: str) -> Iterator[_PgWriter]:
        """One transaction: the run's old rows deleted, the new ones written, committed together."""
        with self._tx(run_id) as cur:
            for t in RUN_TABLES:
                cur.execute(f"DELETE FROM {t} WHERE run_id = %s", [run_id])
            yield _PgWriter(cur, run_id)

    def delete_run(self, run_id: str) -> bool:
        with self._tx(run_id) as cur:
            cur.execute("DELETE FROM runs WHERE run_id = %s", [run_id])
            existed = cur.rowcount > 0
            for t in RUN_TABLES[1:]:
                cur.execute(f"DELETE FROM {t} WHERE run_id = %s", [run_id])
            return existed

    def add_baseline(self, baseline: BaselineSet) -> None:
        """Add a set; one already there (same set id, e.g. loaded again) is replaced, not doubled."""
        with self._tx() as cur:
            cur.execute("DELETE FROM baselines WHERE set_id = %s", [baseline.set_id])
            _insert(cur, "baselines", baseline_rows(baseline))

    # --- reading ------------------------------------------------------------------------------------

    def sql(self, query: str, params: Sequence[Any] = ()) -> SqlResult:
        """Run a query in a read-only transaction (``?`` placeholders, as on the embedded store)."""
        conn = self._connect()
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(_placeholders(query).encode() if params else query.encode(), list(params) or None)
                names = [d.name for d in cur.description or []]
                return SqlResult(names, [tuple(r) for r in cur.fetchall()] if cur.description else [])
        except psycopg.Error as exc:
            line = f"{self.url}: {str(exc).strip().splitlines()[0]}"
            # SQLSTATE class 42: syntax or a name that does not exist; 25006: a write in a read-only transaction
            if exc.sqlstate and (exc.sqlstate.startswith("42") or exc.sqlstate == "25006"):
                raise StoreQueryError(line) from exc
            raise StoreError(line) from exc


def _insert(cur: psycopg.Cursor[Any], table: str, rows: Sequence[Row]) -> None:
    if not rows:
        return
    cols = columns(table)
    marks = ", ".join(["%s"] * len(cols))
    cur.executemany(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})".encode(),
        [tuple(r[c] for c in cols) for r in rows],
    )


class _PgWriter:
    """Writes a run's rows with one cursor, inside the caller's transaction."""

    def __init__(self, cur: psycopg.Cursor[Any], run_id: str | None = None):
        self.cur = cur
        self.run_id = run_id

    def _own(self, run_id: str) -> None:
        if self.run_id is not None and run_id != self.run_id:
            raise ValueError(f"replacing run {self.run_id}, got rows of {run_id}")

    def add_run(self, info: RunInfo, folder: str | None = None) -> None:
        self._own(info.run_id)
        self.cur.execute("DELETE FROM runs WHERE run_id = %s", [info.run_id])
        _insert(self.cur, "runs", [run_row(info, folder)])

    def add_cell(self, run_id: str, record: CellRecord, seq: int) -> None:
        self._own(run_id)
        rows = cell_rows(run_id, record, seq)
        for t in CELL_TABLES:
            self.cur.execute(
                f"DELETE FROM {t} WHERE run_id = %s AND cell = %s".encode(), [run_id, record.cell]
            )
            _insert(self.cur, t, rows[t])

    def add_samples(self, run_id: str, rows: Sequence[SampleRow]) -> int:
        self._own(run_id)
        cols = ", ".join(columns("samples"))
        with self.cur.copy(f"COPY samples ({cols}) FROM STDIN".encode()) as copy:
            for r in rows:
                copy.write_row((run_id, *r))
        return len(rows)
