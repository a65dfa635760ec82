"""The contract between the simulated endpoints and the lab twin.

Every simulated endpoint (Redfish, SSH, WoL, Unity REST, the vCenter guest updater) asks one
:class:`LabTwin` what to report. The placeholder twin and the physical twin both implement it, so
the physical model plugs in without touching an endpoint.

Conventions:
- Times are *lab* seconds since the Unix epoch, from the twin's :class:`~labctl.clock.LabClock`.
- Counters are cumulative raw values, as Windows PDH and Unity keep them; endpoints compute the
  per-interval figures (``% Processor Time``, ``Avg. Disk Queue Length`` = delta of the queue-length
  integral over delta time, ...) from two readings exactly as the real systems do.
- A twin is thread-safe: endpoints call it from several threads and an asyncio loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from labctl.clock import LabClock


class PowerState(StrEnum):
    ON = "On"
    OFF = "Off"
    POWERING_ON = "PoweringOn"
    POWERING_OFF = "PoweringOff"


class PowerAction(StrEnum):
    ON = "on"  # power button / WoL / Redfish On
    FORCE_OFF = "force_off"  # immediate, no OS shutdown
    SHUTDOWN = "shutdown"  # graceful OS shutdown, then off (S5)
    RESTART = "restart"  # graceful OS restart
    FORCE_RESTART = "force_restart"  # reset without OS shutdown
    POWER_CYCLE = "power_cycle"


class CopyLocation(StrEnum):
    LOCAL = "local"  # the client's C: drive (vDisk reads, write-cache writes on the server)
    SHARE = "share"  # a UNC path on another server


@dataclass(frozen=True)
class NicCounters:
    name: str  # PDH instance name, e.g. "Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client] _2"
    bytes_sent: float  # cumulative bytes
    bytes_received: float  # cumulative bytes
    bandwidth_bps: float  # Current Bandwidth, bits per second


@dataclass(frozen=True)
class VolumeCounters:
    name: str  # PDH PhysicalDisk instance, e.g. "1 D:"
    transfers: float  # cumulative completed I/Os
    reads: float
    writes: float
    bytes_read: float
    bytes_written: float
    queue_length_integral: float  # cumulative integral of (queued + in service) requests over time, request*s
    response_time_sum_s: float  # cumulative sum of per-I/O response times, s


@dataclass(frozen=True)
class ServerCounters:
    """One reading of a Windows server's raw performance counters."""

    lab_time_s: float
    cpu_cores: int
    cpu_busy_core_s: float  # cumulative busy time summed over all cores, core*s
    memory_total_mb: float
    memory_available_mb: float  # instantaneous (Memory\\Available MBytes)
    nics: tuple[NicCounters, ...]
    volumes: tuple[VolumeCounters, ...]


@dataclass(frozen=True)
class DeviceStatus:
    """A streaming client as the streaming server's device status reports it (PVS style)."""

    name: str
    mac: str
    active: bool
    retries: int  # UDP re-sends in the current session (first field of PVS Status)
    boot_time_s: float | None  # first network contact to agent start, None while booting/off
    server: str  # the streaming server the client is connected to
    ip: str | None


@dataclass(frozen=True)
class CopyJob:
    job_id: str
    client: str
    source: CopyLocation
    destination: CopyLocation
    size_bytes: int
    started_lab_s: float
    finished_lab_s: float | None  # None while running
    failed: str | None = None  # reason, when the client went down mid-copy
    # lab seconds the copy still needs at its current speed (None: finished, failed or not known
    # yet); lets a caller wait for it without polling the twin every few lab seconds
    eta_lab_s: float | None = None


@dataclass(frozen=True)
class LunCounters:
    """Raw Unity-style LUN counters (cumulative), per storage processor."""

    lun: str
    sp: str  # "spa" / "spb"
    reads: float
    writes: float
    read_blocks: float  # 512-byte blocks
    write_blocks: float
    total_io_time_us: float  # cumulative busy time, microseconds


@runtime_checkable
class LabTwin(Protocol):
    """What every simulated endpoint asks. Machine names are the inventory's."""

    clock: LabClock

    # --- power ---------------------------------------------------------------------------------
    def power_state(self, machine: str) -> PowerState: ...

    def power(self, machine: str, action: PowerAction) -> None:
        """Start a power action. The state changes later, when the twin says it has completed."""

    def wake_on_lan(self, mac: str) -> str | None:
        """A magic packet for ``mac`` arrived. Returns the woken machine's name, or None if unknown."""

    def is_os_up(self, machine: str) -> bool:
        """The OS answers on the network (SSH, guest tools): booted and not shutting down."""

    def boot_count(self, machine: str) -> int:
        """How many boots of this machine have completed (an SSH endpoint uses it to notice reboots)."""

    # --- servers -------------------------------------------------------------------------------
    def server_counters(self, server: str) -> ServerCounters: ...

    def power_consumed_watts(self, server: str) -> float: ...

    def device_status(self, streaming_server: str) -> tuple[DeviceStatus, ...]: ...

    # --- workloads -----------------------------------------------------------------------------
    def start_copy(
        self, client: str, source: CopyLocation, destination: CopyLocation, size_bytes: int
    ) -> CopyJob: ...

    def copy_status(self, job_id: str) -> CopyJob: ...

    # --- storage arrays ------------------------------------------------------------------------
    def lun_counters(self, array: str) -> tuple[LunCounters, ...]: ...


