"""The team's results store: the same schema on PostgreSQL (psycopg 3).

    store = PostgresStore("postgresql://labctl@db.lab.example/labctl")

The password never goes in the URL (it would reach shell history, CI logs and error messages):
libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``. The schema is created on first use (under an
advisory lock, so two first users do not race). Every write is one transaction: a cell's rows are
replaced at once, a re-imported run's rows too; writers of the same run take turns on an advisory
lock keyed by the run id.

``sql()`` (what ``labctl runs sql`` runs) is read-only over the store's tables, by PostgreSQL's own
means first: one statement per call (the extended protocol refuses a second), a read-only
transaction, and the role :data:`READER_ROLE` (SELECT on the store's tables, nothing else; created
with the schema when the store's user may create roles) for the statement, so a superuser's store
user does not lend the query its file functions (``pg_read_file``, ``COPY ... FROM/TO``,
``lo_import``, ``pg_ls_dir``). A store user with such rights and no reader role is refused. The
few calls that could switch the role back inside one statement (``set_config``) or run SQL text
given as a string (``query_to_xml``, ``ts_stat``, ``dblink``), and the file functions, are refused
before the query is sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql as pgsql

from labctl.records.run_record import CellRecord, RunInfo
from labctl.store.base import BaselineSet, SqlQueries, SqlResult, StoreError, StoreQueryError, baseline_rows
from labctl.store.rows import Row, SampleRow, cell_rows, columns, run_row
from labctl.store.schema import CELL_TABLES, RUN_TABLES, statements, tables
from labctl.store.urls import check_no_password

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 120_000  # no query of the store takes longer; a hung server gives an error
_SCHEMA_LOCK = 0x6C616263  # advisory lock key while creating the schema ("labc")
READER_ROLE = "labctl_store_reader"  # SELECT on the store's tables only: what `runs sql` runs as
_FILE_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
# calls refused in a query: file and large-object functions, other databases, and what could undo
# the reader role inside one statement (set_config) or run SQL given as text
_REFUSED_CALLS = re.compile(
    r"\b(pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|pg_file_\w+|lo_\w+|loread|lowrite"
    r"|dblink\w*|postgres_fdw\w*|set_config|query_to_xml\w*|cursor_to_xml\w*|query_to_xmlschema|ts_stat"
    r"|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile)\s*\(",
    re.I,
)
_QUERY_START = re.compile(r"^[\s(]*(select|with|values|table|explain)\b", re.I)
_EXPLAIN_ANALYZE = re.compile(r"^[\s(]*explain\s*\(?\s*analy[sz]e", re.I)
_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*", re.S)


def check_query(query: str, url: str) -> None:
    """StoreQueryError unless ``query`` is one query that calls nothing refused (see the module)."""
    text = _COMMENTS.sub(" ", query).replace('"', "")
    why = None
    if re.search(r"\bU&", text, re.I):
        why = "Unicode-escaped names or strings (U&) are not accepted here"
    elif not _QUERY_START.match(text) or _EXPLAIN_ANALYZE.match(text):
        why = "only queries (SELECT, WITH, VALUES, TABLE, EXPLAIN) run here"
    elif m := _REFUSED_CALLS.search(text):
        why = f"{m.group(1)}() is not allowed in a query of the store (files, roles and SQL as text are out of reach)"
    if why:
        raise StoreQueryError(
            f"{url}: {why}; the store is written by labctl runs import and the runs themselves"
        )


def check_url(url: str) -> str:
    """``url`` unless it carries a password (refused: it would be printed and logged)."""
    return check_no_password(url)


def _placeholders(query: str) -> str:
    """The helpers' ``?`` placeholders as psycopg's ``%s`` (their SQL has no literal ? or %)."""
    return query.replace("%", "%%").replace("?", "%s")


class PostgresStore(SqlQueries):
    """PostgreSQL 15 (or newer) through psycopg 3; one connection, opened on first use."""

    def __init__(self, url: str):
        self.url = check_url(url)
        self._conn: psycopg.Connection[Any] | None = None
        self._reader: str | None = None  # the role queries run as (None: the store user's own)

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
                f"{self.url}: cannot connect: {str(exc).strip().splitlines()[0].strip()} "
                "(is the server up, and the user allowed? password: PGPASSWORD or ~/.pgpass)"
            ) from exc
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
                for stmt in statements():
                    cur.execute(stmt.encode())
                _add_new_columns(cur)
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"{self.url}: cannot create the schema: {str(exc).splitlines()[0]}") from exc
        try:
            self._reader = _reader_role(conn)
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"{self.url}: cannot check the store user's rights: {exc}") from exc
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
        """Run one query, read-only over the store's tables (see the module docstring; ``?``
        placeholders, as on the embedded store)."""
        check_query(query, self.url)
        conn = self._connect()
        if self._reader is None and _privileged(conn):
            raise StoreError(
                f"{self.url}: the store user may read server files (superuser or a pg_*_server_* role) and "
                f"there is no role {READER_ROLE} to query as: connect as a plain user, or let a user "
                f"with CREATEROLE open the store once (labctl runs) so the role is made"
            )
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
                if self._reader is not None:
                    cur.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(self._reader)))
                # prepared: the extended protocol runs exactly one statement
                text = _placeholders(query) if params else query.replace("%", "%%")
                cur.execute(text.encode(), list(params), prepare=True)
                names = [d.name for d in cur.description or []]
                return SqlResult(names, [tuple(r) for r in cur.fetchall()] if cur.description else [])
        except psycopg.Error as exc:
            line = f"{self.url}: {str(exc).strip().splitlines()[0]}"
            if "multiple commands" in line:
                line = (
                    f"{self.url}: one statement at a time, and only queries (SELECT, WITH, EXPLAIN) run here"
                )
            # SQLSTATE class 42: syntax or a name that does not exist; 25006: a write in a read-only transaction
            if exc.sqlstate and (exc.sqlstate.startswith("42") or exc.sqlstate == "25006"):
                raise StoreQueryError(line) from exc
            raise StoreError(line) from exc


def _add_new_columns(cur: psycopg.Cursor[Any]) -> None:
    """Columns added to ``schema.sql`` after a store was made (all nullable: old rows read NULL)."""
    cur.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
    )
    have = {(str(t), str(c)) for t, c in cur.fetchall()}
    for table in tables().values():
        for col in table.columns:
            if (table.name, col.name) not in have and col.nullable:
                cur.execute(
                    pgsql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} " + col.sql_type).format(
                        pgsql.Identifier(table.name), pgsql.Identifier(col.name)
                    )
                )


def _privileged(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection's user may read or write server files (superuser, or a file role)."""
    checks = " OR ".join(f"pg_has_role(current_user, '{r}', 'USAGE')" for r in _FILE_ROLES)
    with conn.transaction():
        row = conn.execute(
            f"SELECT rolsuper OR {checks} FROM pg_roles WHERE rolname = current_user".encode()
        ).fetchone()
    return bool(row and row[0])


