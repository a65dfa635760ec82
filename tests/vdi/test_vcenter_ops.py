"""Operations on the simulated vCenter that the twin carries out: paced PowerOnMultiVM, a guest reboot
that really reboots, a guest shutdown, maintenance mode, and a datastore that fills up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyVmomi import vim

from labctl.sim.twin.interface import DesktopPhase, PowerState
from tests.vdi.labs import vdi_yaml
from tests.vdi.vcenter_twin import TwinVcenter, by_name, twin_vcenter, wait_for

pytestmark = pytest.mark.integration

BOOT_S = 80.0  # power-on, BIOS and a ~50 s guest boot, with margin


def vms(si: Any) -> dict[str, Any]:
    return by_name(si, vim.VirtualMachine)


def hosts(si: Any) -> dict[str, Any]:
    return by_name(si, vim.HostSystem)


def task_done(task: Any) -> Any:
    return wait_for(lambda: task.info if task.info.state in ("success", "error") else None, f"task {task}")


def tools(vm: Any) -> bool:
    return bool(vm.guest.toolsRunningStatus == "guestToolsRunning")


def boot(tv: TwinVcenter, names: list[str]) -> None:
    with tv.client() as c:
        res = c.power_on(names, timeout_s=60)
        assert all(o.ok for o in res.outcomes.values()), res.outcomes
    tv.synced()
    tv.advance(BOOT_S)


def test_power_on_multi_is_paced_and_the_guests_come_up_with_the_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = vdi_yaml(desktops=10, twin="vcenter_power_ops_per_s: 1.0")  # 60 per wall second at 60x
    with twin_vcenter(tmp_path, text, monkeypatch) as tv, tv.client() as c:
        names = sorted(c.inventory())
        res = c.power_on(names, timeout_s=60)
        assert res.calls == 1 and all(o.ok for o in res.outcomes.values())
        starts = sorted(o.started_wall for o in res.outcomes.values() if o.started_wall is not None)
        assert len(starts) == 10
        # one power-on starts every 1/60 wall s at most: the storm queues in vCenter
        assert starts[-1] - starts[0] >= 0.9 * 9 / 60
        tv.synced()
        assert {tv.twin.desktop_state(n).power for n in names} == {PowerState.ON}
        assert not any(v.tools_running for v in c.inventory().values())  # booting
        tv.advance(BOOT_S)
        wait_for(lambda: all(v.tools_running for v in c.inventory().values()), "every guest up")
        inv = c.inventory()
        assert {n: inv[n].ip for n in names} == {n: tv.twin.desktop_state(n).ip for n in names}


def test_a_guest_reboot_really_reboots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with twin_vcenter(tmp_path, vdi_yaml(desktops=4), monkeypatch) as tv:
        boot(tv, ["d-0001"])
        with tv.si() as si:
            vm = vms(si)["d-0001"]
            wait_for(lambda: tools(vm), "the guest up")
            booted, count = vm.runtime.bootTime, tv.twin.desktop_state("d-0001").boot_count
            vm.RebootGuest()
            tv.synced()
            assert tv.twin.desktop_state("d-0001").phase is DesktopPhase.SHUTTING_DOWN
            tv.advance(1)
            wait_for(lambda: not tools(vm), "Tools down while the guest restarts")
            assert vm.runtime.powerState == "poweredOn" and vm.runtime.bootTime == booted  # not a reset
            tv.advance(20 + BOOT_S)  # shutdown, then a boot
            wait_for(lambda: tools(vm), "Tools back after the reboot")
            assert tv.twin.desktop_state("d-0001").boot_count == count + 1
            off = vms(si)["d-0002"]
            with pytest.raises(vim.fault.InvalidPowerState):
                off.RebootGuest()
            task_done(off.PowerOnVM_Task())
            with pytest.raises(vim.fault.ToolsUnavailable):  # booting: no Tools to ask
                off.RebootGuest()


def test_a_guest_shutdown_powers_the_vm_off_when_the_guest_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with twin_vcenter(tmp_path, vdi_yaml(desktops=2), monkeypatch) as tv:
        boot(tv, ["d-0001"])
        with tv.si() as si:
            vm = vms(si)["d-0001"]
            wait_for(lambda: tools(vm), "the guest up")
            vm.ShutdownGuest()
            tv.synced()
            tv.advance(1)
            wait_for(lambda: not tools(vm), "Tools down")
            assert vm.runtime.powerState == "poweredOn"  # the guest is still shutting down
            tv.advance(20)
            wait_for(lambda: vm.runtime.powerState == "poweredOff", "the VM off")
            assert tv.twin.desktop_state("d-0001").power is PowerState.OFF


def test_maintenance_mode_moves_the_hosts_desktops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with twin_vcenter(tmp_path, vdi_yaml(desktops=9, hosts=3), monkeypatch) as tv:
        boot(tv, [f"d-{i:04d}" for i in range(1, 10)])
        with tv.si() as si:
            host = hosts(si)["esx-vdi-01"]
            mine = {vm.name for vm in host.vm}
            assert len(mine) == 3
            info = task_done(host.EnterMaintenanceMode_Task(timeout=0))
            assert info.state == "success"
            assert host.runtime.inMaintenanceMode and host.summary.runtime.inMaintenanceMode
            assert list(host.vm) == []
            every = vms(si)
            assert {every[n].runtime.host.name for n in mine} <= {"esx-vdi-02", "esx-vdi-03"}
            assert {tv.twin.desktop_state(n).host for n in mine} <= {"esx-vdi-02", "esx-vdi-03"}
            assert all(every[n].runtime.powerState == "poweredOn" for n in mine)  # moved, not stopped
            assert task_done(host.ExitMaintenanceMode_Task(timeout=0)).state == "success"
            assert not host.runtime.inMaintenanceMode


def test_a_host_fault_and_a_full_datastore_show_as_vcenter_shows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = """
- {kind: host_in_maintenance, targets: [esx-vdi-02], after_s: 100}
- {kind: datastore_full, targets: [ds-1], after_s: 100}
"""
    text = vdi_yaml(desktops=6, hosts=2, arrays=2, faults=faults)
    with twin_vcenter(tmp_path, text, monkeypatch) as tv:
        boot(tv, [f"d-{i:04d}" for i in range(1, 7)])
        with tv.si() as si, tv.client() as c:
            before = c.datastores()
            assert before["ds-1"].free_bytes > 0 and before["ds-1"].status == "green"
            tv.advance(40)  # past both faults
            wait_for(lambda: c.datastores()["ds-1"].free_bytes == 0, "ds-1 full")
            after = c.datastores()
            assert after["ds-1"].status == "red" and after["ds-2"].free_bytes == before["ds-2"].free_bytes
            h2 = hosts(si)["esx-vdi-02"]
            wait_for(lambda: h2.runtime.inMaintenanceMode, "esx-vdi-02 in maintenance")
            every = vms(si)
            wait_for(
                lambda: all(vm.runtime.host.name == "esx-vdi-01" for vm in every.values()), "desktops moved"
            )
            on_full = [n for n, vm in every.items() if tv.twin.desktop_state(n).datastore == "ds-1"]
            assert on_full and all(tv.twin.desktop_state(n).stunned for n in on_full)
            vm = every[on_full[0]]
            q = wait_for(lambda: vm.runtime.question, "the out-of-space question")
            assert q.message[0].id == "msg.hbacommon.outofspace" and "ds-1" in q.text
            assert [c.key for c in q.choice.choiceInfo] == ["0", "1"]  # Cancel, Retry
            assert not tools(vm) and vm.runtime.powerState == "poweredOn"  # stunned, not off
            others = [n for n in every if n not in on_full]
            assert all(every[n].runtime.question is None and tools(every[n]) for n in others)
            vm.AnswerVM(questionId=q.id, answerChoice="1")  # Retry: still full, asked again
            q2 = vm.runtime.question
            assert q2 is not None and q2.id != q.id
            vm.AnswerVM(questionId=q2.id, answerChoice="0")  # Cancel: the VM stops
            assert vm.runtime.powerState == "poweredOff" and vm.runtime.question is None
            tv.synced()
            assert tv.twin.desktop_state(vm.name).power is PowerState.OFF