# --- virtual-desktop labs (issue vdi-lab) ----------------------------------------------------------
#
# What the vCenter, array and session-launcher simulators serve for a VDI lab. Same conventions as
# above: lab seconds, cumulative raw counters (a simulator computes an interval's average as the
# delta over the delta of lab time, exactly as vCenter's 20 s real-time samples and the arrays'
# metric queries do), thread-safe calls. Machine names are the inventory's: desktops are its VMs,
# hosts its ESXi hosts, datastores and array volumes its ``vdi.datastores``.


class DesktopPhase(StrEnum):
    OFF = "off"
    POWERING_ON = "powering_on"  # VM started, BIOS
    BOOTING = "booting"  # guest OS booting: no VMware Tools yet
    SETTLING = "settling"  # guest up (Tools running, IP); services and the broker agent starting
    IDLE = "idle"  # booted, no session
    LOGGING_IN = "logging_in"
    WORKING = "working"  # a session runs its workload
    LOGGING_OFF = "logging_off"
    SHUTTING_DOWN = "shutting_down"


@dataclass(frozen=True)
class DesktopState:
    """A desktop VM as vCenter and the broker see it."""

    name: str
    pool: str
    host: str  # the ESXi host it runs on now (moves when its host enters maintenance)
    datastore: str
    power: PowerState  # as vCenter reports runtime.powerState: On from power-on to off
    phase: DesktopPhase
    tools_running: bool  # VMware Tools running (guest OS up and responsive; False while stunned)
    ip: str | None  # guest IP while Tools run
    boot_count: int  # completed boots (a guest reboot increments it when the guest is up again)
    registered: bool  # broker agent registered: the desktop can take a session
    session_id: str | None
    stunned: bool  # suspended by ESXi: its datastore is full


@dataclass(frozen=True)
class HostPerf:
    """One ESXi host's raw counters: what QueryPerf's host counters are computed from.

    cpu.usagemhz = d(cpu_used_mhz_s)/dt; cpu.usage = that / cpu_capacity_mhz (x100 for the
    percentage, 1/100 % units on the wire); mem.consumed / mem.active / mem.vmmemctl in KB =
    d(*_kb_s)/dt; mem.usage = consumed / mem_total_kb; net.usage (KBps) = d(bytes)/dt / 1024.
    """

    host: str
    lab_time_s: float
    cpu_cores: int
    cpu_mhz_per_core: float
    cpu_capacity_mhz: float
    cpu_used_mhz_s: float  # cumulative integral of CPU used, MHz x s
    mem_total_kb: float
    mem_consumed_kb_s: float  # cumulative integrals, KB x s
    mem_active_kb_s: float
    mem_balloon_kb_s: float
    net_bytes_rx: float  # cumulative, every vmnic (VM traffic, PVS streams, iSCSI)
    net_bytes_tx: float
    nic_capacity_bps: float  # all ports, bits per second
    vms_powered_on: int
    in_maintenance: bool


@dataclass(frozen=True)
class VmPerf:
    """One desktop VM's raw counters (QueryPerf VM counters: cpu, mem, net, virtualDisk/datastore)."""

    vm: str
    host: str
    lab_time_s: float
    vcpus: int
    mem_configured_kb: float
    cpu_used_mhz_s: float  # cumulative, MHz x s
    mem_active_kb_s: float  # cumulative integrals, KB x s
    mem_consumed_kb_s: float
    mem_balloon_kb_s: float
    net_bytes_rx: float  # cumulative
    net_bytes_tx: float
    disk_reads: float  # cumulative I/Os that reached a datastore (not those served by PVS or guest RAM)
    disk_writes: float
    disk_bytes_read: float
    disk_bytes_written: float
    disk_read_latency_sum_s: float  # cumulative sum of those I/Os' latencies as ESXi measures them, s
    disk_write_latency_sum_s: float


@dataclass(frozen=True)
class DatastorePerf:
    """A datastore's raw counters, seen from one host (``host``) or from every host (``host`` None)."""

    datastore: str
    host: str | None
    lab_time_s: float
    reads: float  # cumulative
    writes: float
    bytes_read: float
    bytes_written: float
    read_latency_sum_s: float  # cumulative sums of per-I/O latency (datastore.totalReadLatency = delta/ios)
    write_latency_sum_s: float
    capacity_bytes: float
    free_bytes: float


