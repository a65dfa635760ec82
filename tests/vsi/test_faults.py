"""A VDI storm whose lab fails around it: every cell still ends with its record (summary, verdict,
JUnit case, Allure result), as a lab fault whose reason names the failing thing.

Each test runs `labctl run vdi_storm` on a small simulated VDI lab (three desktops, 60x) with a
short profile, and injects its failure on the wire: a vCenter killed mid-storm, a BMC answering
503 or hanging (the simulated iDRAC), an array controller failing over, an ESXi host entering
maintenance, a full datastore, logons that fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from labctl.records.run_record import CellSummary, Outcome
from tests.plans.test_plans_quick import _allure_results, _args, _env, _run_folder, _summaries, _verdict
from tests.vsi.labs import vdi_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CELL = "vdi_storm-default-100"
# the quick profile, shortened: every desktop pre-booted, no idle, a short steady state
SHORT = (
    "--profile",
    "quick",
    "--param",
    "prebooted_pcts=100",
    "--param",
    "idle_s=0",
    "--param",
    "boot_settle_s=20",
    "--param",
    "steady_settle_s=0",
    "--no-report",
)


class VdiRun:
    """`labctl run vdi_storm` in the background, read line by line."""

    def __init__(self, tmp_path: Path, lab: Path, *extra: str):
        self.tmp_path = tmp_path
        self.proc = subprocess.Popen(
            _args(tmp_path, lab, "vdi_storm", *SHORT, *extra),
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.seen: list[str] = []

    def wait_for(self, text: str, timeout_s: float = 180) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            self.seen.append(line)
            if text in line:
                return
            if not line and self.proc.poll() is not None:
                break
        self.proc.kill()
        pytest.fail(f"the storm never said {text!r}:\n" + "".join(self.seen[-30:]))

    def finish(self, timeout_s: float = 240) -> str:
        try:
            out, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("labctl run did not end:\n" + "".join(self.seen[-30:]))
        return "".join(self.seen) + out


def _run_vdi(tmp_path: Path, lab: Path, *extra: str) -> tuple[int, str]:
    run = VdiRun(tmp_path, lab, *extra)
    out = run.finish()
    return run.proc.returncode, out


def _cell_record_complete(run: Path, cell: str = CELL) -> CellSummary:
    """The cell's summary, with its verdicts, a JUnit case and an Allure result beside it."""
    summary = _summaries(run)[cell]
    assert (run / "cells" / cell / "verdicts.json").exists(), "the cell lost its verdicts"
    junit = (run / "junit.xml").read_text()
    assert 'tests="0"' not in junit and cell in junit, junit[:2000]
    assert [r for r in _allure_results(run) if cell in r["fullName"]], "no Allure result for the cell"
    info = json.loads((run / "run.json").read_text())
    assert info["outcome"] != "running", info
    return summary


def test_vcenter_dying_mid_storm_is_a_lab_fault_with_the_cells_record(tmp_path: Path) -> None:
    from labctl.sim.state import read_state

    lab = vdi_lab(tmp_path, desktops=3)
    run = VdiRun(tmp_path, lab, "--param", "steady_s=600")
    run.wait_for("steady")
    state = read_state(tmp_path / "state")
    assert state is not None
    (vcsim,) = [p.pid for p in state.processes if p.role.startswith("vcsim:")]
    os.kill(vcsim, signal.SIGKILL)
    out = run.finish()
    assert run.proc.returncode == 1, out[-3000:]
    folder = _run_folder(tmp_path)
    cell = _cell_record_complete(folder)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert cell.reason.startswith("vCenter vc-01 failed"), cell.reason
    assert "killed?" not in cell.reason
    # the restore could not reach vCenter either: said, and the policy makes it a lab fault
    assert cell.restore is not None and not cell.restore.ok
    assert "Traceback" not in out, out[-3000:]


@pytest.mark.parametrize("fault", ["bmc_503", "bmc_hang"])
def test_a_failing_bmc_is_a_lab_fault_named_and_the_healthy_bmc_keeps_its_samples(
    tmp_path: Path, fault: str
) -> None:
    lab = vdi_lab(
        tmp_path, desktops=3, bmcs=2, faults=f"- {{kind: {fault}, targets: [infra-01], after_s: 30}}"
    )
    code, out = _run_vdi(tmp_path, lab, "--param", "steady_s=600")
    assert code == 1, out[-3000:]
    folder = _run_folder(tmp_path)
    cell = _cell_record_complete(folder)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert "BMC infra-01 failed" in cell.reason, cell.reason
    healthy = cell.metric("redfish", "infra-02", "power_w")
    assert healthy is not None and healthy.coverage is not None and healthy.coverage >= 0.9, healthy
    assert _verdict(folder, CELL).criteria, "the measured criteria are still judged"
