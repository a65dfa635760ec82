"""The nightly's tests use the store tests' fixtures: both backends, a real PostgreSQL server."""

from tests.store.conftest import duck_store, pg_dsn, pg_server, pg_store, store  # noqa: F401
