"""What fails around the lab: the results disk fills up, the results store goes away mid-run
(see tests/faults/test_matrix.py for the whole matrix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.faults.cells import BOOT_CELL, Cell, cell_of, stop_postgres
from tests.labfiles import make_test_lab
from tests.plans.test_plans_quick import _events, _run_folder
from tests.store.postgres_server import pg_bin, postgres_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIRST = "boot_storm-standalone-001"
TWO_CELLS = (
    "boot_storm",
    "--profile",
    "quick",
    "--param",
    "group_sizes=1,2",
    "--param",
    "window_s=60",
    "--no-report",
)


@pytest.mark.skipif(pg_bin() is None, reason="PostgreSQL's server binaries are not installed (make install)")
def test_the_results_store_going_away_mid_run_is_said_at_once_and_in_the_summary(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=2)
    with postgres_server(tmp_path) as dsn:
        run = Cell(tmp_path, lab, *TWO_CELLS, "--store", dsn)
        run.wait_for(f"{FIRST}: PASS")  # the first cell is in the store
        stop_postgres(dsn)
        code, out = run.finish()
    assert "Traceback" not in out, out[-3000:]
    lines = out.splitlines()
    # said the moment it happens, once: the store, what failed, that the run goes on
    said = [ln for ln in lines if "results store" in ln and f"writing cell {BOOT_CELL} failed" in ln]
    assert len(said) == 1, out[-3000:]
    assert "the run folder and its verdicts are kept" in said[0] and "127.0.0.1" in said[0], said[0]
    # and in the summary at the end: the run is measured and kept, not in the store, how to add it
    run_id = _run_folder(tmp_path).name
    summary = [ln for ln in lines if ln.startswith("labctl: results store")]
    assert len(summary) == 1 and f"labctl runs import {run_id}" in summary[0], out[-3000:]
    # both cells measured and judged on their own; the run exits 3 (measured, not stored)
    assert cell_of(tmp_path, FIRST).outcome is Outcome.PASS
    assert cell_of(tmp_path, BOOT_CELL).outcome is Outcome.PASS
    assert code == 3, out[-3000:]
    assert {e["target"] for e in _events(_run_folder(tmp_path), "sink.error")} == {"StoreSink"}