def _reader_role(conn: psycopg.Connection[Any]) -> str | None:
    """:data:`READER_ROLE`, made (if the user may) with SELECT on the store's tables and granted
    to the store user; None when it cannot be made or used, or has rights of its own to files."""
    tables = pgsql.SQL(", ").join(pgsql.Identifier(t) for t in (*RUN_TABLES, "baselines"))
    role = pgsql.Identifier(READER_ROLE)
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone()
            if not exists:
                conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(role))
            conn.execute(pgsql.SQL("GRANT SELECT ON {} TO {}").format(tables, role))
            conn.execute(
                pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                    pgsql.Identifier(str(conn.execute("SELECT current_schema()").fetchone()[0])),  # type: ignore[index]
                    role,
                )
            )
            conn.execute(pgsql.SQL("GRANT {} TO CURRENT_USER").format(role))
    except psycopg.Error:  # not allowed to create or grant roles: queries run as the store user
        with conn.transaction():
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone():
                return None
    checks = " OR ".join(f"pg_has_role(%s, '{r}', 'USAGE')" for r in _FILE_ROLES)
    with conn.transaction():
        row = conn.execute(
            f"SELECT pg_has_role(current_user, %s, 'MEMBER'), NOT (rolsuper OR {checks}) "
            "FROM pg_roles WHERE rolname = %s".encode(),
            [READER_ROLE, *([READER_ROLE] * len(_FILE_ROLES)), READER_ROLE],
        ).fetchone()
    return READER_ROLE if row and row[0] and row[1] else None


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
