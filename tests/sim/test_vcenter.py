"""The simulated vCenter, driven with pyVmomi over HTTPS (TLS verified against the lab's CA)."""

from __future__ import annotations

import ssl
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim

from labctl.errors import BadInputError
from labctl.inventory import load_lab, resolve_credential
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import Lab
from labctl.sim.certs import CA_FILE
from labctl.sim.simlab import SimulatedLab
from labctl.sim.twin.vdi.views import generated_ip
from labctl.sim.vcenter.topology import (
    TASK_LATENCY_LAB_S,
    fault_entries,
    host_names,
    simulator_config,
    topology,
)
from tests.labfiles import make_test_lab
from tests.vdi.vcenter_twin import by_name

DEADLINE_S = 10.0


# --- topology (no processes) ---------------------------------------------------------------------


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return load_lab(make_test_lab(tmp_path, clients=1), every_machine=True)


def test_topology_follows_the_inventory(lab: Lab) -> None:
    topo = topology(lab, lab.vcenters["vc-01"])
    assert [dc.name for dc in topo.datacenters] == ["DC0"]
    assert list(topo.hosts) == ["esx-vdi-01", "esx-vdi-02"]
    assert [v.name for v in topo.vms] == [f"vdi-{i:03d}" for i in range(1, 11)]
    # round robin over the hosts, generated guest IPs where the inventory has none
    assert [v.host for v in topo.vms[:3]] == ["esx-vdi-01", "esx-vdi-02", "esx-vdi-01"]
    assert topo.vms[0].guest_ip == "10.250.0.1"
    assert (topo.host, topo.port) == (lab.vcenters["vc-01"].url.split("//")[1].split(":")[0], 8989)


def test_vm_on_unknown_host_names_the_valid_hosts(tmp_path: Path) -> None:
    path = make_test_lab(tmp_path, clients=1)
    path.write_text(path.read_text().replace("tags: [vdi]}", "tags: [vdi], host: esx-nowhere}"))
    bad = load_lab(path, every_machine=True)
    with pytest.raises(BadInputError, match=r"vdi-001: host 'esx-nowhere'.*esx-vdi-01, esx-vdi-02"):
        topology(bad, bad.vcenters["vc-01"])


def test_task_latency_is_in_lab_seconds(lab: Lab) -> None:
    topo = topology(lab, lab.vcenters["vc-01"])
    cfg = simulator_config(
        topo, username="u", password="p", time_scale=60, faults=[], seed=1, ready_file="r", datastore_dir="d"
    )
    assert cfg["task_delay_ms"]["PowerOn"] == round(TASK_LATENCY_LAB_S["PowerOn"] * 1000 / 60)
    assert cfg["task_jitter"] > 0
    hosts = cfg["datacenters"][0]["clusters"][0]["hosts"]
    assert [h["name"] for h in hosts] == host_names(lab.vcenters["vc-01"].datacenters[0].clusters[0])
    assert (hosts[0]["cores"], hosts[0]["cpu_mhz"], hosts[0]["ram_mb"]) == (16, 2600, 256 * 1024)
    # power-ons are paced as the twin's vcenter_power_ops_per_s says, in wall time
    assert cfg["power_ops_per_wall_s"] == pytest.approx(3.0 * 60)


def test_task_faults_name_their_vms_in_wall_seconds(lab: Lab) -> None:
    topo = topology(lab, lab.vcenters["vc-01"])
    faults = [
        FaultSpec(kind=FaultKind.VCENTER_TASK_FAILS, targets=("vdi-[002-003]", "vdi-999"), after_s=120),
        FaultSpec(kind=FaultKind.VCENTER_TASK_FAILS, targets=("vc-01",), probability=0.5),
        FaultSpec(kind=FaultKind.VCENTER_TASK_FAILS, targets=("other-vm",)),  # not this vCenter's
        FaultSpec(kind=FaultKind.CLIENT_NEVER_WAKES, targets=("vdi-001",)),  # not a vCenter fault
    ]
    assert fault_entries(topo, faults, time_scale=60) == [
        {"vms": ["vdi-002", "vdi-003"], "after_wall_s": 2.0, "probability": 1.0},
        {"vms": [v.name for v in topo.vms], "after_wall_s": 0.0, "probability": 0.5},
    ]


# --- over the wire -------------------------------------------------------------------------------


