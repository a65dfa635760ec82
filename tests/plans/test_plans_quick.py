"""The 2007 plans, end to end on a small simulated lab, the way an engineer runs them (`labctl run`).

Each run gets its own loopback block, simulator state dir, lease folder and results folder.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from labctl.records.run_record import CellSummary, CellVerdict
from tests.labfiles import make_test_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LABCTL = [sys.executable, "-m", "labctl"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_") and k != "CI"}
    env["LABCTL_STATE_DIR"] = str(tmp_path / "state")
    env["LABCTL_LEASE_DIR"] = str(tmp_path / "leases")
    env["LABCTL_QUARANTINE_FILE"] = str(tmp_path / "quarantine.json")
    env["CI"] = "true"  # plain progress lines, as in a log
    return env


def _args(tmp_path: Path, lab: Path, *args: str) -> list[str]:
    return [*LABCTL, "run", *args, "--lab", str(lab), "--results-dir", str(tmp_path / "results")]


def _run(tmp_path: Path, lab: Path, *args: str, timeout_s: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _args(tmp_path, lab, *args), env=_env(tmp_path), capture_output=True, text=True, timeout=timeout_s
    )


def _run_folder(tmp_path: Path) -> Path:
    runs = sorted(p for p in (tmp_path / "results").iterdir() if (p / "run.json").exists())
    assert runs, "no run folder written"
    return runs[-1]


def _summaries(run: Path) -> dict[str, CellSummary]:
    return {
        p.parent.name: CellSummary.model_validate_json(p.read_text())
        for p in sorted((run / "cells").glob("*/summary.json"))
    }


def _verdict(run: Path, cell: str) -> CellVerdict:
    return CellVerdict.model_validate_json((run / "cells" / cell / "verdicts.json").read_text())


def _allure_results(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (run / "allure-results").glob("*-result.json")]


def _events(run: Path, kind: str) -> list[dict]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] == kind]


class Storm:
    """`labctl run boot_storm` in the background, read line by line until it reaches its window."""

    def __init__(self, tmp_path: Path, lab: Path, *extra: str, window_s: int = 7200, group: int = 4):
        self.proc = subprocess.Popen(
            _args(
                tmp_path,
                lab,
                "boot_storm",
                "--profile",
                "quick",
                "--param",
                f"group_sizes={group}",
                "--param",
                f"window_s={window_s}",
                "--param",
                f"ready_timeout_s={window_s}",
                *extra,
            ),
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.seen: list[str] = []
        self.group = group

    def wait_window(self, timeout_s: float = 120) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            self.seen.append(line)
            if "window" in line and f"{self.group}/{self.group} up" in line:
                return
            if not line and self.proc.poll() is not None:
                break
        self.proc.kill()
        pytest.fail("the storm never reached its window:\n" + "".join(self.seen[-30:]))

    def finish(self, timeout_s: float = 120) -> str:
        try:
            out, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("labctl run did not end:\n" + "".join(self.seen[-30:]))
        return "".join(self.seen) + out


def test_the_2007_set_in_its_quick_profile(tmp_path: Path) -> None:
    """boot storm, copy/reboot matrix and HA comparison in one run: every cell measured, judged,
    reported, and the standalone cells reused by the HA comparison."""
    lab = make_test_lab(tmp_path, clients=6)
    proc = _run(tmp_path, lab, "2007", "--profile", "quick")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = _run_folder(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert meta["outcome"] == "passed"

    cells = _summaries(run)
    storm = cells["boot_storm-standalone-005"]
    assert storm.parameters == {"group_size": 5} and storm.outcome == "pass"
    booted = {c.name: c for c in storm.clients.values() if c.boot_time_s is not None}
    assert sorted(booted) == [f"optiplex-00{i}" for i in range(1, 6)]
    # a diskless boot streams its image: longer than nothing, far shorter than the window
    assert all(20 < c.boot_time_s < 120 for c in booted.values())
    assert [p.name for p in storm.phases] == ["prepare", "window", "restore"]
    assert storm.entities["write_cache_disk"] == "pvs-01/D:"

    matrix = [c for c in cells.values() if c.scenario == "copy_reboot"]
    assert {c.parameters["copy_path"] for c in matrix} >= {"local_to_share", "share_to_local"}
    for c in matrix:
        assert len(c.by_role("copier")) == 2 and len(c.by_role("rebooter")) == 2
        assert all(x.copy_s and x.copy_s > 0 for x in c.by_role("copier"))
        assert c.extra["back_to_baseline_ts_s"] is not None, "the servers went quiet before the burst"

    # series are the servers' own counters, with source timestamps inside each cell
    with (run / "series.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["cell"] == "boot_storm-standalone-005"]
    cpu = [r for r in rows if r["source"] == "typeperf" and r["metric"] == "cpu_pct"]
    assert len(cpu) >= 48, "typeperf samples every 2 lab seconds over the 120 s window, none dropped"
    assert storm.window is not None
    assert storm.window.start_ts_s - 60 <= float(cpu[0]["source_ts_s"]) <= storm.window.end_ts_s
    cpu_summary = storm.metric("typeperf", "pvs-01", "cpu_pct")
    assert cpu_summary is not None and cpu_summary.expected_interval_s == 2.0 and cpu_summary.coverage

    # HA comparison: both configurations side by side for the same cells
    with (run / "ha_comparison.csv").open() as f:
        side = list(csv.DictReader(f))
    assert {r["cell"] for r in side} == {"boot storm 5", "copy/reboot 2x2 share_to_local"}
    assert all(r["boot_time_mean_s_standalone"] and r["boot_time_mean_s_ha"] for r in side)
    # the write-cache disk queue of each configuration's own write-cache volume
    assert all(r["disk_queue_peak_standalone"] and r["disk_queue_peak_ha"] for r in side), side

    # junit.xml: every cell of the three plans, one suite per plan (it held the last plan's only)
    root = ET.parse(run / "junit.xml").getroot()
    assert {c.get("name") for c in root.iter("testcase")} == set(cells)
    assert {s.get("name") for s in root.iter("testsuite")} == {"boot_storm", "copy_reboot", "ha_comparison"}

    # Allure: one case per cell, labelled epic = plan, feature = scenario, story = cell
    results = _allure_results(run)
    labels = [{lab_["name"]: lab_["value"] for lab_ in r["labels"]} for r in results]
    stories = {(lb.get("epic"), lb.get("story")) for lb in labels}
    assert ("boot_storm", "boot_storm-standalone-001") in stories
    assert any(lb.get("epic") == "ha_comparison" and "ha" in lb.get("story", "") for lb in labels)
    assert (run / "allure-results" / "environment.properties").read_text().count("sim-2007") >= 1
    assert (run / "allure-results" / "categories.json").exists()
    # the report is built; its figures read the typed summaries once rec-sinks' readers are merged
    figures = (run / "report" / "figures.html").read_text()
    assert "boot_storm-standalone-005" in figures


def test_a_client_that_never_wakes_is_a_lab_fault_and_the_others_are_measured(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=5, faults="- {kind: client_never_wakes, targets: [optiplex-002]}")
    proc = _run(tmp_path, lab, "boot_storm", "--profile", "quick", "--param", "group_sizes=5", "--no-report")
    assert proc.returncode == 1, proc.stdout[-3000:]
    run = _run_folder(tmp_path)
    cell = _summaries(run)["boot_storm-standalone-005"]
    assert cell.outcome == "lab_fault"
    assert [c.name for c in cell.clients.values() if c.outcome != "ready"] == ["optiplex-002"]
    assert all(c.boot_time_s for n, c in cell.clients.items() if n != "optiplex-002")
    verdict = _verdict(run, "boot_storm-standalone-005")
    fault = next(c for c in verdict.criteria if c.outcome == "lab_fault")
    assert fault.missing == ["optiplex-002"]
    assert "optiplex-002" in cell.reason
    # Allure sees a broken (lab fault), not a failed (threshold) test, with the reason as message
    (result,) = [r for r in _allure_results(run) if "/boot_storm/boot_storm-" in r["fullName"]]
    assert result["status"] == "broken"
    assert "optiplex-002" in result["statusDetails"]["message"]


def test_a_streaming_server_that_refuses_ssh_is_named_in_the_reason(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=3, faults="- {kind: ssh_refuse_auth, targets: [pvs-01]}")
    proc = _run(tmp_path, lab, "boot_storm", "--profile", "quick", "--param", "group_sizes=3", "--no-report")
    assert proc.returncode == 1, proc.stdout[-3000:]
    cell = _summaries(_run_folder(tmp_path))["boot_storm-standalone-003"]
    assert cell.outcome == "lab_fault"
    # the server and what it did come first, not "3 of 3 clients never reported boot_time_s": the
    # failing endpoint (named with its reads) and the wire's reason, then the streaming server's part
    assert cell.reason.startswith("server pvs-01 "), cell.reason
    assert "authentication failed" in cell.reason.split(";")[0], cell.reason
    assert "streaming server pvs-01" in cell.reason, cell.reason
    assert "pvs-01" in cell.clients["optiplex-001"].detail


def test_a_failed_restore_keeps_the_measured_verdict_and_is_a_lab_fault(tmp_path: Path) -> None:
    # optiplex-002 boots and streams (its figures come from the streaming server) but refuses the
    # SSH login that shuts it down again
    lab = make_test_lab(tmp_path, clients=3, faults="- {kind: ssh_refuse_auth, targets: [optiplex-002]}")
    proc = _run(
        tmp_path,
        lab,
        "boot_storm",
        "--profile",
        "quick",
        "--param",
        "group_sizes=3",
        "--param",
        "window_s=120",
        "--no-report",
    )
    run = _run_folder(tmp_path)
    cell = _summaries(run)["boot_storm-standalone-003"]
    verdict = _verdict(run, "boot_storm-standalone-003")
    # the measured verdict is kept; a client left on is never a silent green (restore_failure:
    # lab_fault by default): the cell is a lab fault naming it, the run exits 1
    assert verdict.outcome == "pass" and cell.outcome == "lab_fault", cell.reason
    assert cell.restore is not None and not cell.restore.ok and cell.restore.left_on == ["optiplex-002"]
    assert "restore failed" in cell.reason and "optiplex-002" in cell.reason
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "optiplex-002" in proc.stdout + proc.stderr, "the end-of-session restore says what it left on"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c(tmp_path: Path, sig: signal.Signals) -> None:
    """The run started its own simulator: it is stopped, the cell is interrupted everywhere, the
    clients are restored (on the timeline), and a second run meanwhile was refused the lab."""
    from labctl.sim.simlab import SimNotRunningError, SimulatedLab

    lab = make_test_lab(tmp_path, clients=4)
    storm = Storm(tmp_path, lab)
    storm.wait_window()
    if sig is signal.SIGTERM:  # one run owns the lab: a second one is refused, naming the holder
        other = _run(
            tmp_path,
            lab,
            "boot_storm",
            "--profile",
            "quick",
            "--param",
            "group_sizes=4",
            "--no-report",
            timeout_s=60,
        )
        assert other.returncode == 2, other.stdout[-2000:] + other.stderr[-2000:]
        err = [line for line in other.stderr.splitlines() if line.strip()]
        assert (
            len(err) == 1 and "lab:sim-2007 is leased by" in err[0] and f"pid {storm.proc.pid}" in err[0]
        ), err
    storm.proc.send_signal(sig)
    out = storm.finish()
    assert storm.proc.returncode == 130, out[-3000:]

    run = _run_folder(tmp_path)
    assert json.loads((run / "run.json").read_text())["outcome"] == "interrupted"
    cell = _summaries(run)["boot_storm-standalone-004"]
    assert cell.outcome == "interrupted" and sig.name in cell.reason
    assert cell.metric("typeperf", "pvs-01", "cpu_pct") is not None, "what was measured is kept"
    assert not (run / "cells" / "boot_storm-standalone-004" / "verdicts.json").exists(), (
        "no verdict on half a window"
    )
    (result,) = [r for r in _allure_results(run) if "/boot_storm/boot_storm-" in r["fullName"]]
    assert result["status"] == "broken" and sig.name in result["statusDetails"]["message"]
    restores = _events(run, "restore.end")
    assert restores and restores[0]["detail"]["ok"] is True, restores
    assert cell.restore is not None and cell.restore.ok
    with pytest.raises(SimNotRunningError):  # the simulator this run started is gone
        SimulatedLab.attach(tmp_path / "state")


def test_ctrl_c_keeps_the_measurements_and_returns_the_clients_to_s5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.power import State
    from labctl.lab.session import LabSession
    from labctl.sim.simlab import SimulatedLab

    lab_file = make_test_lab(tmp_path, clients=4)
    with SimulatedLab(lab_file, state_dir=tmp_path / "state") as sim:
        storm = Storm(tmp_path, lab_file)
        storm.wait_window()
        storm.proc.send_signal(signal.SIGINT)
        out = storm.finish()
        assert storm.proc.returncode == 130, out[-3000:]
        run = _run_folder(tmp_path)
        assert json.loads((run / "run.json").read_text())["outcome"] == "interrupted"
        assert _summaries(run)["boot_storm-standalone-004"].outcome == "interrupted"
        # this process checks the power states itself, with the simulator's credentials
        monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        with LabSession(sim.lab, sim.clock) as s:
            states = s.power.state([m.name for m in s.lab.clients])
        assert {n: st.state for n, st in states.items()} == {n: State.OFF for n in states}


def test_a_second_ctrl_c_stops_waiting_for_the_restore_and_says_what_is_left_on(tmp_path: Path) -> None:
    # a slower lab clock (5x), so the restore is still waiting when the second Ctrl-C comes
    lab_file = make_test_lab(tmp_path, clients=3, time_scale=5)
    storm = Storm(tmp_path, lab_file, "--no-report", group=3)
    storm.wait_window(timeout_s=180)
    storm.proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    storm.proc.send_signal(signal.SIGINT)
    out = storm.finish()
    assert storm.proc.returncode == 130, out[-3000:]
    assert "not waiting for the restore" in out
    said = [line for line in out.splitlines() if "restore abandoned" in line]
    assert said and all(f"optiplex-00{i}" in said[0] for i in (1, 2, 3)), out[-3000:]
    cell = _summaries(_run_folder(tmp_path))["boot_storm-standalone-003"]
    assert cell.outcome == "interrupted" and "during window" in cell.reason
    assert cell.restore is not None and not cell.restore.ok and cell.restore.left_on


def test_a_power_change_the_run_did_not_make_fails_the_cell_as_a_lab_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.session import LabSession
    from labctl.sim.simlab import SimulatedLab

    lab_file = make_test_lab(tmp_path, clients=3)
    with SimulatedLab(lab_file, state_dir=tmp_path / "state") as sim:
        storm = Storm(tmp_path, lab_file, "--no-report", window_s=1200, group=2)
        storm.wait_window()
        monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        with LabSession(sim.lab, sim.clock) as s:  # someone else, from another shell
            assert s.power.off(["optiplex-001"], force=True).ok
            assert s.power.on(["optiplex-003"]).ok
        out = storm.finish(timeout_s=200)
    assert storm.proc.returncode == 1, out[-3000:]
    run = _run_folder(tmp_path)
    cell = _summaries(run)["boot_storm-standalone-002"]
    assert cell.outcome == "lab_fault"
    assert "power changed outside the run" in cell.reason
    assert "optiplex-001" in cell.reason and "optiplex-003" in cell.reason
    assert {e["target"] for e in _events(run, "power.unexpected")} == {"optiplex-001", "optiplex-003"}


def test_the_simulated_lab_going_down_in_a_window_is_a_lab_fault_not_a_pass(tmp_path: Path) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab_file = make_test_lab(tmp_path, clients=3)
    sim = SimulatedLab(lab_file, state_dir=tmp_path / "state").start()
    try:
        storm = Storm(
            tmp_path, lab_file, "--no-report", "--param", "restore_timeout_s=30", window_s=1200, group=2
        )
        storm.wait_window()
    finally:
        sim.stop()  # `labctl sim down` from another shell
    out = storm.finish(timeout_s=200)
    assert storm.proc.returncode == 1, out[-3000:]
    cell = _summaries(_run_folder(tmp_path))["boot_storm-standalone-002"]
    assert cell.outcome == "lab_fault", cell.reason
    # what went away is named first: the lab's endpoints stopped answering (the streaming server's
    # counters, the BMC), or, when they are read between polls, the clients' power changing under it
    reason = cell.reason
    assert ("failed" in reason and "reads" in reason and "pvs-01" in reason) or (
        "power changed outside the run" in reason and "optiplex-001" in reason
    ), reason


def test_another_simulated_lab_already_up_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from labctl.sim.simlab import SimulatedLab

    up = make_test_lab(tmp_path, clients=2, name="up.yaml")
    other = make_test_lab(tmp_path, clients=2, name="other.yaml")
    with SimulatedLab(up, state_dir=tmp_path / "state"):
        proc = _run(
            tmp_path, other, "boot_storm", "--profile", "quick", "--param", "group_sizes=1", "--no-report"
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert "a simulated lab is already running" in out and "labctl sim down" in out
    assert "Traceback" not in out


def test_a_killed_run_still_shows_what_it_measured(tmp_path: Path) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab_file = make_test_lab(tmp_path, clients=3)
    with SimulatedLab(lab_file, state_dir=tmp_path / "state"):
        storm = Storm(tmp_path, lab_file, group=2)
        storm.wait_window()
        time.sleep(1.0)  # a few more samples
        storm.proc.kill()
        storm.finish()
    run = _run_folder(tmp_path)
    assert json.loads((run / "run.json").read_text())["outcome"] == "running"
    cell = _summaries(run)["boot_storm-standalone-002"]
    assert cell.outcome == "interrupted" and "killed" in cell.reason
    report = subprocess.run(
        [*LABCTL, "report", str(run)], env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    figures = (run / "report" / "figures.html").read_text()
    assert "boot_storm-standalone-002" in figures
