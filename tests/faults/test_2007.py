"""The 2007 plans' faults (see tests/faults/test_matrix.py for the whole matrix)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.faults.cells import BOOT_2, BOOT_CELL, Cell, boot_2, cell_of, run_cell
from tests.labfiles import make_test_lab
from tests.plans.test_plans_quick import _events, _run_folder

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_an_ssh_channel_dropping_mid_command_is_named_and_an_expiring_array_token_is_not(
    tmp_path: Path,
) -> None:
    """Every command on the streaming server loses its channel mid-way: a lab fault naming it. The
    Unity array's session expires every 20 lab seconds: its driver logs in again, so it is no
    fault, not named, and its samples are all there. (BMC 503/hang in a 2007 storm:
    tests/scenarios/test_lab_faults.py.)"""
    faults = (
        "- {kind: ssh_drop_mid_command, targets: [pvs-01]}\n"
        "- {kind: storage_token_expiry, targets: [unity-01], after_s: 20}"
    )
    lab = make_test_lab(tmp_path, clients=2, faults=faults)
    code, out = run_cell(tmp_path, lab, *BOOT_2)
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, BOOT_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert cell.reason.startswith("server pvs-01 "), cell.reason
    assert "unity-01" not in cell.reason, cell.reason
    errors = {e["target"] for e in _events(_run_folder(tmp_path), "source.error")}
    assert "unity-01" not in errors, errors
    iops = cell.metric("unity", "unity-01", "iops")  # read through the sessions that expired
    assert iops is not None and iops.coverage is not None and iops.coverage >= 0.9, iops


def test_vcenter_dying_mid_boot_storm_is_a_lab_fault_naming_it(tmp_path: Path) -> None:
    """The 2007 lab's small vCenter is read by every cell (its hosts' counters): killed in the
    window, it is named; the clients' storm and restore (WoL, SSH) go on without it."""
    from labctl.sim.state import read_state

    lab = make_test_lab(tmp_path, clients=2)
    run = Cell(tmp_path, lab, *boot_2(window_s=300))
    run.wait_for("2/2 up")
    state = read_state(tmp_path / "state")
    assert state is not None
    (vcsim,) = [p.pid for p in state.processes if p.role.startswith("vcsim:")]
    os.kill(vcsim, signal.SIGKILL)
    code, out = run.finish()
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, BOOT_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert cell.reason.startswith("vCenter vc-01 failed"), cell.reason
    assert cell.restore is not None and cell.restore.ok, cell.restore
