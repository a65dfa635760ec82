"""The session_storm plan for real (issue 24): `labctl run session_storm --profile quick` on a lab
file whose four desktops are xrdp sessions on loopback, reached through `labctl launcher` (FreeRDP
under Xvfb) over a real OpenSSH server, with govmomi's vcsim as the lab's vCenter; then the run
folder is read: the desktops logged on with real logon times and operations, the logon waterfall's
percentiles, the phases' and operations' samples in series.csv, the plan's criteria judged.

The lab's array has no API on this machine: the run records the sources the cell needs
(``--param record_sources=[vcenter]``; the sessions' own series come from the launchers)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from labctl.records.run_record import CellSummary, CellVerdict, Outcome
from tests.realsessions.conftest import REPO, lab_file

CELL = "session_storm-default-004"


def test_a_real_session_storm_fills_the_run_folder(rdp_lab, daemon_factory, sshd, vcsim, tmp_path):
    port, key = sshd
    cfg = rdp_lab.launcher_config("launcher-ssh")
    daemon_factory(cfg)
    vc = (
        f"{{name: vc-01, url: '{vcsim.url}', user: {vcsim.user}, password: 'env:LABCTL_TEST_VC_PASSWORD',"
        " tls: {mode: insecure}}"
    )
    lab = lab_file(tmp_path, port, cfg, vcenter=vc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_") and k != "CI"}
    env.update(
        PYTHONPATH=str(REPO),
        CI="true",  # plain progress lines
        LABCTL_TEST_LAUNCHER_KEY=str(key),
        LABCTL_TEST_VC_PASSWORD=vcsim.password,
        LABCTL_STATE_DIR=str(tmp_path / "state"),
        LABCTL_LEASE_DIR=str(tmp_path / "leases"),
        LABCTL_QUARANTINE_FILE=str(tmp_path / "quarantine.json"),
    )
    results = tmp_path / "results"
    # fmt: off
    args = [
        sys.executable, "-m", "labctl", "run", "session_storm", "--lab", str(lab), "--profile", "quick",
        "--param", "user_format=lcrdp{n}", "--param", "record_sources=[vcenter]", "--param", "steady_s=10",
        "--results-dir", str(results), "--no-report", "--no-store",
        "--junitxml", str(tmp_path / "junit.xml"),
    ]
    # fmt: on
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-3000:])
    run = next(p for p in results.iterdir() if (p / "run.json").exists())
    cell = CellSummary.model_validate_json((run / "cells" / CELL / "summary.json").read_text())

    # four real sessions logged on (their workload reported in), timed, worked, logged off
    desktops = cell.by_role("desktop")
    assert sorted(d.name for d in desktops) == ["desk1", "desk2", "desk3", "desk4"]
    assert all(d.outcome == "logged_on" and d.login_s and d.login_s > 0 and d.operations for d in desktops)
    assert cell.extra["logged_on"] == 4 and cell.extra["failed_sessions"] == 0
    assert [p.name for p in cell.phases] == ["prepare", "login", "steady", "logoff"]
    # the waterfall: what RDP measures, and what it cannot with the reason
    x = cell.extra
    assert x["logon_sessions"] == 4 and 1 <= x["logon_concurrent_max"] <= 4
    assert 0 < x["logon_protocol_connect_p50_s"] <= x["logon_protocol_connect_p95_s"] < x["logon_total_p95_s"]
    assert x["logon_first_operation_p95_s"] > 0 and x["logon_shell_ready_p95_s"] is not None
    assert "logon_profile_load_unmeasured" in x and "logon_machine_ready_unmeasured" in x
    assert cell.response_index is not None and cell.response_index.points

    # series.csv: the phases' samples at each launch, the operations, the hosts from vCenter
    with (run / "series.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["cell"] == CELL]
    keys = {(r["source"], r["metric"]) for r in rows}
    assert {("sessions", "logon_protocol_connect_s"), ("sessions", "logon_total_s")} <= keys
    assert ("sessions", "response_s") in keys and ("sessions", "active_sessions") in keys
    assert any(s == "vcenter" for s, _ in keys)
    assert not any(s == "unity" for s, _ in keys)  # the array was not asked for
    assert sum(1 for r in rows if r["metric"] == "logon_total_s") == 4

    # judged by the plan's criteria; the terminal and JUnit agree
    v = CellVerdict.model_validate_json((run / "cells" / CELL / "verdicts.json").read_text())
    assert v.outcome is Outcome.PASS, v
    by = {c.name: c for c in v.criteria}
    assert by["every desktop logged on"].outcome is Outcome.PASS
    assert by["logon time p95"].outcome is Outcome.PASS
    assert "1 passed" in r.stdout
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    assert suite.get("failures") == "0" and suite.get("errors") == "0" and suite.get("tests") == "1"
