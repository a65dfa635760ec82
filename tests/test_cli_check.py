"""`labctl check` against a running simulated lab: passes, then fails with one precise line per
endpoint when credentials are wrong or a simulator is stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.drivers.vsphere import HOST_COUNTERS, VM_COUNTERS
from labctl.inventory.credentials import SECRETS_FILE_VAR
from tests.lab.conftest import start_lab

pytestmark = pytest.mark.integration


class Run:
    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = run_cli(cli, list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err


@pytest.fixture
def labctl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("COLUMNS", "200")
    return Run(capsys)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    with pytest.MonkeyPatch.context() as mp:
        s = start_lab(tmp_path_factory.mktemp("check"), mp, clients=3, name="check")
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def own_sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim) -> Iterator[object]:
    """A lab of the test's own, for tests that break it (after the shared one, for the same env)."""
    s = start_lab(tmp_path, monkeypatch, clients=3, name="own")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def secrets_env(sim, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))


def test_check_passes_on_the_simulated_lab(sim, labctl: Run) -> None:
    code, out, err = labctl("check", "--lab", str(sim.lab_file))
    assert code == 0, err
    assert "preflight (7/7 endpoints ok)" in out
    for what in ("pvs-01 BMC", "pvs-01 SSH", "lab-net Wake-on-LAN", "vc-01", "unity-01"):
        assert what in out
    code, out, _ = labctl("check", "--lab", str(sim.lab_file), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ok"] is True
    caps = {e["endpoint"]: e["capabilities"] for e in data["endpoints"]}
    assert "typeperf 8/8 counters" in caps["pvs-01 SSH"] and "PVS status 3 devices" in caps["pvs-01 SSH"]
    every = len(set(HOST_COUNTERS) | set(VM_COUNTERS))  # what a plan's vCenter source reads
    assert f"perf {every}/{every} counters" in caps["vc-01"] and "10/10 inventory VMs" in caps["vc-01"]
    assert "metric paths all present" in caps["unity-01"]
    versions = {e["endpoint"]: e["version"] for e in data["endpoints"]}
    assert "Redfish 1." in versions["pvs-01 BMC"] and "Unity" in versions["unity-01"]
    # each version with whether the conformance suite checked it (labctl/drivers/verified_versions.yaml)
    assert versions["pvs-01 BMC"].endswith("[verified (simulator)]"), versions
    assert versions["vc-01"].endswith("[verified (recording)]"), versions


def test_wrong_credentials_fail_with_one_line_per_endpoint(
    sim, labctl: Run, tmp_path: Path, monkeypatch
) -> None:
    secrets = yaml.safe_load(Path(sim.secrets_file).read_text())
    bad = dict(secrets)
    bad["sim.bmc_password"] = "not-the-password"
    bad["sim.vcenter_password"] = "also-wrong"
    path = tmp_path / "bad-secrets.yaml"
    path.write_text(yaml.safe_dump(bad))
    monkeypatch.setenv(SECRETS_FILE_VAR, str(path))
    code, out, err = labctl("check", "--lab", str(sim.lab_file), "--timeout", "5")
    assert code == 1
    failed = [ln for ln in err.splitlines() if ln.startswith("FAILED ")]
    assert len(failed) == 3, err  # two BMCs and the vCenter
    bmc = next(ln for ln in failed if ln.startswith("FAILED pvs-01 BMC [redfish https://"))
    assert "log in: credentials rejected for user 'root' (401)" in bmc
    assert "fix: check the user and the credential secret:sim.bmc_password" in bmc
    vc = next(ln for ln in failed if ln.startswith("FAILED vc-01 [vcenter https://"))
    assert "credentials rejected" in vc and "secret:sim.vcenter_password" in vc
    assert "3 of 7 endpoints failed the preflight" in err
    everything = out + err
    for value in ("not-the-password", "also-wrong", *map(str, secrets.values())):
        assert value not in everything


def test_a_stopped_simulator_fails_its_endpoints_precisely(own_sim, labctl: Run) -> None:
    sim = own_sim
    vcsim = next(p for p in sim.state.processes if p.role.startswith("vcsim"))
    os.kill(vcsim.pid, signal.SIGTERM)  # the vCenter simulator this test started
    vc = next(e for e in sim.endpoints if e.kind == "vcenter")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until its port refuses connections
        try:
            socket.create_connection((vc.host, vc.port), timeout=0.5).close()
        except OSError:
            break
        time.sleep(0.05)
    code, _out, err = labctl("check", "--lab", str(sim.lab_file), "--timeout", "3")
    assert code == 1
    failed = [ln for ln in err.splitlines() if ln.startswith("FAILED ")]
    assert len(failed) == 1 and failed[0].startswith("FAILED vc-01 [vcenter https://")
    assert "cannot connect" in failed[0] and "fix: check the vCenter URL" in failed[0]
    assert "1 of 7 endpoints failed" in err


def test_nothing_running_at_all(labctl: Run, tmp_path: Path, monkeypatch) -> None:
    from tests.labfiles import make_test_lab

    lab_file = make_test_lab(tmp_path, clients=2)
    secrets = tmp_path / "s.yaml"
    secrets.write_text(
        yaml.safe_dump({f"sim.{k}_password": "x" for k in ("bmc", "server", "client", "vcenter", "unity")})
    )
    monkeypatch.setenv(SECRETS_FILE_VAR, str(secrets))
    t0 = time.monotonic()
    code, _, err = labctl("check", "--lab", str(lab_file), "--timeout", "2")
    assert time.monotonic() - t0 < 15  # concurrently, each bounded by its timeout
    failed = [ln for ln in err.splitlines() if ln.startswith("FAILED ")]
    assert code == 1 and len(failed) == 6  # every endpoint but the WoL socket, which needs no peer
    assert all(("cannot connect" in ln or "connection refused" in ln) for ln in failed), failed
