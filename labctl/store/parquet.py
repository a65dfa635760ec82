"""The embedded results store: Parquet files under ``results/store/``, queried with DuckDB.

Layout (every table as in ``schema.sql``)::

    results/store/
      runs/<run-id>/<table>/<part>.parquet   one run's rows; <part> is the cell id while the run
                                             is being written, `_run` once it is finished/imported
                      samples/<cell>~<n>.parquet    a batch of samples
      baselines/<set-id>.parquet             one `labctl baseline set`
      locks/<run-id>.lock                    serialises writers of ONE run (fcntl)
      tmp/                                   files and folders being written (same file system)

Why files and not one DuckDB database file: a DuckDB file admits one writing process at a time,
so two runs writing at once would wait on each other's lock (or fail), and a reader would block
the nightly's writes. Here every run writes only its own folder, each file appears by an atomic
rename of a complete temporary file, and a run's folder is swapped whole when it is compacted or
re-imported: two runs never touch the same file, a killed writer leaves at most a temporary file
nobody reads, readers never block writers, and any Parquet reader (DuckDB, pandas, Polars, Spark)
reads the store without labctl. The price is a file listing per query and no indexes, which is
cheap at nightly scale (a finished run is one file per table).

Queries run in an in-memory DuckDB whose views read the current files (``UNION ALL BY NAME`` with
an empty table made from the DDL, so a column added later reads as NULL in older files). A query
that races a folder swap is retried.

That reading connection is read-only over the store's own files, by DuckDB's own switches, not by
looking at the query's words: ``enable_external_access = false`` with ``allowed_directories`` the
store's ``runs/`` and ``baselines/`` (so ``read_csv('/etc/passwd')``, ``glob``, ``ATTACH``, a URL,
``INSTALL`` and ``LOAD`` are refused by DuckDB), extension autoloading off, and
``lock_configuration`` so no query turns them back on; only SELECT and EXPLAIN (not EXPLAIN ANALYZE,
which executes) statements run there (``COPY`` would write into the store's folders).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from labctl.errors import BadInputError
from labctl.records.run_record import CellRecord, RunInfo
from labctl.store.base import BaselineSet, SqlQueries, SqlResult, StoreError, StoreQueryError, baseline_rows
from labctl.store.rows import Row, SampleRow, cell_rows, columns, run_row
from labctl.store.schema import CELL_TABLES, RUN_TABLES, statements, tables

RUN_PART = "_run"  # the part file of a finished run (cell ids never start with "_" + letters)
LOCK_TIMEOUT_S = 120.0  # a writer of the same run holds the lock for one cell's files, not longer
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_READ_RETRIES = 5
_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_EXPLAIN_ANALYZE = re.compile(r"^\s*EXPLAIN\s+\(?\s*ANALY[SZ]E", re.I)
READ_DIRS = ("runs", "baselines")  # the only folders a query of the store may read


def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _safe(run_id: str) -> str:
    if not _SAFE.match(run_id) or ".." in run_id:
        raise BadInputError(f"{run_id!r} is not a run id (letters, digits, '.', '_', '-')")
    return run_id


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Row]) -> None:
    """Insert dict rows through a dict of numpy columns (DuckDB scans it without a copy loop)."""
    if not rows:
        return
    cols = columns(table)
    batch = {c: np.array([r[c] for r in rows], dtype=object) for c in cols}  # noqa: F841 (DuckDB reads it)
    con.execute(f"INSERT INTO {table} SELECT {', '.join(cols)} FROM batch")


def _insert_samples(con: duckdb.DuckDBPyConnection, run_id: str, rows: Sequence[SampleRow]) -> None:
    if not rows:
        return
    cell, source, entity, metric, unit, ts, value = zip(*rows, strict=True)
    n = len(rows)
    batch = {  # noqa: F841 (DuckDB reads it)
        "run_id": np.full(n, run_id, dtype=object),
        "cell": np.array(cell, dtype=object),
        "source": np.array(source, dtype=object),
        "entity": np.array(entity, dtype=object),
        "metric": np.array(metric, dtype=object),
        "unit": np.array(unit, dtype=object),
        "ts_s": np.array(ts, dtype=np.float64),
        "value": np.array(value, dtype=object),
    }
    con.execute(f"INSERT INTO samples SELECT {', '.join(columns('samples'))} FROM batch")


def _staging() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the schema's (empty) tables: rows are typed by the DDL there."""
    con = duckdb.connect(":memory:")
    for stmt in statements(indexes=False):
        con.execute(stmt)
    return con


