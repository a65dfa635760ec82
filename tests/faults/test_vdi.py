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
    # the failed task's own words (labctl-vcsim's GenericVmConfigFault), not the power state at a deadline
    assert (
        "d-0002: power-on task failed: GenericVmConfigFault: Failed to power on the virtual machine" in first
    ), cell.reason
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
    cell still ends with its record. The steady phase breaks off once the launchers stay
    unreadable past ``launcher_unreadable_s`` (not after its whole ``steady_s``), naming them, and
    the desktops they held are not measured from then: the headline counts none of them good."""
    from labctl.report.headline import headline_text
    from labctl.sim.simlab import SimulatedLab

    lab = vdi_lab(tmp_path, desktops=3)
    sim = SimulatedLab(lab, state_dir=tmp_path / "state").start()
    try:
        # the logoff and the restore cannot reach the lab either: their deadlines cut to what
        # 3 desktops need
        cut = ("--param", "logoff_timeout_s=60", "--param", "restore_timeout_s=60")
        grace = ("--param", "launcher_unreadable_s=30")
        run = Cell(tmp_path, lab, *vdi_3(steady_s=1200), *cut, *grace)
        run.wait_for("steady")
    finally:
        sim.stop()
    code, out = run.finish()
    assert code == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    cell = cell_of(tmp_path, VDI_CELL)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert "vc-01" in cell.reason.split(";")[0], cell.reason
    # lab time, from the summary: the steady phase ended after the grace (30 s), the polls that
    # saw it and the wall seconds `sim down` took, far short of the 1200 s it was given
    (steady,) = [p for p in cell.phases if p.name == "steady"]
    assert steady.end_ts_s is not None and steady.end_ts_s - steady.start_ts_s < 600, cell.phases
    # the launchers are named where the desktops are counted (the reason's one line names the
    # cause first, vCenter and the array, which went down with them)
    ri = cell.response_index
    assert ri is not None and ri.unmeasured == 3 and ri.good + ri.fair + ri.poor == 0, ri
    assert ri.unmeasured_why == "launchers vsi-01, vsi-02 unreadable", ri
    lost = [c for c in cell.clients.values() if c.role == "desktop"]
    assert len(lost) == 3 and {c.outcome for c in lost} == {"not_measured"}, lost
    assert all("launchers vsi-01, vsi-02 unreadable" in c.detail for c in lost), lost
    assert headline_text(ri).startswith("index not judged: sessions unreadable from "), headline_text(ri)
