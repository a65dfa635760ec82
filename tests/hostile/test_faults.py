"""Hostile ``--fault KIND:TARGET`` options: each is refused (exit 2, one line naming the option,
what is wrong and the fix) before anything starts. The probe's seeds: targets that do not exist,
targets of the wrong kind (a fault that can never fire leaves a storm "passing" it), malformed
options; each grown into variants on the 2007 lab and a VDI lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.inventory.fault_targets import check_faults
from labctl.inventory.load import default_lab_file, load_lab
from labctl.sim.simlab import SimulatedLab
from tests.hostile.harness import Case, api_run, cli_run, outcome

CATEGORY = "--fault"
HARDWARE = Path(__file__).resolve().parents[2] / "hardware"
VDI_FILE = HARDWARE / "vdi-mcs-sc40-1000.yaml"

BAD_2007 = [
    "",
    ":",
    "client_never_wakes",
    "client_never_wakes:",
    "client_never_wakes: ",
    "client_never_wakes:,",
    "client_never_wakes:optiplex-001,,optiplex-002",
    "never_wakes:optiplex-001",
    "CLIENT_NEVER_WAKES:optiplex-001",
    "client-never-wakes:optiplex-001",
    "client_never_wakes:optiplex-999",
    "client_never_wakes:optiplex-[001-101]",
    "client_never_wakes:optiplex-[100-001]",
    "client_never_wakes:optiplex-[001-",
    "client_never_wakes:optiplex-[0-99999999]",
    "client_never_wakes:pvs-01",
    "client_never_wakes:vdi-001",
    "client_never_wakes:clients",
    "client_never_wakes:optiplex-001\x1b[2J",
    "client_never_wakes:optiplex-001\n--fault bmc_503:pvs-01",
    "client_never_wakes:" + "x" * 5000,
    "bmc_503:optiplex-001",
    "bmc_503:vdi-001",
    "bmc_503:vc-01",
    "bmc_503:pvs-99",
    "bmc_hang:unity-01",
    "bmc_hang:*",
    "vcenter_task_fails:optiplex-001",
    "vcenter_task_fails:pvs-01",
    "vcenter_task_fails:vdi-011",
    "vcenter_task_fails:vc-02",
    "ssh_drop_mid_command:vdi-001",
    "ssh_refuse_auth:unity-01",
    "ssh_refuse_auth:nobody",
    "storage_token_expiry:unity-02",
    "storage_token_expiry:pvs-01",
    "array_controller_failover:unity-01",  # no vdi.arrays in the 2007 lab
    "host_in_maintenance:pvs-01",
    "datastore_full:datastore1",
    "session_login_fails:vdi-001",  # the 2007 lab has no desktop pools
    "client_never_wakes:optiplex-001;reboot",
    "client_never_wakes:$(id)",
]
BAD_VDI = [
    "host_in_maintenance:esx-mcs-11",
    "host_in_maintenance:esx-mcs-[01-11]",
    "host_in_maintenance:mcs-0001",
    "host_in_maintenance:sc40-01",
    "datastore_full:csv-5",
    "datastore_full:csv-[0-4]",
    "datastore_full:esx-mcs-01",
    "datastore_full:sc40-01",
    "array_controller_failover:sc40-02",
    "array_controller_failover:csv-1",
    "array_controller_failover:ctrl_a",
    "session_login_fails:mcs-1001",
    "session_login_fails:mcs-[0990-1010]",
    "session_login_fails:vsi-01",
    "session_login_fails:mcs-pool",
    "session_login_fails:esx-mcs-01",
    "vcenter_task_fails:esx-mcs-01",
    "vcenter_task_fails:vsi-01",
    "bmc_503:esx-mcs-01",
    "client_never_wakes:mcs-0001",
    "ssh_refuse_auth:vsi-01",
    "storage_token_expiry:csv-1",
]
GOOD = {
    "2007": ["client_never_wakes:optiplex-007", "bmc_503:pvs-01", "vcenter_task_fails:vdi-003,vc-01"],
    "vdi": ["host_in_maintenance:esx-mcs-01", "datastore_full:csv-[1-2]", "session_login_fails:mcs-0001"],
}

_labs: dict[str, object] = {}


def _lab(which: str):  # type: ignore[no-untyped-def]
    if which not in _labs:
        _labs[which] = load_lab(default_lab_file() if which == "2007" else VDI_FILE, None, every_machine=True)
    return _labs[which]


def cases() -> list[Case]:
    out = [
        Case(CATEGORY, f"2007 {t!r}", lambda t=t: api_run(lambda: check_faults([t], _lab("2007"))))
        for t in BAD_2007
    ]
    out += [
        Case(CATEGORY, f"vdi {t!r}", lambda t=t: api_run(lambda: check_faults([t], _lab("vdi"))))
        for t in BAD_VDI
    ]
    return out


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_fault_option_is_refused_cleanly(case: Case) -> None:
    assert outcome(case) is None


@pytest.mark.parametrize("which", list(GOOD))
def test_faults_that_can_fire_are_accepted(which: str) -> None:
    specs = check_faults(GOOD[which], _lab(which))  # type: ignore[arg-type]
    assert [s.kind.value for s in specs] == [g.split(":")[0] for g in GOOD[which]]


@pytest.mark.parametrize("option", ["bmc_503:optiplex-001", "client_never_wakes:optiplex-999", "nope:x"])
def test_sim_up_refuses_a_bad_fault_before_starting_anything(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[bool] = []
    monkeypatch.setattr(SimulatedLab, "start", lambda self: started.append(True) or self)
    code, shown = cli_run(["sim", "up", "--fault", option, "--state-dir", str(tmp_path)])
    assert (code, started) == (2, []), shown
    assert shown.count("\n") == 1 and "--fault" in shown and "(" in shown, shown
