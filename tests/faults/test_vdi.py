"""The VDI storms' faults (see tests/faults/test_matrix.py for the whole matrix)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.faults.cells import VDI_3, VDI_CELL, Cell, cell_of, run_cell, vdi_3
from tests.vsi.labs import vdi_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_CELL = "session_storm-default-003"


def test_a_desktop_whose_power_task_fails_is_named_and_an_expiring_array_token_is_not(tmp_path: Path) -> None:
    faults = (
        "- {kind: vcenter_task_fails, targets: [d-0002]}\n"
        "- {kind: storage_token_expiry, targets: [arr-1], after_s: 30}"
    )
    lab = vdi_lab(tmp_path, desktops=3, faults=faults)
    # the storm's deadlines cut to what 3 desktops need: the user of d-0002 waits no longer
    short = ("--param", "boot_timeout_s=120", "--param", "login_timeout_s=120")
    code, out = run_cell(tmp_path, lab, *VDI_3, *short)
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, VDI_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    first = cell.reason.split(";")[0]
    assert first.startswith("boot: 1 of 3 desktops not up") and "d-0002" in first, cell.reason
    assert "arr-1" not in cell.reason, cell.reason


def test_vcenter_dying_mid_session_storm_is_a_lab_fault_naming_it(tmp_path: Path) -> None:
    from labctl.sim.state import read_state

    lab = vdi_lab(tmp_path, desktops=3)
    run = Cell(
        tmp_path,
        lab,
        "session_storm",
        "--profile",
        "quick",
        "--param",
        "session_counts=3",
        "--param",
        "bring_up=true",
        "--param",
        "boot_settle_s=20",
        "--param",
        "steady_s=300",
        "--no-report",
    )
    run.wait_for("steady")
    state = read_state(tmp_path / "state")
    assert state is not None
    (vcsim,) = [p.pid for p in state.processes if p.role.startswith("vcsim:")]
    os.kill(vcsim, signal.SIGKILL)
    code, out = run.finish()
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, SESSION_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert cell.reason.startswith("vCenter vc-01 failed"), cell.reason


def test_the_simulated_lab_going_down_mid_vdi_storm_is_a_lab_fault_naming_vcenter(tmp_path: Path) -> None:
    """`labctl sim down` from another shell while the desktops work: every endpoint goes at
    once; the first named is vCenter (the cell's hosts and desktops are read from it), and the
    cell still ends with its record."""
    from labctl.sim.simlab import SimulatedLab

    lab = vdi_lab(tmp_path, desktops=3)
    sim = SimulatedLab(lab, state_dir=tmp_path / "state").start()
    try:
        # the logoff and the restore cannot reach the lab either: their deadlines cut to what
        # 3 desktops need
        cut = ("--param", "logoff_timeout_s=60", "--param", "restore_timeout_s=60")
        run = Cell(tmp_path, lab, *vdi_3(steady_s=240), *cut)
        run.wait_for("steady")
    finally:
        sim.stop()
    code, out = run.finish()
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, VDI_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert "vc-01" in cell.reason.split(";")[0], cell.reason
