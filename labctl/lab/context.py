"""The bottom of the lab wing: one lab, its clock and timeline, the driver settings, and the
driver connections every service shares.

    ctx = LabContext(lab, clock)
    ctx.redfish(machine)          # one Redfish session per BMC, opened on first use and reused
    ctx.ssh.run(ctx.ssh_target(m), ["hostname"], ...)
    ctx.timeline.append("power.state", ...)
    ctx.close()                   # every session logged out, every connection closed

The context owns the driver objects: one SSH pool, one Wake-on-LAN sender, one Redfish or IPMI
session per BMC, one vCenter session per vCenter, one storage session per array, all closed by
:meth:`LabContext.close`. It imports only drivers, the inventory and the ground (and the timeline
and selectors beside it): the services above it (power, readiness, strategy, sources, health,
preflight, launchers, sites) take it in their constructors, and :class:`labctl.lab.session.LabSession`
builds them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from labctl.clock import LabClock
from labctl.drivers.base import Backoff
from labctl.drivers.ipmi import IpmiClient
from labctl.drivers.redfish import RedfishClient
from labctl.drivers.ssh import SshPool, SshTarget
from labctl.drivers.storage import StorageDriver, open_storage
from labctl.drivers.vsphere import VCenterClient
from labctl.drivers.wol import DEFAULT_RELAY_COMMAND, WolSender, WolTarget
from labctl.errors import EndpointError
from labctl.inventory.model import Lab, Machine, MachineKind, MachineRole
from labctl.lab.events import Timeline
from labctl.lab.targets import resolve


@dataclass(frozen=True)
class DriverSettings:
    """Timeouts (wall seconds: they are about networks, not the lab's physics), pools and retries."""

    ssh_connect_timeout_s: float = 10.0
    ssh_command_timeout_s: float = 120.0
    ssh_max_connections: int = 512
    ssh_max_parallel: int = 64
    wol_repeat: int = 3
    wol_gap_s: float = 0.05
    # run on a network's wol_relay host over SSH; {broadcast} {port} {macs} are filled in
    wol_relay_command: tuple[str, ...] = DEFAULT_RELAY_COMMAND
    redfish_timeout_s: float = 15.0
    redfish_backoff: Backoff = field(default_factory=lambda: Backoff(attempts=4, base_s=0.5, max_s=8.0))
    redfish_workers: int = 32  # BMCs handled at once (each BMC has its own max_sessions)
    ipmi_timeout_s: float = 15.0  # one IPMI request, pyghmi's retransmits included
    vcenter_timeout_s: float = 60.0
    vcenter_page_size: int = 500
    storage_timeout_s: float = 15.0
    # readiness
    ready_poll_lab_s: float = 2.0  # how often client/server readiness is polled, lab seconds
    ready_poll_min_wall_s: float = 0.1
    probe_timeout_s: float = 2.0  # TCP probe of an SSH port
    vm_ready_requires_tools: bool = True
    vm_ready_requires_ip: bool = True


class LabContext:
    """The lab, its clock, timeline and settings, and the pooled driver connections (see above)."""

    def __init__(
        self,
        lab: Lab,
        clock: LabClock | None = None,
        *,
        timeline: Timeline | None = None,
        settings: DriverSettings | None = None,
    ):
        self.lab = lab
        self.clock = clock or LabClock(scale=lab.time_scale)
        self.timeline = timeline or Timeline(self.clock)
        self.settings = settings or DriverSettings()
        s = self.settings
        self.ssh = SshPool(
            max_connections=s.ssh_max_connections,
            max_parallel=s.ssh_max_parallel,
            connect_timeout_s=s.ssh_connect_timeout_s,
            command_timeout_s=s.ssh_command_timeout_s,
        )
        self.wol = WolSender(
            repeat=s.wol_repeat, gap_s=s.wol_gap_s, ssh=self.ssh, relay_command=s.wol_relay_command
        )
        self._lock = threading.Lock()
        self._redfish: dict[str, RedfishClient] = {}
        self._ipmi: dict[str, IpmiClient] = {}
        self._vcenters: dict[str, VCenterClient] = {}
        self._storage: dict[str, StorageDriver] = {}
        self.last_state: dict[str, str] = {}  # machine -> last power state seen (for state-change events)
        self._closers: list[Callable[[], None]] = []  # e.g. the link to the site agents

    # --- selection -----------------------------------------------------------------------------
    def machines(self, selector: str | list[str] | tuple[str, ...]) -> list[Machine]:
        """The machines a selector names: a machine, a group, a range (optiplex-[001-010]), a list."""
        return resolve(self.lab, selector)

    @property
    def streaming_servers(self) -> list[Machine]:
        if self.lab.configuration is not None:
            return [
                self.lab.machines[n]
                for n in self.lab.configuration.streaming_servers
                if n in self.lab.machines
            ]
        return list(self.lab.servers_with_role(MachineRole.STREAMING))

    # --- drivers, created on first use and reused ------------------------------------------------
    def redfish(self, machine: Machine) -> RedfishClient:
        if machine.bmc is None:
            raise EndpointError(
                machine.name, "BMC", "the inventory gives this server no bmc:", "add bmc: {url: ...}"
            )
        with self._lock:
            client = self._redfish.get(machine.name)
            if client is None:
                client = self._redfish[machine.name] = RedfishClient(
                    machine.name,
                    machine.bmc,
                    timeout_s=self.settings.redfish_timeout_s,
                    backoff=self.settings.redfish_backoff,
                )
        return client.open()

    def ipmi(self, machine: Machine) -> IpmiClient:
        if machine.ipmi is None:
            raise EndpointError(
                machine.name, "IPMI", "the inventory gives this machine no ipmi:", "add ipmi: {host: ...}"
            )
        with self._lock:
            client = self._ipmi.get(machine.name)
            if client is None:
                client = self._ipmi[machine.name] = IpmiClient(
                    machine.name, machine.ipmi, timeout_s=self.settings.ipmi_timeout_s
                )
        return client.open()

    def vcenter(self, name: str) -> VCenterClient:
        if name not in self.lab.vcenters:
            raise EndpointError(name, "vCenter", "not declared in the inventory", "add it under vcenters:")
        with self._lock:
            client = self._vcenters.get(name)
            if client is None:
                client = self._vcenters[name] = VCenterClient(
                    self.lab.vcenters[name],
                    timeout_s=self.settings.vcenter_timeout_s,
                    page_size=self.settings.vcenter_page_size,
                )
        return client.open()

    def storage(self, name: str) -> StorageDriver:
        if name not in self.lab.storage:
            raise EndpointError(name, "storage", "not declared in the inventory", "add it under storage:")
        with self._lock:
            drv = self._storage.get(name)
            if drv is None:
                drv = self._storage[name] = open_storage(
                    self.lab.storage[name], timeout_s=self.settings.storage_timeout_s
                )
        return drv if drv.is_open else drv.open()

    def ssh_target(self, machine: Machine) -> SshTarget:
        return SshTarget.for_machine(machine)

    def wol_target(self, machine: Machine) -> WolTarget:
        net = self.lab.network_of(machine)
        if net is None or not machine.mac:
            raise EndpointError(
                machine.name,
                "Wake-on-LAN",
                "no network or MAC address in the inventory",
                "add network: and mac:",
            )
        relay = None
        if net.wol_relay:
            relay_machine = self.lab.machines.get(net.wol_relay)
            if relay_machine is None:
                raise EndpointError(
                    machine.name,
                    "Wake-on-LAN",
                    f"relay {net.wol_relay!r} of network {net.name} is not in this configuration",
                    "name a machine of the lab as wol_relay",
                )
            relay = SshTarget.for_machine(relay_machine)
        return WolTarget(machine.name, machine.mac, net.broadcast, net.wol_port, relay)

    # --- what every service records -------------------------------------------------------------
    def state_changed(self, machine: Machine, state: str, source: str, **detail: object) -> None:
        """Append a ``power.state`` event when a machine's observed state differs from the last one."""
        with self._lock:
            prev = self.last_state.get(machine.name)
            if prev == state:
                return
            self.last_state[machine.name] = state
        self.timeline.append("power.state", machine.name, state=state, previous=prev, source=source, **detail)

    # --- lifecycle -----------------------------------------------------------------------------
    def on_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` when the context closes (before its drivers are closed): a service's own
        resources (its metric sources, the link to the site agents)."""
        with self._lock:
            self._closers.append(fn)

    def close(self) -> None:
        """Log out of everything (Redfish and IPMI sessions, vCenter, arrays) and close SSH connections."""
        with self._lock:
            closers, self._closers = self._closers, []
        for fn in closers:
            fn()
        with self._lock:
            redfish, self._redfish = list(self._redfish.values()), {}
            bmcs, self._ipmi = list(self._ipmi.values()), {}
            vcs, self._vcenters = list(self._vcenters.values()), {}
            arrays, self._storage = list(self._storage.values()), {}
        for r in redfish:
            r.close()
        for b in bmcs:
            b.close()
        for v in vcs:
            v.close()
        for a in arrays:
            a.close()
        self.ssh.close()

    def __enter__(self) -> LabContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def kinds(machines: list[Machine]) -> dict[MachineKind, list[Machine]]:
    out: dict[MachineKind, list[Machine]] = {}
    for m in machines:
        out.setdefault(m.kind, []).append(m)
    return out


def by_vcenter(vms: Sequence[Machine]) -> dict[str, list[Machine]]:
    """VMs grouped by the vCenter that runs them ("" for none given: the session then says so)."""
    out: dict[str, list[Machine]] = {}
    for m in vms:
        out.setdefault(m.vcenter or "", []).append(m)
    return out


def agents_of(machines: Sequence[Machine]) -> dict[str, list[Machine]]:
    """Machines grouped by the site agent that serves them (machines without one are left out)."""
    out: dict[str, list[Machine]] = {}
    for m in machines:
        if m.agent:
            out.setdefault(m.agent, []).append(m)
    return out


class HasContext(Protocol):
    """What carries a lab context (the session façade), for functions that take either."""

    @property
    def context(self) -> LabContext: ...


def context_of(owner: LabContext | HasContext) -> LabContext:
    """The context itself, or the one a session carries."""
    return owner if isinstance(owner, LabContext) else owner.context
