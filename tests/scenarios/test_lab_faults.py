"""A 2007 storm whose lab fails around it: the cell ends as a lab fault naming the failing thing,
its measured verdicts kept, and a failing endpoint never starves a healthy one of samples.

`labctl run boot_storm` on a small simulated 2007 lab (three clients, 60x); the fault is on the wire
(the simulated iDRAC answers 503 with a Redfish error body, or accepts and never answers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.labfiles import make_test_lab
from tests.plans.test_plans_quick import _allure_results, _run, _run_folder, _summaries, _verdict

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CELL = "boot_storm-standalone-003"


@pytest.mark.parametrize("fault", ["bmc_503", "bmc_hang"])
def test_a_failing_bmc_in_a_boot_storm_is_a_lab_fault_named(tmp_path: Path, fault: str) -> None:
    # 20x, not 60x: a wall hiccup of the loaded test machine costs a third of the lab seconds, while
    # waiting out the failing BMC's deadline (a wall second) would still cost the healthy one 20
    lab = make_test_lab(
        tmp_path, clients=3, time_scale=20, faults=f"- {{kind: {fault}, targets: [infra-01]}}"
    )
    quick = ("--profile", "quick", "--param", "group_sizes=3", "--param", "window_s=90", "--no-report")
    proc = _run(tmp_path, lab, "boot_storm", *quick)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    run = _run_folder(tmp_path)
    cell = _summaries(run)[CELL]
    assert cell.outcome is Outcome.LAB_FAULT
    assert cell.reason.startswith("BMC infra-01 failed"), cell.reason
    # the clients were measured and judged all the same
    assert _verdict(run, CELL).criteria
    assert all(c.boot_time_s for c in cell.clients.values())
    # pvs-01's BMC is read beside the failing one: never starved of a sample
    healthy = cell.metric("redfish", "pvs-01", "power_w")
    assert healthy is not None and healthy.coverage is not None and healthy.coverage >= 0.9, healthy
    (result,) = [r for r in _allure_results(run) if f"/boot_storm/{CELL}" in r["fullName"]]
    assert result["status"] == "broken" and "infra-01" in result["statusDetails"]["message"]
