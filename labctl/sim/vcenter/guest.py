"""Guest readiness for the simulated vCenter: the twin decides when a VM's OS is up.

Plain vcsim VMs never report VMware Tools running or an IP. This updater (threads in the
simulator process) connects to the simulated vCenter with pyVmomi, as any client would, and:

- watches every VM's ``runtime.powerState`` and ``runtime.bootTime`` with the property collector
  (``WaitForUpdatesEx``) and tells the twin: powered on -> ``power(vm, ON)``, powered off or
  suspended -> ``power(vm, FORCE_OFF)``, a new boot time while on (a reset) ->
  ``power(vm, FORCE_RESTART)``;
- polls the twin, and when ``twin.is_os_up(vm)`` turns true marks the guest ready with
  ``ReconfigVM_Task`` extraConfig ``SET.guest.*`` keys (tools running and OK, guest state running,
  IP address, host name -- vcsim v0.46.3 applies ``SET.<property path>`` to the VM's properties
  without storing them in extraConfig); when the OS goes down (power off, reset) it clears them
  again, as a real vCenter shows tools not running for a VM that is off.

Limitation: vcsim's ``RebootGuest`` changes nothing a client can observe, so a guest reboot is not
passed to the twin (a reset is).
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from labctl.clock import LabClock
from labctl.inventory.model import VCenter
from labctl.sim.twin.interface import LabTwin, PowerAction
from labctl.sim.vcenter.topology import Topology

log = logging.getLogger(__name__)

READY = {
    "SET.guest.toolsRunningStatus": "guestToolsRunning",
    "SET.guest.toolsStatus": "toolsOk",
    "SET.guest.guestState": "running",
    "SET.summary.guest.toolsRunningStatus": "guestToolsRunning",
    "SET.summary.guest.toolsStatus": "toolsOk",
}
NOT_READY = {
    "SET.guest.toolsRunningStatus": "guestToolsNotRunning",
    "SET.guest.toolsStatus": "toolsNotRunning",
    "SET.guest.guestState": "notRunning",
    "SET.summary.guest.toolsRunningStatus": "guestToolsNotRunning",
    "SET.summary.guest.toolsStatus": "toolsNotRunning",
    "SET.guest.ipAddress": "",  # an empty value clears the property
    "SET.guest.hostName": "",
}


@dataclass
class _Vm:
    name: str
    moref: Any = None
    power: str = "poweredOff"
    boot_time: Any = None
    marked_ready: bool = False


@dataclass
class GuestStats:
    connected: bool = False
    power_events: int = 0
    marked_ready: int = 0
    marked_not_ready: int = 0
    errors: int = 0
    last_error: str = ""
    vms: dict[str, _Vm] = field(default_factory=dict)


class GuestUpdater:
    def __init__(
        self,
        vc: VCenter,
        topo: Topology,
        *,
        password: str,
        twin: LabTwin,
        clock: LabClock,
        ca_file: str | None,
        poll_lab_s: float = 1.0,
    ):
        self.vc = vc
        self.topo = topo
        self.password = password
        self.twin = twin
        self.clock = clock
        self.ca_file = ca_file
        # how often the twin is asked (wall seconds): about one lab second, within [20 ms, 250 ms]
        self.poll_wall_s = min(0.25, max(0.02, clock.to_wall_s(poll_lab_s)))
        self._ips = {v.name: v.guest_ip for v in topo.vms}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stats = GuestStats(vms={v.name: _Vm(v.name) for v in topo.vms})
        self._threads: list[threading.Thread] = []
        self._watch_si: Any = None
        self._ready_si: Any = None
        self._collector: Any = None  # the watcher's property collector (set by _init_filter)

    # --- lifecycle -----------------------------------------------------------------------------
    def _connect(self) -> Any:
        from pyVim.connect import SmartConnect

        if self.ca_file:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            ctx.check_hostname = False  # the certificate names the IP; pyVmomi connects by host
        else:
            ctx = ssl._create_unverified_context()
        return SmartConnect(
            host=self.topo.host,
            port=self.topo.port,
            user=self.vc.user,
            pwd=self.password,
            sslContext=ctx,
            httpConnectionTimeout=15,
            connectionPoolTimeout=0,
        )

    def start(self, connect_timeout_s: float = 30.0) -> None:
        """Connect (retrying while the simulated vCenter starts) and start watching."""
        deadline = time.monotonic() + connect_timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline and not self._stop.is_set():
            try:
                if self._watch_si is None:  # kept from an earlier try where only the second failed
                    self._watch_si = self._connect()
                self._ready_si = self._connect()
                break
            except Exception as exc:  # not listening yet, or still building its inventory
                last = exc
                time.sleep(0.05)
        else:
            raise TimeoutError(
                f"guest updater: cannot log in to vCenter {self.vc.name} at "
                f"{self.topo.host}:{self.topo.port} within {connect_timeout_s:g} s: {last}"
            )
        self._init_filter()
        with self._lock:
            self._stats.connected = True
        for target, name in ((self._watch, "watch"), (self._ready_loop, "ready")):
            t = threading.Thread(target=target, name=f"vcenter-guest-{name}-{self.vc.name}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        if self._collector is not None:
            try:
                self._collector.CancelWaitForUpdates()  # the watcher's long poll returns at once
            except Exception:
                pass
        for t in self._threads:
            t.join(timeout=3.0)
        self._threads.clear()
        from pyVim.connect import Disconnect

        for si in (self._watch_si, self._ready_si):
            if si is not None:
                try:
                    Disconnect(si)
                except Exception:
                    pass
        self._watch_si = self._ready_si = None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            s = self._stats
            return {
                "connected": s.connected,
                "vms": len(s.vms),
                "guests_ready": sum(1 for v in s.vms.values() if v.marked_ready),
                "powered_on": sum(1 for v in s.vms.values() if v.power == "poweredOn"),
                "power_events": s.power_events,
                "marked_ready": s.marked_ready,
                "marked_not_ready": s.marked_not_ready,
                "errors": s.errors,
                "last_error": s.last_error,
            }

    # --- power watching ------------------------------------------------------------------------
    def _init_filter(self) -> None:
        from pyVmomi import vim, vmodl

        content = self._watch_si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
        pc = vmodl.query.PropertyCollector
        spec = pc.FilterSpec(
            objectSet=[
                pc.ObjectSpec(
                    obj=view,
                    skip=True,
                    selectSet=[
                        pc.TraversalSpec(name="vms", path="view", skip=False, type=vim.view.ContainerView)
                    ],
                )
            ],
            propSet=[
                pc.PropertySpec(
                    type=vim.VirtualMachine, pathSet=["name", "runtime.powerState", "runtime.bootTime"]
                )
            ],
        )
        self._collector = content.propertyCollector.CreatePropertyCollector()
        self._collector.CreateFilter(spec, partialUpdates=False)
        self._version = ""

    def _watch(self) -> None:
        from pyVmomi import vmodl

        options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=1)
        while not self._stop.is_set():
            try:
                update = self._collector.WaitForUpdatesEx(self._version, options)
            except Exception as exc:
                if self._stop.is_set():
                    return  # CancelWaitForUpdates from stop()
                self._error(f"WaitForUpdatesEx: {exc}")
                self._stop.wait(0.5)
                continue
            if update is None:
                continue
            self._version = update.version
            for fs in update.filterSet:
                for obj in fs.objectSet:
                    props = {c.name: c.val for c in obj.changeSet}
                    self._on_change(obj.obj, props)

    def _on_change(self, moref: Any, props: dict[str, Any]) -> None:
        with self._lock:
            vm = next((v for v in self._stats.vms.values() if v.moref == moref), None)
            if vm is None:
                name = props.get("name")
                vm = self._stats.vms.get(name) if name else None
                if vm is None:
                    return  # not one of the lab's VMs
                vm.moref = moref
            old_power, old_boot = vm.power, vm.boot_time
            new_power = str(props.get("runtime.powerState", old_power))
            new_boot = props.get("runtime.bootTime", old_boot)
            vm.power, vm.boot_time = new_power, new_boot
        action: PowerAction | None = None
        if new_power == "poweredOn" and old_power != "poweredOn":
            action = PowerAction.ON
        elif new_power != "poweredOn" and old_power == "poweredOn":
            action = PowerAction.FORCE_OFF
        elif (
            new_power == "poweredOn"
            and new_boot is not None
            and old_boot is not None
            and new_boot != old_boot
        ):
            action = PowerAction.FORCE_RESTART
        if action is None:
            return
        try:
            self.twin.power(vm.name, action)
        except Exception as exc:
            self._error(f"twin.power({vm.name}, {action}): {exc}")
            return
        with self._lock:
            self._stats.power_events += 1
        log.info("vcenter %s: %s %s -> twin %s", self.vc.name, vm.name, new_power, action.value)

    # --- guest readiness -----------------------------------------------------------------------
    def _ready_loop(self) -> None:
        from pyVmomi import vim

        while not self._stop.wait(self.poll_wall_s):
            with self._lock:
                vms = [(v.name, v.moref, v.power, v.marked_ready) for v in self._stats.vms.values()]
            for name, moref, power, marked in vms:
                if moref is None:
                    continue
                try:
                    up = power == "poweredOn" and self.twin.is_os_up(name)
                except Exception as exc:
                    self._error(f"twin.is_os_up({name}): {exc}")
                    continue
                if up == marked:
                    continue
                values = (
                    dict(READY, **{"SET.guest.ipAddress": self._ips[name], "SET.guest.hostName": name})
                    if up
                    else NOT_READY
                )
                spec = vim.vm.ConfigSpec(
                    extraConfig=[vim.option.OptionValue(key=k, value=v) for k, v in values.items()]
                )
                try:
                    vm_obj = vim.VirtualMachine(moref._moId, self._ready_si._stub)
                    task = vm_obj.ReconfigVM_Task(spec)
                    self._wait_task(task)
                except Exception as exc:
                    self._error(f"ReconfigVM_Task({name}): {exc}")
                    continue
                with self._lock:
                    self._stats.vms[name].marked_ready = up
                    if up:
                        self._stats.marked_ready += 1
                    else:
                        self._stats.marked_not_ready += 1
                log.info("vcenter %s: guest of %s %s", self.vc.name, name, "ready" if up else "not ready")

    def _wait_task(self, task: Any, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = task.info.state
            if state == "success":
                return
            if state == "error":
                raise RuntimeError(str(task.info.error.msg if task.info.error else "task failed"))
            time.sleep(0.01)
        raise TimeoutError(f"task did not finish within {timeout_s:g} s")

    def _error(self, message: str) -> None:
        log.warning("vcenter %s: %s", self.vc.name, message)
        with self._lock:
            self._stats.errors += 1
            self._stats.last_error = message
