"""The 2007 plans, end to end on a small simulated lab, the way an engineer runs them (`labctl run`).

Each run gets its own loopback block, simulator state dir and results folder.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.labfiles import make_test_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LABCTL = [sys.executable, "-m", "labctl"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_")}
    env["LABCTL_STATE_DIR"] = str(tmp_path / "state")
    return env


def _run(tmp_path: Path, lab: Path, *args: str, timeout_s: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LABCTL, "run", *args, "--lab", str(lab), "--results-dir", str(tmp_path / "results")],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def _run_folder(tmp_path: Path) -> Path:
    runs = sorted(p for p in (tmp_path / "results").iterdir() if (p / "run.json").exists())
    assert runs, "no run folder written"
    return runs[-1]


def _summaries(run: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((run / "cells").glob("*/summary.json"))}


def _allure_results(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (run / "allure-results").glob("*-result.json")]


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
    assert storm["group_size"] == 5
    booted = {n: c for n, c in storm["clients"].items() if c["boot_time_s"] is not None}
    assert sorted(booted) == [f"optiplex-00{i}" for i in range(1, 6)]
    # a diskless boot streams its image: longer than nothing, far shorter than the window
    assert all(20 < c["boot_time_s"] < 120 for c in booted.values())

    matrix = [c for c in cells.values() if c.get("scenario") == "copy_reboot"]
    assert {c["copy_path"] for c in matrix} >= {"local_to_share", "share_to_local"}
    for c in matrix:
        roles = [v["role"] for v in c["clients"].values()]
        assert roles.count("copier") == 2 and roles.count("rebooter") == 2
        assert all(v["copy_s"] and v["copy_s"] > 0 for v in c["clients"].values() if v["role"] == "copier")

    # series are the servers' own counters, with source timestamps inside each cell
    with (run / "series.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["cell"] == "boot_storm-standalone-005"]
    cpu = [r for r in rows if r["source"] == "typeperf" and r["metric"] == "cpu_pct"]
    assert len(cpu) >= 5
    assert storm["storm_start_ts_s"] - 60 <= float(cpu[0]["source_ts_s"]) <= storm["storm_start_ts_s"] + 400

    # HA comparison: both configurations side by side for the same cells
    with (run / "ha_comparison.csv").open() as f:
        side = list(csv.DictReader(f))
    assert {r["cell"] for r in side} == {"boot storm 5", "copy/reboot 2x2 share_to_local"}
    assert all(r["boot_time_mean_s_standalone"] and r["boot_time_mean_s_ha"] for r in side)
    # the write-cache disk queue of each configuration's own write-cache volume
    assert all(r["disk_queue_peak_standalone"] and r["disk_queue_peak_ha"] for r in side), side

    # Allure: one case per cell, labelled epic = plan, feature = scenario, story = cell
    results = _allure_results(run)
    labels = [{lab_["name"]: lab_["value"] for lab_ in r["labels"]} for r in results]
    stories = {(lb.get("epic"), lb.get("story")) for lb in labels}
    assert ("boot_storm", "boot_storm-standalone-001") in stories
    assert any(lb.get("epic") == "ha_comparison" and "ha" in lb.get("story", "") for lb in labels)
    assert (run / "allure-results" / "environment.properties").read_text().count("sim-2007") >= 1
    assert (run / "allure-results" / "categories.json").exists()
    figures = (run / "report" / "figures.html").read_text()
    assert "<svg" in figures or "data:image/png" in figures


def test_a_client_that_never_wakes_is_a_lab_fault_and_the_others_are_measured(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=5, faults="- {kind: client_never_wakes, targets: [optiplex-002]}")
    proc = _run(tmp_path, lab, "boot_storm", "--profile", "quick", "--param", "group_sizes=5", "--no-report")
    assert proc.returncode == 1, proc.stdout[-3000:]
    run = _run_folder(tmp_path)
    cell = _summaries(run)["boot_storm-standalone-005"]
    assert cell["never_ready"] == ["optiplex-002"]
    assert all(c["boot_time_s"] for n, c in cell["clients"].items() if n != "optiplex-002")
    verdicts = json.loads((run / "cells" / "boot_storm-standalone-005" / "verdicts.json").read_text())
    assert verdicts["outcome"] == "lab_fault"
    fault = next(c for c in verdicts["criteria"] if c["outcome"] == "lab_fault")
    assert fault["missing"] == ["optiplex-002"]
    # Allure sees a broken (lab fault), not a failed (threshold) test
    (result,) = [r for r in _allure_results(run) if "test_boot_storm" in r["fullName"]]
    assert result["status"] == "broken"
    assert "optiplex-002" in result["statusDetails"]["message"]


def test_ctrl_c_in_a_storm_keeps_the_measurements_and_returns_the_clients_to_s5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.power import State
    from labctl.lab.session import LabSession
    from labctl.sim.lab import SimulatedLab

    lab_file = make_test_lab(tmp_path, clients=4)
    env = _env(tmp_path)
    with SimulatedLab(lab_file, state_dir=tmp_path / "state") as sim:
        proc = subprocess.Popen(
            [
                *LABCTL,
                "run",
                "boot_storm",
                "--lab",
                str(lab_file),
                "--results-dir",
                str(tmp_path / "results"),
                "--profile",
                "quick",
                "--param",
                "group_sizes=4",
                "--param",
                "window_s=7200",
                "--param",
                "ready_timeout_s=7200",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if "window" in line and "4/4 up" in line:
                break
        else:
            proc.kill()
            pytest.fail("the storm never reached its window:\n" + "".join(seen[-30:]))
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("labctl run did not end after Ctrl-C")
        assert proc.returncode == 130, out[-3000:]
        run = _run_folder(tmp_path)
        assert json.loads((run / "run.json").read_text())["outcome"] == "interrupted"
        with (run / "series.csv").open() as f:
            cpu = [r for r in csv.DictReader(f) if r["metric"] == "cpu_pct"]
        assert cpu, "the samples taken before Ctrl-C are kept"
        cell = _summaries(run)["boot_storm-standalone-004"]
        assert cell["outcome"] == "interrupted" and "KeyboardInterrupt" in cell["error"]
        assert any(k.endswith("/cpu_pct") for k in cell["metrics"]), (
            "the cell's partial summary has its counters"
        )
        assert (run / "report" / "figures.html").exists(), "the report is still built"
        # this process checks the power states itself, with the simulator's credentials (a fresh
        # clone has no default secrets file: nothing ran `labctl sim up` there)
        monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        with LabSession(sim.lab, sim.clock) as s:
            states = s.power.state([m.name for m in s.lab.clients])
        assert {n: st.state for n, st in states.items()} == {n: State.OFF for n in states}
