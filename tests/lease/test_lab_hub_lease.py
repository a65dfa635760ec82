"""The lease of a lab whose inventory names a site-agent hub lives on that hub, whichever command
looks: `labctl power` is refused while a run holds the lab there, with nothing replaced or set
(no monkeypatch, no $LABCTL_HUB): the inventory alone picks the store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from labctl.agents.nats_server import NatsServer
from labctl.inventory import load_lab
from labctl.lab.lease.hub import DEFAULT_BUCKET
from tests.agents.labs import three_site_lab
from tests.lease.conftest import ROOT, HolderProcess

CLI_TIMEOUT_S = 120.0


def labctl(*args: str) -> subprocess.CompletedProcess[str]:
    """`labctl ARGS` in a process of its own, with no LABCTL_* variable of this one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "labctl", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def test_power_on_is_refused_while_a_run_holds_the_lease_on_the_labs_own_hub(
    nats_hub: NatsServer, tmp_path: Path
) -> None:
    lab_file, _ = three_site_lab(tmp_path / "lab", nats_hub.url)
    lab = load_lab(lab_file)
    assert lab.agents is not None and lab.agents.hub == nats_hub.url
    run = HolderProcess(
        f"nats:{nats_hub.url}#{DEFAULT_BUCKET}", [f"lab:{lab.name}"], name="run", ttl=30, hold=120
    )
    try:
        run.wait_for("ready")
        run.wait_for("taken")
        done = labctl("power", "on", "optiplex-001", "--lab", str(lab_file))
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: lab:{lab.name} is leased by holder run pid {run.pid} (")
        assert "power on optiplex-001 refused" in line and done.stdout == ""
        # and `labctl lease list` of that lab reads the same hub
        listed = labctl("lease", "list", "--lab", str(lab_file))
        assert listed.returncode == 0, listed.stderr
        assert f"holder run pid {run.pid}" in listed.stdout and nats_hub.url in listed.stdout
    finally:
        run.stop()
