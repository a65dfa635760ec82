"""From inventory hardware to physical capacities: disk service times, RAID penalties, NIC rates.

Everything here is a pure function of the inventory and the twin parameters, so a reader can check
the numbers the queueing model runs on (``labctl sim calibrate`` prints them for the lab).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labctl.inventory.model import DiskType, Nics, ServerHardware, Volume
from labctl.inventory.twin_params import TwinParameters

MB = 1024.0 * 1024.0
KB = 1024.0

# Host writes cost this many disk writes: a mirror writes both halves; parity RAID reads old data
# and parity and writes both back.
RAID_WRITE_PENALTY: dict[int, int] = {0: 1, 1: 2, 10: 2, 5: 4, 50: 4, 6: 6, 60: 6}


@dataclass(frozen=True)
class DiskTiming:
    """One spindle (or SSD) of a volume."""

    positioning_ms: float  # seek + rotational latency (or an SSD's per-I/O service time)
    media_rate_mb_s: float  # sustained transfer rate

    def io_ms(self, io_kb: float) -> float:
        """Service time of one I/O of ``io_kb`` on one disk, ms."""
        return self.positioning_ms + io_kb * KB / (self.media_rate_mb_s * MB) * 1e3


def disk_timing(volume: Volume, p: TwinParameters) -> DiskTiming:
    """Per-disk service time from the inventory: ``service_time_ms`` if given, else rpm and seek.

    A random I/O on a rotational disk pays a seek (short: the vDisk and write-cache files occupy a
    narrow band, hence ``short_stroke_factor``) and on average half a revolution.
    """
    solid = volume.disk_type in (DiskType.SSD, DiskType.NVME)
    if solid:
        rate = p.media_rate_mb_s_nvme if volume.disk_type is DiskType.NVME else p.media_rate_mb_s_ssd
        default_ms = p.nvme_service_time_ms if volume.disk_type is DiskType.NVME else p.ssd_service_time_ms
        return DiskTiming(volume.service_time_ms or default_ms, rate)
    if volume.service_time_ms is not None:
        return DiskTiming(volume.service_time_ms, p.media_rate_mb_s_hdd)
    rpm = volume.rpm or 7200
    if volume.avg_seek_ms is not None:
        seek = volume.avg_seek_ms
    elif rpm >= 15000:
        seek = p.seek_ms_15k
    elif rpm >= 10000:
        seek = p.seek_ms_10k
    else:
        seek = p.seek_ms_7200
    half_rotation_ms = 0.5 * 60_000.0 / rpm
    return DiskTiming(seek * p.short_stroke_factor + half_rotation_ms, p.media_rate_mb_s_hdd)


def raid_write_penalty(volume: Volume) -> int:
    return RAID_WRITE_PENALTY[volume.raid]


def write_capacity_iops(volume: Volume, p: TwinParameters, io_kb: float) -> float:
    """Host writes per second the spindles sustain once the controller cache is full.

    ``disks / penalty / io_time``: for the 2007 write-cache RAID10 of 4 x 10K SAS at 8 KB,
    4 / 2 / 5.35 ms = about 370 writes/s.
    """
    t = disk_timing(volume, p)
    return volume.disks / raid_write_penalty(volume) / (t.io_ms(io_kb) / 1e3)


def read_capacity_iops(volume: Volume, p: TwinParameters, io_kb: float) -> float:
    """Random reads per second: every spindle serves reads (RAID1/10 read either mirror)."""
    return volume.disks / (disk_timing(volume, p).io_ms(io_kb) / 1e3)


def nic_counted_bytes_per_s(speed_gbps: float, p: TwinParameters) -> float:
    """Bytes per second a port moves as its Bytes Sent counter counts them.

    The wire also carries preamble and inter-frame gap, which the counter does not see; a
    saturated port therefore reads ``frame / (frame + gap)`` of its speed: about 98.7% for full
    1500-byte frames.
    """
    frame = p.packet_payload_bytes + p.packet_header_bytes
    return speed_gbps * 1e9 / 8.0 * frame / (frame + p.frame_gap_bytes)


def packets(payload_bytes: np.ndarray | float, p: TwinParameters) -> np.ndarray:
    """Protocol packets a payload is split into (at least one; per element for arrays)."""
    return np.maximum(1.0, np.asarray(payload_bytes, dtype=float) / p.packet_payload_bytes)


def wire_bytes(payload_bytes: np.ndarray | float, p: TwinParameters) -> np.ndarray:
    """Bytes counted by a NIC for a payload split into protocol packets (headers included)."""
    b = np.asarray(payload_bytes, dtype=float)
    return b + packets(b, p) * p.packet_header_bytes


def cpu_hz(hw: ServerHardware) -> float:
    """Clock of one core, Hz. The server's capacity is cores x this."""
    return hw.cpu.ghz * 1e9


def cores(hw: ServerHardware) -> int:
    return hw.cpu.sockets * hw.cpu.cores


def fs_cache_mb(hw: ServerHardware, p: TwinParameters, os: str = "") -> float:
    """The file-system cache a server can use: the inventory cap, else RAM minus a reserve.

    A 32-bit Windows server's system cache cannot outgrow its virtual-address window
    (``fs_cache_max_mb_32bit``: 960 MB on 2003 R2 32-bit), however much RAM it has.
    """
    if hw.fs_cache_mb is not None:
        return hw.fs_cache_mb
    cap = max(64.0, hw.ram_gb * 1024.0 - p.uncapped_fs_cache_reserve_mb)
    if "32-bit" in os:
        cap = min(cap, p.fs_cache_max_mb_32bit)
    return cap


def dirty_limit_mb(hw: ServerHardware, p: TwinParameters, os: str = "") -> float:
    """Buffered writes a server's cache manager holds dirty before writers wait, MB.

    Windows Server 2003 sets CcDirtyPageThreshold to the cache's working-set maximum less 2 MB, at
    most half of physical memory: on the 2007 servers min(960 - 2, 2048) = 958 MB.
    """
    cache = fs_cache_mb(hw, p, os)
    return max(0.0, min(cache - p.dirty_page_reserve_mb, hw.ram_gb * 1024.0 * p.dirty_page_ram_fraction))


def nic_names(nics: Nics) -> tuple[str, ...]:
    """PDH instance names of a server's ports (Broadcom onboard dual GbE on the PowerEdge 2950)."""
    base = "Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client]"
    return tuple(base if i == 0 else f"{base} _{i + 1}" for i in range(nics.count))


def volume_instance(index: int, volume: Volume) -> str:
    """PDH PhysicalDisk instance, e.g. ``1 D:``."""
    return f"{index} {volume.drive}" if volume.drive else str(index)
