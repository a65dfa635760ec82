"""`labctl power` against a running simulated lab: on a range, status shows them on, off brings
them back; unknown targets and failing backends exit non-zero with a line per machine."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.lab.lease import holder_description, this_host, this_user
from labctl.lab.lease.file import FileLeaseStore
from labctl.lab.lease.guard import LabLeased, check_not_leased
from tests.lab.conftest import start_lab
from tests.lease.conftest import HolderProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    faults = "- {kind: vcenter_task_fails, targets: [vdi-007]}"
    with pytest.MonkeyPatch.context() as mp:
        s = start_lab(tmp_path_factory.mktemp("power"), mp, clients=12, faults=faults, name="power")
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def labctl(sim, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
    monkeypatch.setenv("LABCTL_LAB", str(sim.lab_file))
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> tuple[int, str, str]:
        code = run_cli(cli, list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def status_of(labctl, target: str) -> str:
    code, out, err = labctl("power", "status", target)
    assert code == 0, err
    return out


def test_on_status_off_for_a_range_of_clients(labctl) -> None:
    code, out, err = labctl("power", "on", "optiplex-[001-010]")
    assert code == 0, err
    assert "power on optiplex-[001-010]: 10/10 ok; send spread" in out
    assert "delivery spread" not in out  # a magic packet is never seen arriving
    assert "optiplex-[001-010]" in out and "magic packet" in out
    # the placeholder twin boots a client in 31 lab s: about half a second at 60x
    deadline = time.monotonic() + 10
    while "10 on" not in (out := status_of(labctl, "optiplex-[001-010]")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "optiplex-[001-010]: 10 on" in out
    assert "active on pvs-01" in out
    assert "optiplex-011" not in status_of(labctl, "optiplex-[001-010]")
    assert "optiplex-[009-012]: 2 on, 2 off" in status_of(labctl, "optiplex-[009-012]")
    code, out, err = labctl("power", "off", "optiplex-[001-010]")
    assert code == 0, err
    assert "shutdown /s /t 0: delivered (session dropped)" in out
    assert "; send spread" in out and ", delivery spread" in out
    deadline = time.monotonic() + 10
    while "10 off" not in (out := status_of(labctl, "optiplex-[001-010]")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "optiplex-[001-010]: 10 off" in out


def test_on_with_wait_reports_readiness_and_boot_times(labctl) -> None:
    code, out, err = labctl("power", "on", "optiplex-[011-012]", "--wait", "120")
    assert code == 0, err
    assert "ready within 120 lab s" in out and "boot 30.0 s" in out
    labctl("power", "off", "optiplex-[011-012]")


def test_unknown_target_exits_2_with_a_suggestion(labctl) -> None:
    code, _, err = labctl("power", "on", "optiplx-001")
    assert (
        code == 2 and "unknown machine or group 'optiplx-001'" in err and "did you mean 'optiplex-001'" in err
    )
    code, _, err = labctl("power", "status", "optiplex-[001-200]")
    assert code == 2 and "optiplex-013" in err


def test_a_failing_vm_task_fails_the_command_and_names_the_vm(labctl) -> None:
    code, out, err = labctl("power", "on", "vdi-[006-008]")
    assert code == 1
    assert "2/3 ok" in out
    assert (
        "FAILED vdi-007: power-on task failed: GenericVmConfigFault: Failed to power on the virtual machine"
        in err
    )
    code, out, _ = labctl("power", "status", "vdi-[006-008]")
    assert code == 0 and "2 on" in out and "1 off" in out
    labctl("power", "off", "vdi-[006-008]")


def test_servers_status_over_redfish(labctl) -> None:
    out = status_of(labctl, "servers")
    assert "servers: 2 on" in out and "PowerState On" in out


@pytest.fixture
def leases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's lease folder for the test (the sim lab has no hub: its leases are files)."""
    monkeypatch.delenv("LABCTL_HUB", raising=False)
    monkeypatch.setenv("LABCTL_LEASE_DIR", str(tmp_path / "leases"))
    return tmp_path / "leases"


@contextlib.contextmanager
def another_run_holding(where: Path, resource: str) -> Iterator[HolderProcess]:
    """A run in a process of its own holding ``resource`` on the file store in ``where``."""
    run = HolderProcess(f"file:{where}", [resource], name="run", ttl=30, hold=120)
    try:
        run.wait_for("ready")
        run.wait_for("taken")
        yield run
    finally:
        run.stop()


def test_a_leased_lab_refuses_power_naming_the_holder_unless_forced(labctl, sim, leases: Path) -> None:
    lab = load_lab(sim.lab_file)
    before = status_of(labctl, "optiplex-012")
    with another_run_holding(leases, f"lab:{lab.name}") as run:
        code, out, err = labctl("power", "on", "optiplex-012")
        assert code == 2 and out == ""
        (line,) = err.strip().splitlines()
        assert line.startswith(f"error: lab:{lab.name} is leased by holder run pid {run.pid} (")
        assert line.endswith(
            " left, renewed while that run lives): power on optiplex-012 refused "
            "(add --force to act anyway, or wait for the lease to end)"
        )
        assert status_of(labctl, "optiplex-012") == before  # nothing was touched
        code, out, err = labctl("power", "off", "--hard", "optiplex-012", "--force")
        assert code == 0 and ("shutdown /s /f /t 0: delivered" in out or "already off" in out), err
    # a group lease covers its members only
    with another_run_holding(leases, f"group:{lab.name}/servers") as run:
        code, _, err = labctl("power", "reboot", "infra-01")
        assert code == 2 and f"group:{lab.name}/servers is leased by holder run pid {run.pid}" in err
        code, _, err = labctl("power", "status", "optiplex-012")  # reading is never refused
        assert code == 0, err
        code, _, err = labctl("power", "on", "optiplex-012", "--wait", "120")  # not in the leased group
        assert code == 0, err


def test_the_holders_own_leases_are_not_in_the_way(sim, leases: Path) -> None:
    lab = load_lab(sim.lab_file)
    machines = [lab.machine("optiplex-001")]
    resource = f"lab:{lab.name}"
    with FileLeaseStore(leases) as store:
        with store.take(resource, holder_description("labctl run boot_storm"), ttl_s=30):
            check_not_leased(lab, machines, "power on")  # this process's own run
        # a reservation by this user on this host (`labctl lease take`): their power goes ahead
        me = f"{this_user()}@{this_host()}"
        store.reserve(resource, me, f"{me} (by hand)", ttl_s=60)
        check_not_leased(lab, machines, "power on")
        store.unreserve(resource, me)
        store.reserve(resource, "ann@rig-7", "ann@rig-7 (by hand: firmware)", ttl_s=60)
        with pytest.raises(
            LabLeased, match=r"is leased by ann@rig-7 \(by hand: firmware\) \((\d+ s|1 min) left\)"
        ):
            check_not_leased(lab, machines, "power on")
