"""The nightly's tests use the store tests' fixtures (both backends, a real PostgreSQL server) and
the CLI tests' ``labctl`` (the command line as ``main()`` runs it: one line per error, exit code)."""

from tests.store.conftest import duck_store, pg_dsn, pg_server, pg_store, store  # noqa: F401
from tests.test_cli_compare import labctl  # noqa: F401