@contextmanager
def connect(sim: SimulatedLab, password: str | None = None) -> Iterator[Any]:
    vc = sim.lab.vcenters["vc-01"]
    ep = sim.endpoint("vcenter", "vc-01")
    ctx = ssl.create_default_context(cafile=str(sim.state_dir / CA_FILE))  # verified: IP in the SAN
    si = SmartConnect(
        host=ep.host,
        port=ep.port,
        user=vc.user,
        pwd=password if password is not None else resolve_credential(vc.password, "vc-01"),
        sslContext=ctx,
        httpConnectionTimeout=10,
    )
    try:
        yield si
    finally:
        Disconnect(si)


def vms_by_name(si: Any) -> dict[str, Any]:
    return by_name(si, vim.VirtualMachine)


def wait_task(task: Any, timeout_s: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while task.info.state in ("queued", "running"):
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task.info.name} still {task.info.state} after {timeout_s} s")
        time.sleep(0.005)
    return task.info


def wait_for(predicate: Any, what: str, timeout_s: float = DEADLINE_S, step_s: float = 0.005) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(step_s)


def guest_ready(vm: Any) -> bool:
    return bool(vm.guest.toolsRunningStatus == "guestToolsRunning")


pytestmark = pytest.mark.integration


def test_login_with_the_generated_secret_only(shared_sim_lab: SimulatedLab) -> None:
    with connect(shared_sim_lab) as si:
        assert "govmomi simulator" in si.content.about.fullName
    with pytest.raises(vim.fault.InvalidLogin), connect(shared_sim_lab, password="wrong"):
        pass


def test_inventory_has_the_labs_names(shared_sim_lab: SimulatedLab) -> None:
    lab = shared_sim_lab.lab
    with connect(shared_sim_lab) as si:
        content = si.RetrieveContent()
        (dc,) = content.rootFolder.childEntity
        assert dc.name == "DC0"
        (cluster,) = dc.hostFolder.childEntity
        assert cluster.name == "VDI"
        assert sorted(h.name for h in cluster.host) == ["esx-vdi-01", "esx-vdi-02"]
        hw = cluster.host[0].summary.hardware
        assert (hw.numCpuCores, hw.cpuMhz, hw.memorySize) == (16, 2600, 256 * 1024**3)
        vms = vms_by_name(si)
        assert sorted(vms) == sorted(m.name for m in lab.vms)
        assert {vm.runtime.powerState for vm in vms.values()} == {"poweredOff"}
        assert not any(guest_ready(vm) for vm in vms.values())
        assert content.searchIndex.FindByInventoryPath("DC0/vm/vdi-001") is not None


def test_guest_becomes_ready_only_after_the_twins_boot_time(shared_sim_lab: SimulatedLab) -> None:
    sim = shared_sim_lab
    clock = sim.clock
    with connect(sim) as si:
        vm = vms_by_name(si)["vdi-001"]
        info = wait_task(vm.PowerOnVM_Task())
        assert info.state == "success"
        on_at = clock.now()
        assert vm.runtime.powerState == "poweredOn"
        assert not guest_ready(vm)  # just powered on: the OS is booting
        wait_for(lambda: guest_ready(vm), "the guest of vdi-001 to be ready")
        booted_after = clock.now() - on_at
        # the placeholder boots a VM in 1 + 30 lab s; any twin takes a while
        assert booted_after >= (29 if sim.state.twin == "placeholder" else 10)
        g = vm.guest
        # the guest's address is the twin's (a DHCP-like one for a VM the inventory gives none)
        ip = "10.250.0.1" if sim.state.twin == "placeholder" else generated_ip(0)
        assert (g.toolsStatus, g.guestState, g.hostName, g.ipAddress) == ("toolsOk", "running", "vdi-001", ip)
        assert vm.summary.guest.ipAddress == ip

        # a reset: the guest goes down and comes back after another boot
        wait_task(vm.ResetVM_Task())
        wait_for(lambda: not guest_ready(vm), "the guest to go down on reset")
        wait_for(lambda: guest_ready(vm), "the guest to come back after the reset")

        # power off: no tools, no IP, as a real vCenter shows an off VM
        assert wait_task(vm.PowerOffVM_Task()).state == "success"
        wait_for(lambda: not guest_ready(vm), "the guest to be cleared at power off")
        assert vm.guest.ipAddress is None and vm.guest.hostName is None


