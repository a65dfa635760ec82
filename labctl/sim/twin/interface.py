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
