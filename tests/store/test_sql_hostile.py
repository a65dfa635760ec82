"""`labctl runs sql` is read-only over the store's own tables: hostile queries against a real DuckDB
and a real PostgreSQL server (issue 22, hard-edges: "runs sql reads arbitrary local files").

Each sample names a canary file readable by the database (and, for PostgreSQL, by the server's
user); a positive control shows that an unguarded connection of the same engine does read it, so
a store that lost its guard fails here. A sample passes when the store refuses it with a labctl
error (one line, no traceback), the canary's content appears nowhere, and no file was written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import psycopg
import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import LabctlError
from labctl.store import ResultsStore, import_run, open_store
from labctl.store.postgres import PostgresStore
from tests.store.runs import make_run

CANARY = "CANARY-7f3e9b1c-not-for-queries"


@pytest.fixture(scope="module")
def canary_dir() -> Iterator[Path]:
    """A folder everyone may read (the PostgreSQL server runs as `postgres` when the tests are root)."""
    d = Path(tempfile.mkdtemp(prefix="labctl-canary-"))
    os.chmod(d, 0o755)
    (d / "canary.csv").write_text(f"secret\n{CANARY}\n")
    os.chmod(d / "canary.csv", 0o644)
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


DUCKDB_SAMPLES = [
    "SELECT * FROM read_csv('{canary}')",
    "SELECT * FROM read_csv_auto('{canary}')",
    "SELECT * FROM read_text('{canary}')",
    "SELECT * FROM read_blob('{canary}')",
    "SELECT * FROM read_json_auto('{canary}')",
    "SELECT * FROM read_parquet('{canary}')",
    "SELECT * FROM sniff_csv('{canary}')",
    "FROM read_csv(['{canary}'])",
    "SELECT * FROM '{canary}'",
    "SELECT * FROM read_csv('{store}/runs/../../canary/canary.csv')",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM query('SELECT * FROM read_csv(''{canary}'')')",
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "COPY runs TO '{out}'",
    "COPY (SELECT 1) TO '{store}/runs/evil.csv'",
    "COPY runs FROM '{canary}'",
    "ATTACH '{out}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SELECT 1; SET enable_external_access = true",
    "SET allowed_directories = ['/']",
    "CREATE TABLE t AS SELECT * FROM runs",
    "EXPLAIN ANALYZE SELECT * FROM read_csv('{canary}')",
    "PRAGMA enable_profiling",
]

POSTGRES_SAMPLES = [
    "SELECT pg_read_file('{canary}')",
    "SELECT pg_read_binary_file('{canary}')",
    "SELECT \"pg_read_file\"('{canary}')",
    "SELECT pg_read_file/**/('{canary}')",
    "SELECT pg_catalog.pg_read_file('{canary}', 0, 100)",
    "WITH f AS (SELECT pg_read_file('{canary}') AS t) SELECT t FROM f",
    "SELECT * FROM pg_ls_dir('{dir}')",
    "SELECT pg_stat_file('{canary}')",
    "SELECT lo_import('{canary}')",
    "SELECT lo_export(1, '{out}')",
    "COPY runs FROM '{canary}'",
    "COPY (SELECT 1) TO '{out}'",
    "COPY (SELECT 1) TO PROGRAM 'touch {out}'",
    "SELECT 1; SELECT pg_read_file('{canary}')",
    "RESET ROLE",
    "SELECT set_config('role', current_user, true), "
    "query_to_xml('SELECT pg_read_file(''{canary}'')', true, false, '')",
    "SELECT query_to_xml('SELECT pg_read_file(''{canary}'')', true, false, '')",
    "SELECT * FROM ts_stat('SELECT to_tsvector(pg_read_file(''{canary}''))')",
    "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)",
    "DO $$ BEGIN PERFORM pg_read_file('{canary}'); END $$",
    "CREATE TEMP TABLE t AS SELECT 1",
    "EXPLAIN ANALYZE SELECT pg_read_file('{canary}')",
    "SELECT current_setting('data_directory')",
    "TABLE pg_authid",
    "SELECT U&\"pg_read\\005Ffile\"('{canary}')",
]


def _fill(sample: str, canary_dir: Path, store_dir: Path | None, out: Path) -> str:
    return sample.format(
        canary=canary_dir / "canary.csv",
        dir=canary_dir,
        store=store_dir or "",
        out=out,
    )


def _refused(store: ResultsStore, query: str, out: Path) -> None:
    with pytest.raises(LabctlError) as caught:
        rows = store.sql(query).rows
        pytest.fail(f"not refused: {query!r} gave {rows!r}")
    text = str(caught.value)
    assert CANARY not in text, query
    assert "Traceback" not in text and "\n" not in text.strip(), text
    assert not out.exists(), f"{query!r} wrote {out}"


@pytest.fixture
def duck(tmp_path: Path, canary_dir: Path) -> ResultsStore:
    store = open_store(f"duckdb:{tmp_path / 'store'}")
    import_run(store, make_run(tmp_path / "results", seed=1, group_sizes=(5,)))
    (tmp_path / "canary").symlink_to(canary_dir)  # for the `..` sample: a real path beside the store
    return store


def test_duckdb_refuses_every_hostile_query(duck: ResultsStore, tmp_path: Path, canary_dir: Path) -> None:
    out = tmp_path / "written.csv"
    canary = canary_dir / "canary.csv"
    # positive control: an unguarded DuckDB reads the canary, so the guard is what refuses it below
    assert CANARY in str(duckdb.connect(":memory:").execute(f"SELECT * FROM read_csv('{canary}')").fetchall())
    assert len(DUCKDB_SAMPLES) >= 15
    for sample in DUCKDB_SAMPLES:
        _refused(duck, _fill(sample, canary_dir, tmp_path / "store", out), out)
    assert not (tmp_path / "store" / "runs" / "evil.csv").exists()
    # and the store still answers its own questions afterwards (the guard did not break reading)
    assert duck.sql("SELECT count(*) FROM runs").rows == [(1,)]
    assert duck.sql("EXPLAIN SELECT * FROM cells").rows


@pytest.fixture
def pg(pg_dsn: str, tmp_path: Path) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_dsn)
    import_run(store, make_run(tmp_path / "results", seed=1, group_sizes=(5,)))
    yield store
    store.close()


def test_postgresql_refuses_every_hostile_query(
    pg: PostgresStore, pg_dsn: str, tmp_path: Path, canary_dir: Path
) -> None:
    out = Path(tempfile.mkdtemp(prefix="labctl-out-")) / "written.csv"  # where the server could write
    os.chmod(out.parent, 0o777)
    canary = canary_dir / "canary.csv"
    # positive control: the store's user is a superuser; unguarded, it reads the canary
    with psycopg.connect(pg_dsn, connect_timeout=10) as raw:
        assert raw.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (True,)
        assert CANARY in str(raw.execute(f"SELECT pg_read_file('{canary}')").fetchone())
    assert len(POSTGRES_SAMPLES) >= 15
    try:
        for sample in POSTGRES_SAMPLES:
            _refused(pg, _fill(sample, canary_dir, None, out), out)
    finally:
        out.unlink(missing_ok=True)
        out.parent.rmdir()
    assert pg.sql("SELECT count(*) FROM runs").rows == [(1,)]
    assert pg.sql("SELECT count(*) FROM runs WHERE run_id LIKE '%boot_storm%'").rows == [
        (1,)
    ]  # % is not a mark
    assert pg.sql("/* a comment */ WITH r AS (SELECT lab FROM runs) SELECT lab FROM r").rows == [
        ("sim-2007",)
    ]
    assert pg.sql("SELECT plan FROM runs WHERE lab = ?", ["sim-2007"]).rows == [("boot_storm",)]


def test_runs_sql_on_the_command_line_is_one_line_and_exit_2(
    tmp_path: Path, canary_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LABCTL_STORE", raising=False)
    results = tmp_path / "results"
    make_run(results, seed=1, group_sizes=(5,))
    assert run_cli(cli, ["runs", "import", "--all", "--results-dir", str(results)]) == 0
    capsys.readouterr()
    query = f"SELECT * FROM read_csv('{canary_dir / 'canary.csv'}')"
    code = run_cli(cli, ["runs", "sql", query, "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and CANARY not in err


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://labctl:s3cret-pw@127.0.0.1:9/labctl",
        "postgresql://labctl@127.0.0.1:9/labctl?password=s3cret-pw",
        "postgresql://labctl@127.0.0.1:9/labctl?sslmode=disable&password=s3cret-pw",
        "postgresql://labctl:s3c@ret-pw@127.0.0.1:9/labctl",
        "host=127.0.0.1 password=s3cret-pw dbname=labctl",
    ],
)
def test_a_store_url_password_is_never_printed_back(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LABCTL_STORE", raising=False)
    for args in (["runs"], ["runs", "sql", "SELECT 1"], ["baseline", "show", "sim-2007", "boot_storm"]):
        code = run_cli(cli, [*args, "--store", url, "--results-dir", str(tmp_path)])
        out = capsys.readouterr()
        assert code == 2, (args, out)
        assert "s3cret" not in out.out + out.err and "ret-pw" not in out.out + out.err
        assert "PGPASSWORD" in out.err
    monkeypatch.setenv("LABCTL_STORE", url)  # the same from the environment
    code = run_cli(cli, ["runs", "--results-dir", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 2 and "ret-pw" not in out.out + out.err


def _database_of(pg_server: str, owner: str, *grants: str) -> str:
    """A fresh database owned by a new login role ``owner`` (trust auth: no password), with ``grants``."""
    name = f"t_{owner}_{os.getpid()}"
    with psycopg.connect(pg_server, autocommit=True, connect_timeout=10) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}".encode())
        admin.execute(f"DROP ROLE IF EXISTS {owner}".encode())
        admin.execute(f"CREATE ROLE {owner} LOGIN".encode())
        for g in grants:
            admin.execute(f"GRANT {g} TO {owner}".encode())
        admin.execute(f"CREATE DATABASE {name} OWNER {owner}".encode())
    host = pg_server.split("@", 1)[1].rsplit("/", 1)[0]
    return f"postgresql://{owner}@{host}/{name}"


def test_a_plain_store_user_queries_as_itself_and_a_file_reader_without_the_role_is_refused(
    pg_server: str, tmp_path: Path, canary_dir: Path
) -> None:
    out = tmp_path / "never.csv"
    plain = PostgresStore(_database_of(pg_server, "plainuser"))
    try:
        import_run(plain, make_run(tmp_path / "results", seed=2, group_sizes=(5,)))
        assert plain.sql("SELECT count(*) FROM runs").rows == [(1,)]
        for sample in POSTGRES_SAMPLES[:14]:
            _refused(plain, _fill(sample, canary_dir, None, out), out)
    finally:
        plain.close()
    filer = PostgresStore(_database_of(pg_server, "fileuser", "pg_read_server_files"))
    try:
        import_run(filer, make_run(tmp_path / "results2", seed=3, group_sizes=(5,)))  # writing is fine
        # its rights would reach past a single guard: no query at all, and one line saying why
        with pytest.raises(LabctlError, match=r"may read server files.*labctl_store_reader"):
            filer.sql("SELECT count(*) FROM runs")
    finally:
        filer.close()
