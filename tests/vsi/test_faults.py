"""A VDI storm whose lab fails around it: every cell still ends with its record (summary, verdict,
JUnit case, Allure result), as a lab fault whose reason names the failing thing.

Each test runs `labctl run vdi_storm` on a small simulated VDI lab (three desktops, 60x) with a
short profile, and injects its failure on the wire: a vCenter killed mid-storm, a BMC answering
503 or hanging (the simulated iDRAC), an array controller failing over, an ESXi host entering
maintenance, a full datastore, logons that fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labctl.records.run_record import CellSummary, Outcome
from tests.plans.test_plans_quick import (
    _allure_results,
    _args,
    _env,
    _events,
    _run_folder,
    _summaries,
    _verdict,
)
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
    """The cell's summary, with its verdicts (unless interrupted: no verdict on half a window), a
    JUnit case and an Allure result beside it, and run.json finalised."""
    summary = _summaries(run)[cell]
    if summary.outcome is not Outcome.INTERRUPTED:
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
    run = VdiRun(tmp_path, lab, "--param", "steady_s=300")
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


def test_bmcs_answering_503_or_hanging_are_lab_faults_named_and_the_healthy_bmc_keeps_its_samples(
    tmp_path: Path,
) -> None:
    faults = "- {kind: bmc_503, targets: [infra-01]}\n- {kind: bmc_hang, targets: [infra-02]}"
    # 20x: a wall hiccup of the loaded test machine costs a third of the lab seconds it would at 60x
    lab = vdi_lab(tmp_path, desktops=3, bmcs=3, faults=faults, time_scale=20)
    code, out = _run_vdi(tmp_path, lab, "--param", "steady_s=120")
    assert code == 1, out[-3000:]
    folder = _run_folder(tmp_path)
    cell = _cell_record_complete(folder)
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert "BMC infra-01 failed" in cell.reason and "BMC infra-02 failed" in cell.reason, cell.reason
    errors = {e["target"]: e["detail"]["error"] for e in _events(folder, "source.error")}
    assert "no answer" in errors["infra-02"], errors  # the hanging one
    # (a 503 is retried with the Retry-After it gives: its read may still be out at the end)
    assert "503" in errors["infra-01"] or "no answer" in errors["infra-01"], errors
    healthy = cell.metric("redfish", "infra-03", "power_w")
    assert healthy is not None and healthy.coverage is not None and healthy.coverage >= 0.9, healthy
    assert _verdict(folder, CELL).criteria, "the measured criteria are still judged"


def test_a_host_in_maintenance_a_controller_failover_and_failed_logons_are_lab_faults_named(
    tmp_path: Path,
) -> None:
    faults = (
        "- {kind: host_in_maintenance, targets: [esx-vdi-02]}\n"
        "- {kind: array_controller_failover, targets: [arr-1]}\n"
        "- {kind: session_login_fails, targets: [d-0002]}"
    )
    lab = vdi_lab(tmp_path, desktops=3, faults=faults)
    # and a results store that is not there (nothing listens on port 9): the run goes on without it
    store = "postgresql://labctl@127.0.0.1:9/labctl?connect_timeout=5"
    code, out = _run_vdi(tmp_path, lab, "--param", "steady_s=120", "--store", store)
    assert code == 1, out[-3000:]
    folder = _run_folder(tmp_path)
    cell = _cell_record_complete(folder)
    assert {e["target"] for e in _events(folder, "sink.error")} == {"StoreSink"}, "the store failure is kept"
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert "ESXi host esx-vdi-02 entered maintenance mode" in cell.reason, cell.reason
    assert "logon failed on 1 desktop(s) (d-0002)" in cell.reason, cell.reason
    assert "array controller arr-1/ctrl:" in cell.reason and "failed at" in cell.reason, cell.reason
    assert "Traceback" not in out


def test_a_full_datastore_is_named_not_the_sessions_that_could_not_log_off(tmp_path: Path) -> None:
    lab = vdi_lab(tmp_path, desktops=3, faults="- {kind: datastore_full, targets: [ds-1]}")
    code, out = _run_vdi(tmp_path, lab, "--param", "steady_s=120", "--param", "boot_timeout_s=120")
    assert code == 1, out[-3000:]
    cell = _cell_record_complete(_run_folder(tmp_path))
    assert cell.outcome is Outcome.LAB_FAULT, cell.reason
    assert cell.reason.startswith("datastore ds-1 is full"), cell.reason
    assert "streaming server" not in cell.reason, cell.reason


# --- interrupts and kills leave nothing behind ------------------------------------------------------


def _sessions_running(sim: object, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Session -> desktop for every session the launchers still run (their whole journal)."""
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.launchers import SessionState, open_launchers
    from labctl.lab.session import LabSession

    monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))  # type: ignore[attr-defined]
    latest = {}
    with LabSession(sim.lab, sim.clock) as s:  # type: ignore[attr-defined]
        launchers = open_launchers(s)
        try:
            for ln in launchers.launchers.values():
                for e in launchers.backend(ln).events(ln, 0).sessions:
                    latest[e.session] = e
        finally:
            launchers.close()
    done = (SessionState.ENDED, SessionState.FAILED)
    return {sid: e.desktop for sid, e in latest.items() if e.state not in done}


