"""What fails around the lab: the results disk fills up, the results store goes away mid-run
(see tests/faults/test_matrix.py for the whole matrix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.faults.cells import BOOT_CELL, VDI_3, VDI_CELL, Cell, boot_2, cell_of, stop_postgres
from tests.labfiles import make_test_lab
from tests.plans.test_plans_quick import _events, _run_folder
from tests.store.postgres_server import pg_bin, postgres_server
from tests.vsi.labs import vdi_lab
from tests.vsi.test_faults import _small_disk

needs_postgres = pytest.mark.skipif(
    pg_bin() is None, reason="PostgreSQL's server binaries are not installed (make install)"
)

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


@needs_postgres
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


@needs_postgres
def test_the_results_store_going_away_mid_vdi_storm_is_said_and_the_cell_kept(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=3)
    with postgres_server(tmp_path) as dsn:
        run = Cell(tmp_path, lab, *VDI_3, "--store", dsn)
        run.wait_for("steady")  # the store is written when the cell ends: it is gone by then
        stop_postgres(dsn)
        code, out = run.finish()
    assert "Traceback" not in out, out[-3000:]
    lines = out.splitlines()
    said = [ln for ln in lines if "results store" in ln and f"writing cell {VDI_CELL} failed" in ln]
    assert len(said) == 1 and "the run folder and its verdicts are kept" in said[0], out[-3000:]
    run_id = _run_folder(tmp_path).name
    summary = [ln for ln in lines if ln.startswith("labctl: results store")]
    assert len(summary) == 1 and f"labctl runs import {run_id}" in summary[0], out[-3000:]
    cell = cell_of(tmp_path, VDI_CELL)  # judged on what it measured: the store is no part of it
    assert "store" not in cell.reason, cell.reason
    assert code == (3 if cell.outcome.passed else 1), (cell.outcome, out[-3000:])


def test_a_full_results_disk_in_a_boot_storm_ends_with_one_line_and_run_json_finalised(
    tmp_path: Path,
) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab = make_test_lab(tmp_path, clients=2)
    disk = tmp_path / "disk"
    # the simulator is started here, off the small disk and its file-size cap; the run folder is
    # read before the small disk goes away
    with SimulatedLab(lab, state_dir=tmp_path / "state"), _small_disk(disk, 256, 48) as cap:
        run = Cell(tmp_path, lab, *boot_2(window_s=300), results=disk / "results", preexec_fn=cap)
        code, out = run.finish()
        assert code == 1, out[-3000:]
        assert "Traceback" not in out, out[-5000:]
        said = [line for line in out.splitlines() if "could not be written" in line]
        assert len(said) == 1 and "free space and run again" in said[0], out[-3000:]
        (run_json,) = (disk / "results").glob("*/run.json")
        info = json.loads(run_json.read_text())
        assert info["outcome"] == "error" and "results folder incomplete" in info["reason"], info
