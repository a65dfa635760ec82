"""The VSI plans end to end on a small simulated VDI lab, as an engineer runs them (`labctl run`):
vCenter powers the desktops, the launchers' far side logs users on from the twin, the Unity
simulator reports the array, and the cell is judged by the plan's criteria."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records.run_record import Outcome
from labctl.report.headline import headline_text
from tests.plans.test_plans_quick import _run, _run_folder, _summaries, _verdict
from tests.vsi.labs import vdi_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_vdi_storm_quick_20_pct_prebooted(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=5)
    res = _run(
        tmp_path, lab, "vdi_storm", "--profile", "quick", "--param", "prebooted_pcts=20", timeout_s=600
    )
    run = _run_folder(tmp_path)
    cell = _summaries(run)["vdi_storm-default-020"]
    assert [p.name for p in cell.phases] == [
        "prepare",
        "boot",
        "idle",
        "login",
        "steady",
        "logoff",
        "restore",
    ]
    # one desktop pre-booted, four booted by the broker as their users arrived; all logged on
    assert cell.extra["booted_on_demand"] == 4 and cell.extra["failed_sessions"] == 0
    desktops = cell.by_role("desktop")
    assert len(desktops) == 5 and all(d.login_s and d.operations for d in desktops)
    # the launchers' far side reports each logon's waterfall from the twin (one phase, the rest unmeasured)
    assert cell.extra["logon_sessions"] == 5 and cell.extra["logon_logon_p95_s"]
    assert "twin" in str(cell.extra["logon_profile_load_unmeasured"])
    # the array's figures per phase, and the index with its baseline
    phases = {f.phase for f in cell.phase_figures}
    assert {"boot", "login", "steady", "logoff"} <= phases
    assert cell.response_index is not None and cell.response_index.baseline_s
    assert cell.response_index.good + cell.response_index.fair + cell.response_index.poor == 5
    v = _verdict(run, "vdi_storm-default-020")
    assert v["storage latency"].outcome is Outcome.PASS
    assert v["no poor desktop"].outcome is Outcome.PASS
    assert v["interactive operations p95"].window is not None  # judged over the steady phase only
    steady = next(p for p in cell.phases if p.name == "steady")
    assert v["interactive operations p95"].window.start_ts_s == pytest.approx(steady.start_ts_s)
    assert res.returncode in (0, 1), res.stdout[-2000:]
    # the terminal reads as the figures and certificate do: the index's headline under the verdict
    lines = res.stdout.splitlines()
    said = f"vdi_storm-default-020: {cell.outcome.value.replace('_', ' ').upper()}"
    at = next(i for i, line in enumerate(lines) if line.startswith(said))
    assert lines[at + 1].strip() == f"index: {headline_text(cell.response_index)}", lines[at : at + 2]


def test_scale_out_quick_one_array_then_two(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=6, arrays=2)
    res = _run(tmp_path, lab, "scale_out", "--profile", "quick", timeout_s=600)
    run = _run_folder(tmp_path)
    cells = _summaries(run)
    one, two = cells["scale_out-default-001"], cells["scale_out-default-002"]
    # the first array's desktops (half of them), then both arrays' with their hosts
    assert one.extra["sessions"] == 3 and two.extra["sessions"] == 6
    # each array of a cell carries its share and gets its ratio against the one-array cell
    ratios = {a.name: a.scaling_ratio for a in two.by_role("array")}
    assert set(ratios) == {"arr-1", "arr-2"} and all(r is not None and r > 0 for r in ratios.values())
    assert one.by_role("array")[0].scaling_ratio == pytest.approx(1.0)
    v = _verdict(run, "scale_out-default-002")
    assert v["near-linear scaling"].outcome is Outcome.PASS, v["near-linear scaling"]
    assert res.returncode in (0, 1), res.stdout[-2000:]


def test_write_cache_modes_quick_disk_against_ram(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=4, ram_pool=True)
    res = _run(tmp_path, lab, "write_cache_modes", "--profile", "quick", timeout_s=600)
    run = _run_folder(tmp_path)
    cells = _summaries(run)
    host = {
        pool: next(
            f for f in cells[f"write_cache_modes-default-{pool}"].phase_figures if f.array == f"pool:{pool}"
        )
        for pool in ("disk", "ram")
    }
    assert all(f.samples > 0 and f.iops_per_desktop is not None for f in host.values())
    # a RAM cache absorbs the writes that fit it: the hosts issue far fewer IOPS per user to disk
    assert host["ram"].iops_per_desktop < 0.5 * host["disk"].iops_per_desktop, host
    assert res.returncode in (0, 1), res.stdout[-2000:]


def test_users_who_never_got_a_session_are_poor_desktops_and_fail_the_cell(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=4)
    quick = ("--profile", "quick", "--param", "prebooted_pcts=25", "--param", "login_timeout_s=20")
    _run(tmp_path, lab, "vdi_storm", *quick, "--param", "steady_s=60", "--param", "steady_settle_s=0")
    run = _run_folder(tmp_path)
    cell = _summaries(run)["vdi_storm-default-025"]
    # three desktops had to boot for their users: not within the 20 s the logons were given
    assert cell.extra["failed_sessions"] >= 1
    unserved = [c for c in cell.by_role("desktop") if c.outcome == "no_session"]
    # (a user whose logon was still running at the timeout has a session, judged by its index)
    assert 1 <= len(unserved) <= cell.extra["failed_sessions"] and all(c.ux_level == 2 for c in unserved)
    assert len(cell.by_role("desktop")) == 4
    assert _verdict(run, "vdi_storm-default-025")["no poor desktop"].outcome is Outcome.FAIL