def test_a_double_ctrl_c_keeps_the_cells_record_and_logs_the_sessions_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab = vdi_lab(tmp_path, desktops=3)
    with SimulatedLab(lab, state_dir=tmp_path / "state") as sim:
        run = VdiRun(tmp_path, lab, "--param", "steady_s=3600")
        run.wait_for("steady")
        assert len(_sessions_running(sim, monkeypatch)) == 3
        run.proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        run.proc.send_signal(signal.SIGINT)
        out = run.finish()
        assert run.proc.returncode == 130, out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        cell = _cell_record_complete(_run_folder(tmp_path))
        assert cell.outcome is Outcome.INTERRUPTED and "killed?" not in cell.reason, cell.reason
        # the sessions were told to log off on the way out: none is left for the next storm
        deadline = time.monotonic() + 60
        while (left := _sessions_running(sim, monkeypatch)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not left, left


def test_sessions_a_killed_run_left_are_logged_off_and_never_counted_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab = vdi_lab(tmp_path, desktops=3)
    with SimulatedLab(lab, state_dir=tmp_path / "state") as sim:
        first = VdiRun(tmp_path, lab, "--param", "steady_s=3600")
        first.wait_for("steady")
        os.kill(first.proc.pid, signal.SIGKILL)  # no teardown: its three sessions stay on
        first.proc.wait(timeout=30)
        left = _sessions_running(sim, monkeypatch)
        assert len(left) == 3
        for p in (tmp_path / "results").iterdir():  # the next run's folder is the only one
            if p.is_dir():
                p.rename(tmp_path / f"killed-{p.name}")
        _, out = _run_vdi(tmp_path, lab, "--param", "steady_s=120")
        assert "3 sessions this storm did not start" in out, out[-3000:]
        assert "found 3 desktop(s) on before the storm" in out, out[-3000:]  # a dirty lab is said
        cell = _summaries(_run_folder(tmp_path))[CELL]
        assert cell.extra["leftover_sessions"] == 3 and cell.extra["sessions"] == 3, cell.extra
        assert cell.extra["desktops_found_on"] == 3, cell.extra
        assert not set(left) & {c.name for c in cell.clients.values()}
        assert "did not start" not in cell.reason, cell.reason  # cleaned before the storm: no fault
        assert not _sessions_running(sim, monkeypatch)


# --- a full results disk ------------------------------------------------------------------------------


@contextlib.contextmanager
def _small_disk(path: Path, size_kb: int, file_kb: int) -> Iterator[Callable[[], None] | None]:
    """``path`` on a tmpfs of ``size_kb`` (a disk that fills up: every new write fails with
    ENOSPC), yielding None; where mounting is not allowed, yields a ``preexec_fn`` that caps every
    file the run writes at ``file_kb`` instead (RLIMIT_FSIZE: a write past it fails with EFBIG)."""
    path.mkdir(parents=True)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)], capture_output=True
        ).returncode
        == 0
    )
    if mounted:
        try:
            yield None
        finally:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)
        return

    def cap() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the run
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_kb * 1024, file_kb * 1024))

    yield cap


def test_a_full_results_disk_ends_the_run_with_one_line_and_run_json_finalised(tmp_path: Path) -> None:
    from labctl.sim.simlab import SimulatedLab

    lab = vdi_lab(tmp_path, desktops=3)
    disk = tmp_path / "disk"
    with SimulatedLab(lab, state_dir=tmp_path / "state"), _small_disk(disk, 256, 48) as cap:
        env = {**_env(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
        args = [*_args(tmp_path, lab, "vdi_storm", *SHORT, "--param", "steady_s=300")]
        args[args.index("--results-dir") + 1] = str(disk / "results")
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=400, preexec_fn=cap)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, out[-3000:]
        assert "Traceback" not in out, out[-5000:]
        said = [line for line in out.splitlines() if "could not be written" in line]
        assert len(said) == 1 and "free space and run again" in said[0], out[-3000:]
        (run,) = (disk / "results").glob("*/run.json")
        info = json.loads(run.read_text())
        assert info["outcome"] == "error" and "results folder incomplete" in info["reason"], info
