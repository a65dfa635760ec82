"""session_storm on the simulated VDI lab: the same plan and code above the connector as on a real
pool (tests/realsessions/test_session_storm.py); the launchers' far side answers from the twin,
logon waterfalls included (the twin's one-phase logon, the rest unmeasured with the reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from tests.plans.test_plans_quick import _run, _run_folder, _summaries, _verdict
from tests.vsi.labs import vdi_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_session_storm_quick_on_the_simulated_lab(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=4)
    res = _run(
        tmp_path, lab, "session_storm", "--profile", "quick", "--param", "bring_up=true", "--param",
        "boot_settle_s=30", timeout_s=600,
    )  # fmt: skip
    run = _run_folder(tmp_path)
    cell = _summaries(run)["session_storm-default-004"]
    assert res.returncode == 0, res.stdout[-3000:]
    desktops = cell.by_role("desktop")
    assert len(desktops) == 4 and all(
        d.outcome == "logged_on" and d.login_s and d.operations for d in desktops
    )
    x = cell.extra
    assert x["logon_sessions"] == 4 and 0 < x["logon_logon_p50_s"] <= x["logon_logon_p95_s"]
    assert "twin" in str(x["logon_profile_load_unmeasured"])
    assert _verdict(run, "session_storm-default-004").outcome is Outcome.PASS