@dataclass(frozen=True)
class ArrayVolumeCounters:
    """An array volume's cumulative counters as arrays keep them (Unity LUN, PowerStore volume,
    SC volume, EqualLogic volume)."""

    array: str
    volume: str
    controller: str  # owning controller now: spa/spb (Unity), node_a/node_b, ctrl_a/ctrl_b, cm0/cm1
    lab_time_s: float
    reads: float
    writes: float
    bytes_read: float
    bytes_written: float
    read_response_sum_s: float  # summed response times as the array measures them (front end to ack), s
    write_response_sum_s: float
    queue_integral: float  # integral of I/Os outstanding at the array, I/O x s (avg queue = delta / dt)


@dataclass(frozen=True)
class ArrayTierCounters:
    """Back-end counters of one tier (drive class) of an array: drive I/Os after RAID."""

    array: str
    tier: str  # "ssd", "15k", "10k", "nl"
    drives: int
    lab_time_s: float
    reads: float  # cumulative drive reads
    writes: float  # cumulative drive writes (host writes x RAID penalty, destaged)
    bytes_read: float
    bytes_written: float
    busy_drive_s: float  # cumulative busy time summed over drives (utilisation = delta / dt / drives)


@dataclass(frozen=True)
class ArrayControllerCounters:
    array: str
    controller: str
    state: str  # "active", "standby", "failed"
    lab_time_s: float
    ios: float  # cumulative front-end I/Os processed
    busy_s: float  # cumulative busy time (utilisation = delta / dt)
    write_cache_dirty_bytes: float  # now
    write_cache_bytes: float  # capacity
    write_through: bool  # its write cache is off (a peer failed): writes wait for the drives


class SessionState(StrEnum):
    LOGGING_IN = "logging_in"
    ACTIVE = "active"
    LOGGING_OFF = "logging_off"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    desktop: str
    user: str
    workload: str
    state: SessionState
    requested_lab_s: float
    logged_in_lab_s: float | None
    login_duration_s: float | None  # request to desktop ready (connection, profile, shell)
    ended_lab_s: float | None
    failed: str | None  # why, when state is FAILED
    operations: int  # timed operations completed so far
    loops: int  # workload loops completed


@dataclass(frozen=True)
class OperationTiming:
    """One timed operation of a session's workload, as a VSI-style launcher measures it."""

    session_id: str
    index: int  # 0, 1, ... within the session
    name: str  # the workload's operation, e.g. "pdf_open"
    started_lab_s: float
    response_s: float  # CPU time under the host's contention plus the I/O it waits for


class SessionRefused(ValueError):
    """A session cannot start on this desktop now (off, not registered, busy, stunned); says which and why."""


@runtime_checkable
class VdiTwin(Protocol):
    """What the VDI simulators ask, beside :class:`LabTwin`'s power calls (which drive desktops too).

    Desktops are powered with ``LabTwin.power(vm, action)``: PowerOn -> ``ON``, PowerOff ->
    ``FORCE_OFF``, ShutdownGuest -> ``SHUTDOWN``, RebootGuest -> ``RESTART`` (a real guest reboot:
    Tools go down, the boot count rises when the guest is up again), ResetVM -> ``FORCE_RESTART``.
    """

    def desktops(self) -> tuple[DesktopState, ...]:
        """Every desktop, in inventory order (one call for thousands)."""

    def desktop_state(self, vm: str) -> DesktopState: ...

    def power_many(self, vms: list[str], action: PowerAction) -> None:
        """One power action for many desktops at once (PowerOnMultiVM), under one lock."""

    def host_perf(self, host: str) -> HostPerf: ...

    def vm_perf(self, vms: list[str] | None = None) -> tuple[VmPerf, ...]:
        """Counters of the given desktops (default every desktop), in one call."""

    def datastore_perf(self, host: str | None = None) -> tuple[DatastorePerf, ...]: ...

    def array_volume_counters(self, array: str) -> tuple[ArrayVolumeCounters, ...]: ...

    def array_tier_counters(self, array: str) -> tuple[ArrayTierCounters, ...]: ...

    def array_controller_counters(self, array: str) -> tuple[ArrayControllerCounters, ...]: ...

    def set_host_maintenance(self, host: str, on: bool) -> None:
        """EnterMaintenanceMode / ExitMaintenanceMode: its running desktops move to the cluster's other hosts."""

    def start_session(self, desktop: str, user: str) -> SessionInfo:
        """A user logs on to a registered, free desktop; raises :class:`SessionRefused` otherwise."""

    def session(self, session_id: str) -> SessionInfo: ...

    def session_operations(self, session_id: str, since: int = 0) -> tuple[OperationTiming, ...]:
        """The session's timed operations with index >= ``since`` (poll with the last index + 1)."""

    def logoff(self, session_id: str) -> SessionInfo: ...
