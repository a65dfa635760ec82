"""Fixtures of the store tests: a real PostgreSQL server (one per session) and both stores."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from labctl.store import ResultsStore, open_store
from labctl.store.postgres import PostgresStore
from tests.store.postgres_server import postgres_server


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The DSN of a PostgreSQL server started for this test session from the machine's binaries."""
    with postgres_server(tmp_path_factory.mktemp("postgres")) as dsn:
        yield dsn


@pytest.fixture
def pg_dsn(pg_server: str) -> str:
    """A fresh, empty database on the session's server (tests never see each other's rows)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return pg_server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def pg_store(pg_dsn: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_dsn)
    yield store
    store.close()


@pytest.fixture
def duck_store(tmp_path: Path) -> ResultsStore:
    return open_store(f"duckdb:{tmp_path / 'store'}")


@pytest.fixture(params=["duckdb", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultsStore]:
    """Each test that takes ``store`` runs once per backend."""
    if request.param == "duckdb":
        yield open_store(f"duckdb:{tmp_path / 'store'}")
        return
    s = PostgresStore(request.getfixturevalue("pg_dsn"))
    yield s
    s.close()
