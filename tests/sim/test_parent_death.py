"""A simulator started by a run lives and dies with it: a `labctl run` that is SIGKILLed (no
teardown, no signal handler) leaves no `simd` or `labctl-vcsim` behind, and the next run starts a
fresh lab instead of attaching to a dirty one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labctl.sim.state import ProcessRecord, is_running, read_state
from tests.labfiles import make_test_lab
from tests.plans.test_plans_quick import Storm

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _gone(procs: list[ProcessRecord], timeout_s: float = 20.0) -> list[ProcessRecord]:
    """Those of ``procs`` still running after ``timeout_s`` (polled: the kernel signals at once,
    the processes take a moment to exit)."""
    deadline = time.monotonic() + timeout_s
    live = list(procs)
    while live and time.monotonic() < deadline:
        live = [p for p in live if is_running(p)]
        time.sleep(0.1)
    return live


def test_a_sigkilled_run_takes_its_simulator_with_it(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=2)
    storm = Storm(tmp_path, lab, group=2)
    storm.wait_window()
    state = read_state(tmp_path / "state")
    assert state is not None and state.owner_pid == storm.proc.pid
    roles = {p.role for p in state.processes}
    assert "simd" in roles and any(r.startswith("vcsim:") for r in roles), roles
    assert all(is_running(p) for p in state.processes)
    os.kill(storm.proc.pid, signal.SIGKILL)
    storm.proc.wait(timeout=30)
    left = _gone(state.processes)
    for p in left:  # do not leave them to the next test either
        os.kill(p.pid, signal.SIGKILL)
    assert not left, f"still running after the run was killed: {left}"
    # the state file stays (nobody removed it) but names an owner that is gone: a later start
    # replaces it instead of refusing or attaching
    stale = read_state(tmp_path / "state")
    assert stale is not None and stale.orphaned


_ORPHAN = """
import sys, time
import labctl.sim.simlab as simlab
simlab.tie_to_parent = lambda: None  # as an older labctl did: nothing ties the lab to this process
sim = simlab.SimulatedLab(sys.argv[1], state_dir=sys.argv[2]).start()
print("up", flush=True)
time.sleep(600)
"""


def test_a_run_that_finds_a_lab_left_by_a_killed_run_says_so_and_starts_a_fresh_one(tmp_path: Path) -> None:
    from tests.plans.test_plans_quick import _env, _run

    lab = make_test_lab(tmp_path, clients=2)
    owner = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN, str(lab), str(tmp_path / "state")],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "up"
    finally:
        owner.kill()  # SIGKILL: it cannot stop its lab
        owner.wait(timeout=30)
    left = read_state(tmp_path / "state")
    assert left is not None and left.orphaned and all(is_running(p) for p in left.processes)
    try:
        proc = _run(
            tmp_path, lab, "boot_storm", "--profile", "quick", "--param", "group_sizes=2", "--no-report"
        )
        out = proc.stdout + proc.stderr
        assert "found a simulated lab left running by a run that ended without stopping it" in out, out[
            -3000:
        ]
        assert proc.returncode in (0, 1), out[-3000:]
        assert not _gone(left.processes, timeout_s=5), "the dirty lab was stopped, not attached to"
    finally:
        for p in left.processes:
            if is_running(p):
                os.kill(p.pid, signal.SIGKILL)