def test_power_tasks_take_lab_time_with_spread(shared_sim_lab: SimulatedLab) -> None:
    scale = shared_sim_lab.clock.scale
    mean_s = TASK_LATENCY_LAB_S["PowerOn"] / scale
    names = [f"vdi-{i:03d}" for i in range(2, 10)]
    durations = []
    with connect(shared_sim_lab) as si:
        vms = vms_by_name(si)
        tasks = [vms[n].PowerOnVM_Task() for n in names]
        for task in tasks:
            info = wait_task(task)
            assert info.state == "success"
            durations.append((info.completeTime - info.startTime).total_seconds())
        for n in names:
            wait_task(vms[n].PowerOffVM_Task())
    # govmomi draws each delay as mean x (1 + 0.3 z), z normal: one of 8 falls below 0.3 x mean in
    # about one run in ten, so the lower bound is on their mean (sd 0.11 x mean for 8 draws)
    assert all(0 < d < 4 * mean_s for d in durations), durations
    assert 0.55 * mean_s < statistics.mean(durations) < 2 * mean_s, durations
    assert statistics.pstdev(durations) > 0.02 * mean_s, durations  # not all the same latency


def test_vcenter_task_fails_fault_ends_power_tasks_in_error(start_sim) -> None:
    sim = start_sim(faults="- {kind: vcenter_task_fails, targets: [vdi-003]}")
    with connect(sim) as si:
        vms = vms_by_name(si)
        info = wait_task(vms["vdi-003"].PowerOnVM_Task())
        assert info.state == "error"
        assert isinstance(info.error, vim.fault.GenericVmConfigFault)
        assert "vcenter_task_fails" in info.error.reason
        assert vms["vdi-003"].runtime.powerState == "poweredOff"
        # the others are not affected, and the batched call fails only the faulty VM's subtask
        (dc,) = si.RetrieveContent().rootFolder.childEntity
        multi = wait_task(dc.PowerOnMultiVM_Task(vm=[vms["vdi-003"], vms["vdi-004"]]))
        assert multi.state == "success"
        results = {a.vm.name: wait_task(a.task).state for a in multi.result.attempted}
        assert results == {"vdi-003": "error", "vdi-004": "success"}
        wait_for(lambda: guest_ready(vms["vdi-004"]), "vdi-004's guest")
        assert not guest_ready(vms["vdi-003"])
        assert vms["vdi-003"].runtime.powerState == "poweredOff"


def test_a_task_fault_added_at_run_time_reaches_the_vcenter(shared_sim_lab: SimulatedLab) -> None:
    sim = shared_sim_lab
    with connect(sim) as si:
        vm = vms_by_name(si)["vdi-010"]

        def power_on_fails() -> bool:
            before = vm.runtime.powerState
            info = wait_task(vm.PowerOnVM_Task())
            if info.state == "success":  # the fault has not arrived yet
                wait_task(vm.PowerOffVM_Task())
                return False
            assert isinstance(info.error, vim.fault.GenericVmConfigFault), info.error
            assert vm.runtime.powerState == before  # a failed task changes nothing
            return True

        sim.add_fault("vcenter_task_fails:vdi-010")
        try:
            wait_for(power_on_fails, "the fault to reach the vCenter", timeout_s=5, step_s=0.05)
        finally:
            sim.clear_faults()

        def power_cycle_works() -> bool:
            if vm.runtime.powerState == "poweredOn" and wait_task(vm.PowerOffVM_Task()).state != "success":
                return False
            ok = wait_task(vm.PowerOnVM_Task()).state == "success"
            wait_task(vm.PowerOffVM_Task())
            return ok

        wait_for(power_cycle_works, "the fault to be cleared", timeout_s=5, step_s=0.05)


def test_a_failed_start_report_is_a_clear_error_even_if_the_process_lingers(tmp_path: Path) -> None:
    """labctl-vcsim writes "failed" and exits; if it is slow to exit, the user still gets the
    one-line reason, not a TimeoutExpired traceback."""
    import json
    import subprocess
    from types import SimpleNamespace

    from labctl.errors import LabctlError
    from labctl.sim.vcenter.launcher import VcsimLaunch

    class Lingering:
        returncode = None

        def poll(self) -> None:
            return None

        def wait(self, timeout: float | None = None) -> int:
            raise subprocess.TimeoutExpired("labctl-vcsim", timeout or 0)

    ready = tmp_path / "ready.json"
    ready.write_text(json.dumps({"state": "failed", "error": "bad topology: no datacenter"}))
    launch = VcsimLaunch(
        SimpleNamespace(name="vc-01"),  # type: ignore[arg-type]
        SimpleNamespace(host="127.0.0.1", port=1),  # type: ignore[arg-type]
        Lingering(),  # type: ignore[arg-type]
        ready,
        tmp_path / "vcsim.log",
        tmp_path / "ca.pem",
    )
    with pytest.raises(LabctlError, match=r"vc-01 failed to start: bad topology: no datacenter \(log: "):
        launch.poll_ready()
