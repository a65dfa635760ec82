"""The results store: every run's record queryable with SQL, embedded or shared by a team.

- :mod:`labctl.store.schema` / ``schema.sql``: the one schema (tables, columns and their meaning);
- :mod:`labctl.store.base`: the :class:`ResultsStore` protocol and the query helpers both backends share;
- :mod:`labctl.store.parquet`: the embedded default, DuckDB over Parquet files under ``results/store``;
- :mod:`labctl.store.postgres`: the same schema on PostgreSQL for a team;
- :mod:`labctl.store.importer`: ``labctl runs import`` (run folders stay the source of truth);
- :mod:`labctl.store.sink`: :class:`StoreSink`, the recorder's output sink that writes as the run goes.

Open one with :func:`open_store` and a URL: ``duckdb:PATH`` (a folder; also a bare path) or
``postgresql://user@host[:port]/db`` (password from PGPASSWORD or ~/.pgpass).
"""

from __future__ import annotations

from pathlib import Path

from labctl.errors import BadInputError
from labctl.store.base import BaselineSet, CellRow, ResultsStore, RunRow, SqlResult, StoreError
from labctl.store.importer import import_run, run_folders
from labctl.store.sink import StoreSink
from labctl.store.urls import check_no_password, safe_url

STORE_ENV = "LABCTL_STORE"
STORE_DIR = "store"  # the embedded store's folder inside the results folder


def default_store_url(results_dir: Path) -> str:
    return f"duckdb:{Path(results_dir) / STORE_DIR}"


def open_store(url: str) -> ResultsStore:
    """The store at ``url`` (see the module docstring). Nothing is created until a write. A URL
    with a password in it is refused, and the message shows it masked (see :mod:`labctl.store.urls`)."""
    check_no_password(url)
    if url.startswith(("postgresql://", "postgres://")):
        from labctl.store.postgres import PostgresStore  # psycopg: only for a team's store

        return PostgresStore(url)
    if url.startswith("duckdb:"):
        path = url.removeprefix("duckdb:")
    elif "://" in url:
        raise BadInputError(
            f"store {safe_url(url)!r}: unknown kind (use duckdb:PATH for the embedded store, postgresql://... for a team's)"
        )
    else:
        path = url
    if not path:
        raise BadInputError("store 'duckdb:' needs a folder, e.g. duckdb:results/store")
    if Path(path).suffix in (".duckdb", ".db"):
        raise BadInputError(
            f"store {url!r}: the embedded store is a folder of Parquet files, not a DuckDB file "
            f"(use duckdb:{Path(path).with_suffix('')})"
        )
    from labctl.store.parquet import ParquetStore  # duckdb: loaded when a store is used

    return ParquetStore(Path(path))


__all__ = [
    "STORE_ENV",
    "BaselineSet",
    "CellRow",
    "ResultsStore",
    "RunRow",
    "SqlResult",
    "StoreError",
    "StoreSink",
    "default_store_url",
    "import_run",
    "open_store",
    "run_folders",
    "safe_url",
]
