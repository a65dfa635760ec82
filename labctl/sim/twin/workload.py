"""What a client asks of the servers in each phase of its life: the boot phases, then idle.

Each streaming phase is a demand: local work (seconds), reads (count and size) from a region of
the shared vDisk image, writes (count and size) to the client's write cache. The regions are laid
out one after the other in the image, the same for every client (standard image: every client
boots the same files in the same order), so a chunk one client faulted into the server's cache is
a hit for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from labctl.inventory.twin_params import TwinParameters


class Phase(IntEnum):
    OFF = 0
    POWERING_ON = 1  # magic packet received, power good after power_on_delay_s
    POST = 2  # BIOS POST, before the first network contact
    PXE = 3  # DHCP + TFTP bootstrap: boot time starts here
    REALMODE = 4
    KERNEL = 5
    LOGON = 6  # ends with the agent start: boot time ends here
    SETTLE = 7  # OS up, post-boot activity
    IDLE = 8  # OS up, background I/O only
    SHUTDOWN = 9  # OS going down


STREAMING = (Phase.PXE, Phase.REALMODE, Phase.KERNEL, Phase.LOGON, Phase.SETTLE, Phase.IDLE)
OS_UP = (Phase.SETTLE, Phase.IDLE)
SESSION = (
    Phase.REALMODE,
    Phase.KERNEL,
    Phase.LOGON,
    Phase.SETTLE,
    Phase.IDLE,
)  # logged in to the stream service

SRC_VDISK = 0
SRC_TFTP = 1
SRC_SMB = 2
DST_WC = 0
DST_SMB = 1

_IDLE_REQUESTS = 1e12  # the idle phase never completes


@dataclass(frozen=True)
class PhaseTable:
    """Arrays indexed by :class:`Phase` (zeros for phases without streaming I/O)."""

    local_s: np.ndarray
    n_reads: np.ndarray
    n_writes: np.ndarray
    read_kb: np.ndarray
    write_kb: np.ndarray
    source: np.ndarray  # SRC_*
    region_base: np.ndarray  # first chunk of the phase's read region in the image
    region_chunks: np.ndarray
    copy_base_chunk: int  # the image region a local-source copy reads (a large file in the image)
    boot_read_mb: float  # total boot read volume (PXE..LOGON), for the 'image streaming time'

    @property
    def n_requests(self) -> np.ndarray:
        return self.n_reads + self.n_writes


def phase_table(p: TwinParameters) -> PhaseTable:
    n = len(Phase)
    local_s = np.zeros(n)
    n_reads = np.zeros(n)
    n_writes = np.zeros(n)
    read_kb = np.ones(n)
    write_kb = np.ones(n)
    source = np.full(n, SRC_VDISK, dtype=np.int64)
    base = np.zeros(n, dtype=np.int64)
    chunks = np.ones(n, dtype=np.int64)
    chunk_mb = p.cache_chunk_kb / 1024.0
    cursor = 0

    def set_phase(ph: Phase, local: float, rmb: float, wmb: float, rkb: float, wkb: float) -> None:
        nonlocal cursor
        rkb = min(rkb, p.io_burst_kb) if ph is not Phase.PXE else rkb
        wkb = min(wkb, p.io_burst_kb)
        local_s[ph] = local
        n_reads[ph] = max(1.0, rmb * 1024.0 / rkb)
        n_writes[ph] = wmb * 1024.0 / wkb
        read_kb[ph] = rkb
        write_kb[ph] = wkb
        if ph is not Phase.PXE:
            c = max(1, int(np.ceil(rmb / chunk_mb)))
            base[ph] = cursor
            chunks[ph] = c
            cursor += c

    for ph, bp in zip((Phase.PXE, Phase.REALMODE, Phase.KERNEL, Phase.LOGON), p.boot_phases(), strict=True):
        set_phase(
            ph, bp.local_share * p.local_disk_boot_time_s, bp.read_mb, bp.write_mb, bp.read_kb, bp.write_kb
        )
    source[Phase.PXE] = SRC_TFTP
    s = p.settle
    set_phase(Phase.SETTLE, s.local_s, s.read_mb, s.write_mb, s.read_kb, s.write_kb)
    # idle: background requests at idle_read_iops + idle_write_iops, re-reading the kernel region
    iops = p.idle_read_iops + p.idle_write_iops
    if iops > 0:
        n_reads[Phase.IDLE] = _IDLE_REQUESTS * p.idle_read_iops / iops
        n_writes[Phase.IDLE] = _IDLE_REQUESTS * p.idle_write_iops / iops
        local_s[Phase.IDLE] = _IDLE_REQUESTS / iops
    else:
        n_reads[Phase.IDLE] = _IDLE_REQUESTS
        local_s[Phase.IDLE] = _IDLE_REQUESTS * 1e6
    read_kb[Phase.IDLE] = 4.0
    write_kb[Phase.IDLE] = 4.0
    base[Phase.IDLE] = base[Phase.KERNEL]
    chunks[Phase.IDLE] = 1
    boot_read_mb = sum(bp.read_mb for bp in p.boot_phases())
    return PhaseTable(
        local_s, n_reads, n_writes, read_kb, write_kb, source, base, chunks, cursor, boot_read_mb
    )
