"""Running your own simulated lab: a copy of the lab file with `loopback_block: auto` is placed on
a loopback block of its own, starts, and passes `labctl check`; another lab while it runs is one
line and exit 2 for `labctl run`, and `labctl check` says what to do when the lab is not up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.sim.state import STATE_DIR_VAR
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration


def labctl(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LABCTL_LAB", "LABCTL_CONFIG")}
    env[STATE_DIR_VAR] = str(state_dir)
    env[SECRETS_FILE_VAR] = str(state_dir / "secrets.yaml")
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-c", "from labctl.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def own_lab(tmp_path: Path, name: str) -> Path:
    """A copy of the 2007 lab that asks to be placed (addresses left as they are in the file)."""
    path = make_test_lab(tmp_path, clients=3, name=name)
    path.write_text(path.read_text().replace("  seed: 2007\n", "  seed: 2007\n  loopback_block: auto\n"))
    return path


def test_your_own_lab_is_placed_checked_and_guarded(tmp_path: Path, state_dir: Path) -> None:
    mine, other = own_lab(tmp_path, "mine.yaml"), own_lab(tmp_path, "other.yaml")

    up = labctl(state_dir, "sim", "up", "--lab", str(mine))
    assert up.returncode == 0, up.stderr
    assert "placed on loopback 127." in up.stdout
    check = labctl(state_dir, "check", "--lab", str(mine))
    assert check.returncode == 0, check.stderr

    # another lab while this one runs: one line naming both, exit 2, before anything is run
    run = labctl(state_dir, "run", "boot_storm", "--lab", str(other), "--no-report")
    assert run.returncode == 2, run.stdout + run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("error: a simulated lab is already running: ") and "labctl sim down" in line
    assert "Traceback" not in run.stdout + run.stderr

    down = labctl(state_dir, "sim", "down")
    assert down.returncode == 0, down.stderr
    check = labctl(state_dir, "check", "--lab", str(mine), "--timeout", "1")
    assert check.returncode == 1
    hint = check.stderr.splitlines()[-1]
    assert hint.startswith("hint: no simulated lab is running") and f"labctl sim up --lab {mine}" in hint
