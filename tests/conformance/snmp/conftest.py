from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.snmp.mibs_loader import Mibs, compile_mibs


@pytest.fixture(scope="session")
def eql_mibs(tmp_path_factory: pytest.TempPathFactory) -> Mibs:
    """The vendor's MIBs compiled by pysmi once per run (about 3 s)."""
    out: Path = tmp_path_factory.mktemp("mibs-json")
    results = compile_mibs(out)
    failed = {k: v for k, v in results.items() if v not in ("compiled", "untouched")}
    assert not failed, f"pysmi could not compile {failed}"
    return Mibs(out)
