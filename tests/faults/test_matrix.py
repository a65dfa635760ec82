"""The fault matrix: every fault the simulated lab can inject (``labctl.inventory.faults.FaultKind``)
and every failure around the lab, in each plan kind, with the test that injects it and what the
cell comes to. This module checks that the matrix is whole: a new fault kind, a renamed or lost
test, or a kind missing from docs/faults.md fails here.

Plan kinds: **2007** (boot_storm, copy_reboot, ha_comparison on the 2007 streaming lab; the tests
run a 2-client boot storm) and **VDI** (vdi_storm, scale_out, write_cache_modes, session_storm on a
desktop pool; the tests run a 3-desktop vdi_storm, one a session_storm).

| fault | 2007 | VDI |
|---|---|---|
| client_never_wakes | lab fault naming the client | n/a: desktops are VMs powered through vCenter, not WoL clients (vcenter_task_fails is theirs) |
| bmc_503 | lab fault naming the BMC | lab fault naming the BMC |
| bmc_hang | lab fault naming the BMC; the healthy ones keep their samples | the same |
| vcenter_task_fails | n/a: the 2007 plans power no VM (their vCenter is only read: vcenter_dies) | lab fault naming the desktop whose power task failed |
| ssh_drop_mid_command | lab fault naming the streaming server | n/a: a VDI storm speaks SSH only to its launchers, which the fault book cannot strike (session_login_fails is theirs) |
| ssh_refuse_auth | lab fault naming the server (or, on a client, the restore that left it on) | n/a: as ssh_drop_mid_command |
| storage_token_expiry | recovered, not a fault: the driver logs in again, the array is not named, its samples are whole | the same |
| array_controller_failover | n/a: the 2007 lab has no vdi: section (no vdi.arrays) | lab fault naming the array's controller |
| host_in_maintenance | n/a: no ESXi hosts of a pool | lab fault naming the host |
| datastore_full | n/a: no datastores of a pool | lab fault naming the datastore, not the logoffs it stalls |
| session_login_fails | n/a: no desktops | lab fault naming the desktops |
| vcenter_dies (vcsim killed) | lab fault naming vCenter; the clients restored | lab fault naming vCenter (vdi_storm and session_storm) |
| lab_goes_down (sim down) | lab fault naming the endpoints that stopped answering | lab fault naming vCenter first |
| results_disk_full | run ends as error, one line naming the folder, run.json finalised, exit 1 | the same |
| results_store_lost | said at once and in the summary; cells judged as measured; exit 3 if they passed (`labctl runs import`) | the same |

The storage token's expiry is the one injected fault that is not a lab fault, by design: a session
that expires is the array's normal life, and labctl must ride it out; the test asserts that it does.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from labctl.inventory.faults import FaultKind

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "faults.md"
PLAN_KINDS = ("2007", "VDI")

# the failures around the lab that no FaultKind injects
ENVIRONMENT = ("vcenter_dies", "lab_goes_down", "results_disk_full", "results_store_lost")

_Q = "tests/plans/test_plans_quick.py::"
_V = "tests/vsi/test_faults.py::"
_F7 = "tests/faults/test_2007.py::"
_FV = "tests/faults/test_vdi.py::"
_FE = "tests/faults/test_environment.py::"
_BMC_2007 = "tests/scenarios/test_lab_faults.py::test_a_failing_bmc_in_a_boot_storm_is_a_lab_fault_named"
_SSH_2007 = _F7 + "test_an_ssh_channel_dropping_mid_command_is_named_and_an_expiring_array_token_is_not"
_BMC_VDI = (
    _V + "test_bmcs_answering_503_or_hanging_are_lab_faults_named_and_the_healthy_bmc_keeps_its_samples"
)
_VDI_LAB = _V + "test_a_host_in_maintenance_a_controller_failover_and_failed_logons_are_lab_faults_named"
_TASK_VDI = _FV + "test_a_desktop_whose_power_task_fails_is_named_and_an_expiring_array_token_is_not"
NO_VDI = "n/a: the 2007 lab has no vdi: section"
LAUNCHERS_ONLY = "n/a: a VDI storm speaks SSH only to its launchers, which the fault book cannot strike"

# fault -> plan kind -> the tests that inject it there, or "n/a: why"
MATRIX: dict[str, dict[str, tuple[str, ...] | str]] = {
    "client_never_wakes": {
        "2007": (_Q + "test_a_client_that_never_wakes_is_a_lab_fault_and_the_others_are_measured",),
        "VDI": "n/a: desktops are VMs powered through vCenter, not Wake-on-LAN clients",
    },
    "bmc_503": {"2007": (_BMC_2007,), "VDI": (_BMC_VDI,)},
    "bmc_hang": {"2007": (_BMC_2007,), "VDI": (_BMC_VDI,)},
    "vcenter_task_fails": {"2007": "n/a: the 2007 plans power no VM", "VDI": (_TASK_VDI,)},
    "ssh_drop_mid_command": {
        "2007": (_SSH_2007,),
        "VDI": LAUNCHERS_ONLY,
    },
    "ssh_refuse_auth": {
        "2007": (
            _Q + "test_a_streaming_server_that_refuses_ssh_is_named_in_the_reason",
            _Q + "test_a_failed_restore_keeps_the_measured_verdict_and_is_a_lab_fault",
        ),
        "VDI": LAUNCHERS_ONLY,
    },
    "storage_token_expiry": {"2007": (_SSH_2007,), "VDI": (_TASK_VDI,)},
    "array_controller_failover": {"2007": NO_VDI, "VDI": (_VDI_LAB,)},
    "host_in_maintenance": {"2007": NO_VDI, "VDI": (_VDI_LAB,)},
    "datastore_full": {
        "2007": NO_VDI,
        "VDI": (_V + "test_a_full_datastore_is_named_not_the_sessions_that_could_not_log_off",),
    },
    "session_login_fails": {"2007": NO_VDI, "VDI": (_VDI_LAB,)},
    "vcenter_dies": {
        "2007": (_F7 + "test_vcenter_dying_mid_boot_storm_is_a_lab_fault_naming_it",),
        "VDI": (
            _V + "test_vcenter_dying_mid_storm_is_a_lab_fault_with_the_cells_record",
            _FV + "test_vcenter_dying_mid_session_storm_is_a_lab_fault_naming_it",
        ),
    },
    "lab_goes_down": {
        "2007": (_Q + "test_the_simulated_lab_going_down_in_a_window_is_a_lab_fault_not_a_pass",),
        "VDI": (_FV + "test_the_simulated_lab_going_down_mid_vdi_storm_is_a_lab_fault_naming_vcenter",),
    },
    "results_disk_full": {
        "2007": (_FE + "test_a_full_results_disk_in_a_boot_storm_ends_with_one_line_and_run_json_finalised",),
        "VDI": (_V + "test_a_full_results_disk_ends_the_run_with_one_line_and_run_json_finalised",),
    },
    "results_store_lost": {
        "2007": (_FE + "test_the_results_store_going_away_mid_run_is_said_at_once_and_in_the_summary",),
        "VDI": (_FE + "test_the_results_store_going_away_mid_vdi_storm_is_said_and_the_cell_kept",),
    },
}


@cache
def _tests_in(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    )


def test_every_fault_kind_and_every_failure_around_the_lab_has_its_row() -> None:
    assert set(MATRIX) == {k.value for k in FaultKind} | set(ENVIRONMENT)
    for fault, row in MATRIX.items():
        assert set(row) == set(PLAN_KINDS), fault


@pytest.mark.parametrize("fault", sorted(MATRIX))
def test_each_cell_of_the_matrix_names_a_test_that_exists_or_why_it_cannot_apply(fault: str) -> None:
    for plan_kind, where in MATRIX[fault].items():
        if isinstance(where, str):
            assert where.startswith("n/a: ") and len(where) > 20, (fault, plan_kind, where)
            continue
        assert where, (fault, plan_kind)
        for node in where:
            path, _, name = node.partition("::")
            assert name in _tests_in(path), f"{fault} in {plan_kind}: {node} does not exist"


def test_the_doc_and_this_docstring_have_every_row() -> None:
    doc = DOC.read_text()
    table = __doc__ or ""
    for fault in MATRIX:
        assert f"| {fault} " in doc or f"| `{fault}`" in doc, f"docs/faults.md has no row for {fault}"
        assert f"| {fault} " in table, f"the module docstring has no row for {fault}"