class ParquetStore(SqlQueries):
    """DuckDB over Parquet files in ``root`` (see the module's docstring)."""

    def __init__(self, root: Path, *, lock_timeout_s: float = LOCK_TIMEOUT_S):
        self.root = Path(root)
        self.url = f"duckdb:{self.root}"
        self.lock_timeout_s = lock_timeout_s
        # a DuckDB connection costs a tenth of a second to open: one for writing, one for reading,
        # kept for the store's life, each used by one thread at a time
        self._lock = threading.Lock()
        self._writer_con: duckdb.DuckDBPyConnection | None = None
        self._reader_con: duckdb.DuckDBPyConnection | None = None
        self._views: dict[str, tuple[Path, ...]] = {}

    def __repr__(self) -> str:
        return f"ParquetStore({str(self.root)!r})"

    def close(self) -> None:
        """Close the store's DuckDB connections (files are never held open between calls)."""
        with self._lock:
            for con in (self._writer_con, self._reader_con):
                if con is not None:
                    con.close()
            self._writer_con = self._reader_con = None
            self._views = {}

    @contextmanager
    def _writer(self, run_id: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """The staging connection, under the run's lock (across processes) and the store's (threads)."""
        with self._run_lock(run_id), self._lock:
            if self._writer_con is None:
                self._writer_con = _staging()
            yield self._writer_con

    # --- paths and locks ----------------------------------------------------------------------------

    def _run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / _safe(run_id)

    def _tmp(self, name: str) -> Path:
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp / f"{name}.{uuid.uuid4().hex[:12]}"

    @contextmanager
    def _run_lock(self, run_id: str) -> Iterator[None]:
        """Exclusive per run: two writers of one run (a sink and `labctl runs import`) take turns;
        writers of different runs never wait on each other."""
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks / f"{_safe(run_id)}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        deadline = time.monotonic() + self.lock_timeout_s
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StoreError(
                            f"{self.url}: run {run_id} is being written by another process for more than "
                            f"{self.lock_timeout_s:.0f} s (lock {locks / run_id}.lock; retry when it is done)"
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _write_file(self, con: duckdb.DuckDBPyConnection, select: str, dest: Path) -> None:
        """``COPY (select) TO dest`` through a temporary name and an atomic rename."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            con.execute(f"COPY ({select}) TO {_lit(tmp)} (FORMAT parquet, COMPRESSION zstd)")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)

    def _write_rows(
        self, con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Row], dest: Path
    ) -> None:
        """``rows`` of ``table`` into the file ``dest`` (through the staging connection ``con``)."""
        con.execute(f"DELETE FROM {table}")
        _insert(con, table, rows)
        self._write_file(con, f"SELECT * FROM {table}", dest)

    def _drop_cell(self, con: duckdb.DuckDBPyConnection, table_dir: Path, cell: str) -> None:
        """Take a cell's rows out of a finished run's part (before writing the cell again)."""
        part = table_dir / f"{RUN_PART}.parquet"
        if not part.exists():
            return
        found = con.execute(
            f"SELECT count(*) FROM read_parquet({_lit(part)}) WHERE cell = ?", [cell]
        ).fetchone()
        if found and found[0]:
            quoted = "'" + cell.replace("'", "''") + "'"
            self._write_file(con, f"SELECT * FROM read_parquet({_lit(part)}) WHERE cell <> {quoted}", part)

    def _swap_in(self, run_id: str, new_dir: Path) -> None:
        """Put ``new_dir`` in place of the run's folder (two renames, under the run's lock)."""
        final = self._run_dir(run_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        trash = None
        if final.exists():
            trash = self._tmp(f"trash-{run_id}")
            os.rename(final, trash)
        os.rename(new_dir, final)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)

    # --- writing ------------------------------------------------------------------------------------

    def add_run(self, info: RunInfo, folder: str | None = None) -> None:
        with self._writer(info.run_id) as con:
            dest = self._run_dir(info.run_id) / "runs" / f"{RUN_PART}.parquet"
            self._write_rows(con, "runs", [run_row(info, folder)], dest)

    def add_cell(self, run_id: str, record: CellRecord, seq: int) -> None:
        rows = cell_rows(run_id, record, seq)
        cell = record.cell
        with self._writer(run_id) as con:
            run_dir = self._run_dir(run_id)
            for t in CELL_TABLES:
                self._drop_cell(con, run_dir / t, cell)
                dest = run_dir / t / f"{cell}.parquet"
                if rows[t]:
                    self._write_rows(con, t, rows[t], dest)
                else:
                    dest.unlink(missing_ok=True)

    def add_samples(self, run_id: str, rows: Sequence[SampleRow]) -> int:
        by_cell: dict[str, list[SampleRow]] = {}
        for r in rows:
            by_cell.setdefault(r[0], []).append(r)
        with self._writer(run_id) as con:
            folder = self._run_dir(run_id) / "samples"
            for cell, batch in by_cell.items():
                taken = [p.name for p in folder.glob(f"{cell}~*.parquet")] if folder.is_dir() else []
                n = 1 + max((int(name.rsplit("~", 1)[1].split(".")[0]) for name in taken), default=-1)
                con.execute("DELETE FROM samples")
                _insert_samples(con, run_id, batch)
                self._write_file(con, "SELECT * FROM samples", folder / f"{cell}~{n:05d}.parquet")
        return len(rows)

    def replace_samples(self, run_id: str, cell: str, batches: Iterable[Sequence[SampleRow]]) -> int:
        """The cell's samples become ``batches`` at once: written aside first, then swapped for the
        old ones under the run's lock (an import between a delete and an append would double them)."""
        aside = self._tmp(f"samples-{run_id}")
        total = 0
        try:
            with self._lock:
                if self._writer_con is None:
                    self._writer_con = _staging()
                con = self._writer_con
                for i, batch in enumerate(batches):
                    con.execute("DELETE FROM samples")
                    _insert_samples(con, run_id, [(cell, *r[1:]) for r in batch])
                    self._write_file(con, "SELECT * FROM samples", aside / f"{cell}~{i:05d}.parquet")
                    total += len(batch)
            with self._writer(run_id) as con:
                folder = self._run_dir(run_id) / "samples"
                if folder.is_dir():
                    for p in folder.glob(f"{cell}~*.parquet"):
                        p.unlink(missing_ok=True)
                    self._drop_cell(con, folder, cell)
                folder.mkdir(parents=True, exist_ok=True)
                for p in sorted(aside.glob("*.parquet")):
                    os.replace(p, folder / p.name)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return total

    def finish_run(self, info: RunInfo, folder: str | None = None) -> None:
        """Rewrite the run's row and compact its parts into one file per table."""
        self.add_run(info, folder)
        with self._writer(info.run_id) as con:
            run_dir = self._run_dir(info.run_id)
            new = self._tmp(f"compact-{info.run_id}")
            try:
                for t in RUN_TABLES:
                    parts = sorted((run_dir / t).glob("*.parquet")) if (run_dir / t).is_dir() else []
                    if parts:
                        files = ", ".join(_lit(p) for p in parts)
                        select = f"SELECT * FROM read_parquet([{files}], union_by_name=true)"
                        self._write_file(con, select, new / t / f"{RUN_PART}.parquet")
                new.mkdir(parents=True, exist_ok=True)
                self._swap_in(info.run_id, new)
            finally:
                shutil.rmtree(new, ignore_errors=True)

    @contextmanager
    def replace_run(self, run_id: str) -> Iterator[_StagedRun]:
        """Stage a whole run in memory; on success its folder is replaced at once."""
        staged = _StagedRun(_safe(run_id))
        try:
            yield staged
            new = self._tmp(f"import-{run_id}")
            try:
                for t in RUN_TABLES:
                    (count,) = staged.con.execute(f"SELECT count(*) FROM {t}").fetchone()  # type: ignore[misc]
                    if count:
                        self._write_file(staged.con, f"SELECT * FROM {t}", new / t / f"{RUN_PART}.parquet")
                new.mkdir(parents=True, exist_ok=True)
                with self._run_lock(run_id):
                    self._swap_in(run_id, new)
            finally:
                shutil.rmtree(new, ignore_errors=True)
        finally:
            staged.con.close()

    def delete_run(self, run_id: str) -> bool:
        with self._run_lock(run_id):
            final = self._run_dir(run_id)
            if not final.exists():
                return False
            trash = self._tmp(f"trash-{run_id}")
            os.rename(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
            return True

    def add_baseline(self, baseline: BaselineSet) -> None:
        dest = self.root / "baselines" / f"{_safe(baseline.set_id)}.parquet"
        with self._writer(f"baseline-{baseline.set_id}") as con:
            self._write_rows(con, "baselines", baseline_rows(baseline), dest)

    # --- reading ------------------------------------------------------------------------------------

    def _files(self, table: str) -> list[Path]:
        root = self.root.resolve()  # absolute: the reader may read only under the store's own folders
        if table == "baselines":
            return sorted((root / "baselines").glob("*.parquet"))
        return sorted((root / "runs").glob(f"*/{table}/*.parquet"))

    def _reader(self) -> duckdb.DuckDBPyConnection:
        """The reading connection with a view per table over the files there are now (views are
        replaced only when a table's file list changed; a file replaced in place is read anew)."""
        con = self._reader_con
        if con is None:
            con = duckdb.connect(":memory:")
            con.execute("CREATE SCHEMA empty")
            for stmt in statements(indexes=False):
                con.execute(
                    stmt.replace("CREATE TABLE IF NOT EXISTS ", "CREATE TABLE IF NOT EXISTS empty.", 1)
                )
            _lock_down(con, [self.root.resolve() / d for d in READ_DIRS])
            self._reader_con = con
            self._views = {}
        for name in tables():
            files = tuple(self._files(name))
            if self._views.get(name) == files:
                continue
            select = f"SELECT * FROM empty.{name}"
            if files:
                listed = ", ".join(_lit(p) for p in files)
                select += f" UNION ALL BY NAME SELECT * FROM read_parquet([{listed}], union_by_name=true)"
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
            self._views[name] = files
        return con

    def sql(self, query: str, params: Sequence[Any] = ()) -> SqlResult:
        """Run a read-only query over the store (DuckDB's SQL; ``?`` or ``$1`` placeholders)."""
        for attempt in range(_READ_RETRIES):
            try:
                with self._lock:
                    con = self._reader()
                    found = con.extract_statements(query)
                    kinds = {st.type for st in found}
                    if not kinds <= _READ_ONLY or any(_EXPLAIN_ANALYZE.match(st.query) for st in found):
                        raise StoreQueryError(
                            f"{self.url}: only queries (SELECT, EXPLAIN) run here; the store is written "
                            "by labctl runs import and the runs themselves"
                        )
                    cur = con.execute(query, list(params))
                    names = [d[0] for d in cur.description or []]
                    return SqlResult(names, [tuple(r) for r in cur.fetchall()])
            except duckdb.IOException as exc:
                # a run folder swapped (compacted, re-imported) between listing and reading it
                if attempt + 1 < _READ_RETRIES:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                raise StoreError(f"{self.url}: {str(exc).splitlines()[0]}") from exc
            except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as exc:
                raise StoreQueryError(f"{self.url}: {str(exc).splitlines()[0]}") from exc
            except duckdb.PermissionException as exc:
                raise StoreQueryError(
                    f"{self.url}: {str(exc).splitlines()[0]} (queries read the store's tables only)"
                ) from exc
            except duckdb.Error as exc:
                raise StoreError(f"{self.url}: {str(exc).splitlines()[0]}") from exc
        raise AssertionError("unreachable")


def _lock_down(con: duckdb.DuckDBPyConnection, readable: Sequence[Path]) -> None:
    """Make ``con`` unable to reach anything but the files under ``readable`` (see the module
    docstring); the configuration is locked last, so no later statement can undo it."""
    dirs = "[" + ", ".join("'" + (str(d) + os.sep).replace("'", "''") + "'" for d in readable) + "]"
    con.execute(f"SET allowed_directories = {dirs}")
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")


class _StagedRun:
    """One run's rows staged in an in-memory DuckDB (for :meth:`ParquetStore.replace_run`)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.con = _staging()

    def _own(self, run_id: str) -> None:
        if run_id != self.run_id:
            raise ValueError(f"replacing run {self.run_id}, got rows of {run_id}")

    def add_run(self, info: RunInfo, folder: str | None = None) -> None:
        self._own(info.run_id)
        self.con.execute("DELETE FROM runs")
        _insert(self.con, "runs", [run_row(info, folder)])

    def add_cell(self, run_id: str, record: CellRecord, seq: int) -> None:
        self._own(run_id)
        for t, rows in cell_rows(run_id, record, seq).items():
            self.con.execute(f"DELETE FROM {t} WHERE cell = ?", [record.cell])
            _insert(self.con, t, rows)

    def add_samples(self, run_id: str, rows: Sequence[SampleRow]) -> int:
        self._own(run_id)
        _insert_samples(self.con, run_id, rows)
        return len(rows)
