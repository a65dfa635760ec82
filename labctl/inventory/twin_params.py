"""Parameters of the lab twin that no paper gives: named, documented, with defaults.

Owned by the lab twin (`labctl.sim.twin`); declared here because only the inventory parses YAML.
Each field says what it is, its unit, and why the default is what it is. Hardware (CPU, NICs,
volumes, RAM, file-cache cap, switches) is *not* here: the twin reads it from the inventory.

Override any of them in the inventory's ``lab.twin:`` section, e.g.::

    lab:
      twin:
        client_outstanding_requests: 2
        kernel: {read_mb: 70}        # a partial phase: the other fields keep the phase's defaults

The defaults were calibrated once against the 2007 boot storm (`labctl sim calibrate`); they are
not fitted per group size.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

_frozen = ConfigDict(frozen=True, extra="forbid")


class BootPhase(BaseModel):
    """One phase of a diskless client's boot: local time plus I/O streamed from the server.

    The client alternates local work (CPU, device initialisation, timers) and requests to the
    streaming server; reads are served from the shared vDisk, writes go to the client's write
    cache on the server. ``local_share`` is this phase's share of the local-disk baseline boot
    time (`local_disk_boot_time_s`), so a 1-client streamed boot is that baseline plus the time
    spent waiting on the server.
    """

    model_config = _frozen

    local_share: NonNegativeFloat = Field(
        description="Share of local_disk_boot_time_s spent in this phase on local work (fraction, 0..1)."
    )
    read_mb: NonNegativeFloat = Field(description="Data read from the vDisk in this phase, MB (2^20 bytes).")
    write_mb: NonNegativeFloat = Field(
        default=0.0, description="Data written to the write cache in this phase, MB."
    )
    read_kb: PositiveFloat = Field(default=32.0, description="Average read request size, KB.")
    write_kb: PositiveFloat = Field(default=8.0, description="Average write request size, KB.")


class SettlePhase(BaseModel):
    """Activity after the agent started (services, prefetch trace, logs): not part of boot time."""

    model_config = _frozen

    local_s: NonNegativeFloat = Field(description="Local work spread over this phase, s.")
    read_mb: NonNegativeFloat = Field(description="Data read from the vDisk, MB.")
    write_mb: NonNegativeFloat = Field(description="Data written to the write cache, MB.")
    read_kb: PositiveFloat = Field(default=16.0, description="Average read request size, KB.")
    write_kb: PositiveFloat = Field(default=8.0, description="Average write request size, KB.")


# The boot sequence of a Windows XP streamed client. Volumes and request sizes are unknowns (no
# paper gives them): plausible for XP SP2 with a small application set, then calibrated once.
_PXE = BootPhase(local_share=0.16, read_mb=0.04, read_kb=0.5)  # DHCP + TFTP of the ~40 KB bootstrap
_REALMODE = BootPhase(local_share=0.12, read_mb=11.0, read_kb=4.0)  # INT13 loader: ntldr, kernel, SYSTEM hive
_KERNEL = BootPhase(local_share=0.36, read_mb=54.0, write_mb=0.5, read_kb=32.0, write_kb=8.0)
_LOGON = BootPhase(local_share=0.36, read_mb=24.0, write_mb=1.0, read_kb=16.0, write_kb=8.0)
_SETTLE = SettlePhase(local_s=20.0, read_mb=8.0, write_mb=3.8, write_kb=8.0)


class TwinParameters(BaseModel):
    model_config = _frozen

    # --- client boot ----------------------------------------------------------------------------
    local_disk_boot_time_s: PositiveFloat = Field(
        default=27.0,
        description="Boot time to agent start from a local disk, s (2007 paper: 27 s). The local work "
        "of the boot phases adds up to it.",
    )
    bios_post_s: NonNegativeFloat = Field(
        default=12.0,
        description="Power-on (WoL) to the first PXE DHCP packet, s: BIOS POST of an OptiPlex 755. "
        "Not part of boot time (which starts at first network contact).",
    )
    bios_post_jitter_s: NonNegativeFloat = Field(
        default=1.5,
        description="Spread of the POST time between clients, s (uniform +-): real clients never "
        "reach the network in the same millisecond.",
    )
    client_speed_spread: NonNegativeFloat = Field(
        default=0.15,
        description="Spread of the clients' local work time (uniform +-fraction): the 2007 clients "
        "had 512 MB to 2 GB RAM and differ in how long the same boot takes locally.",
    )
    power_on_delay_s: NonNegativeFloat = Field(
        default=1.0, description="Magic packet or power button to power good, s."
    )
    client_shutdown_s: PositiveFloat = Field(
        default=6.0, description="Graceful OS shutdown of a client (restart or shutdown), s."
    )
    pxe: BootPhase = Field(default=_PXE, description="PXE: DHCP and the TFTP download of the bootstrap.")
    realmode: BootPhase = Field(
        default=_REALMODE, description="Real-mode boot through the bootstrap's INT13 hook: small reads."
    )
    kernel: BootPhase = Field(
        default=_KERNEL, description="Kernel, drivers and services: the bulk of the image, large reads."
    )
    logon: BootPhase = Field(default=_LOGON, description="Logon, shell and the agent start (end of boot).")
    settle: SettlePhase = Field(default=_SETTLE, description="Post-boot activity after the agent started.")
    idle_read_iops: NonNegativeFloat = Field(
        default=0.3, description="Background reads of a booted idle client, requests/s."
    )
    idle_write_iops: NonNegativeFloat = Field(
        default=0.6, description="Background writes of a booted idle client, requests/s (logs, registry)."
    )

    # --- streaming protocol -----------------------------------------------------------------------
    udp_timeout_ms: PositiveFloat = Field(
        default=200.0, description="Streaming protocol request timeout before a re-send (retry), ms."
    )
    client_outstanding_requests: PositiveInt = Field(
        default=1,
        description="Requests a client keeps in flight to the streaming server. The 2007 protocol "
        "is request/response; 1 makes reads and writes of a client wait on each other.",
    )
    io_burst_kb: PositiveFloat = Field(
        default=32.0, description="Largest request the protocol carries (PVS 'I/O burst size'), KB."
    )
    read_response_sigma: PositiveFloat = Field(
        default=0.5,
        description="Spread of a read's response time around the queueing mean the model computes: "
        "standard deviation of its logarithm (CPU and NIC queues serve in arrival order, so small). "
        "With the mean it sets how often a read outlives the timeout (a retry).",
    )
    write_response_sigma: PositiveFloat = Field(
        default=1.6,
        description="Spread (log standard deviation) of a write's response time. Writes wait in the "
        "write-cache volume's queue, which the disks serve nearest-first rather than in arrival "
        "order: the mean drops, but a few requests wait far longer than it.",
    )
    packet_payload_bytes: PositiveInt = Field(
        default=1400, description="Payload of one streaming UDP packet, bytes (fits a 1500-byte MTU)."
    )
    packet_header_bytes: PositiveInt = Field(
        default=58, description="Ethernet+IP+UDP+protocol header per packet, bytes (counted by NIC counters)."
    )
    frame_gap_bytes: NonNegativeFloat = Field(
        default=20.0,
        description="Preamble and inter-frame gap per frame, bytes: on the wire, not in Bytes Sent; "
        "why a saturated GbE port reads about 98%.",
    )
    request_bytes: PositiveInt = Field(
        default=120, description="Size on the wire of a read request or a write acknowledgement, bytes."
    )
    network_latency_ms: NonNegativeFloat = Field(
        default=0.15, description="Round trip through switches and both network stacks, no queueing, ms."
    )
    tftp_block_bytes: PositiveInt = Field(
        default=512, description="TFTP block size of the PXE bootstrap, bytes."
    )
    udp_timeout_adaptive: bool = Field(
        default=False,
        description="The client's timeout follows its own response times as TCP's does (RFC 2988: "
        "smoothed response + udp_timeout_var_factor x mean deviation), never below udp_timeout_ms "
        "nor above udp_timeout_max_ms, as Citrix CTX119223 describes later streaming clients "
        "('changes dynamically: doubles on loss, decreases as in RFC 2988'). Off by default: the "
        "2007 paper describes its client's timeout as a fixed 200 ms.",
    )
    udp_timeout_var_factor: NonNegativeFloat = Field(
        default=4.0,
        description="Weight of the response-time deviation in the adaptive timeout (RFC 2988's K = 4).",
    )
    udp_timeout_max_ms: PositiveFloat = Field(
        default=10_000.0,
        description="Upper bound of the client's timeout, ms (CTX119223: IosPacketTimeout at most "
        "10,000 ms).",
    )
    udp_timeout_backoff: float = Field(
        default=1.0,
        ge=1.0,
        description="Factor the timeout grows by after each re-send of the same request: 1, every "
        "re-send waits the same timeout (the 2007 paper: a retry each time a packet exceeds 200 ms); "
        "2, the doubling of later clients (CTX119223) and RFC 2988 section 5.5.",
    )

    # --- streaming server CPU ---------------------------------------------------------------------
    cpu_cycles_per_request: PositiveFloat = Field(
        default=165_000.0,
        description="Server CPU per request served (receive, parse, cache lookup, reply), cycles.",
    )
    cpu_cycles_per_packet_sent: PositiveFloat = Field(
        default=21_000.0, description="Server CPU per UDP packet sent (2003 stack, no offload), cycles."
    )
    cpu_cycles_per_packet_received: PositiveFloat = Field(
        default=9_000.0, description="Server CPU per UDP packet received, cycles."
    )
    cpu_cycles_per_byte: NonNegativeFloat = Field(
        default=1.0, description="Server CPU per payload byte copied (cache to socket buffers), cycles."
    )
    cpu_cycles_per_disk_io: PositiveFloat = Field(
        default=40_000.0, description="Server CPU per disk I/O issued and completed, cycles."
    )
    cpu_cycles_per_tftp_block: PositiveFloat = Field(
        default=80_000.0, description="Server CPU per TFTP block served (PXE bootstrap), cycles."
    )
    server_idle_cpu_pct: NonNegativeFloat = Field(
        default=1.0, description="CPU of an idle server (OS, services, agents), percent."
    )

    # --- server memory and file cache ------------------------------------------------------------
    server_os_base_mb: NonNegativeFloat = Field(
        default=420.0, description="Memory used by an idle server: OS, services, streaming service, MB."
    )
    session_mb: NonNegativeFloat = Field(
        default=2.0, description="Server memory per connected client session (state, buffers), MB."
    )
    cache_chunk_kb: PositiveInt = Field(
        default=256,
        description="Granularity of the server file cache, KB: the Windows cache manager maps files "
        "in 256 KB views and reads ahead in them.",
    )
    cache_read_io_kb: PositiveFloat = Field(
        default=64.0, description="Size of one disk read when a cache chunk is faulted in, KB."
    )
    cache_working_set_trim_s: PositiveFloat = Field(
        default=45.0,
        description="Cached pages untouched this long leave the cache working set (still cached, "
        "counted available again): why used memory falls after a storm, s.",
    )
    vdisk_image_mb: PositiveFloat = Field(default=8192.0, description="Size of the vDisk image, MB.")
    uncapped_fs_cache_reserve_mb: NonNegativeFloat = Field(
        default=600.0,
        description="On servers without an fs_cache_mb cap (64-bit), RAM kept out of the file cache, MB.",
    )

    # --- disks and controller ---------------------------------------------------------------------
    seek_ms_7200: PositiveFloat = Field(default=8.5, description="Average seek of a 7.2K rpm disk, ms.")
    seek_ms_10k: PositiveFloat = Field(default=4.5, description="Average seek of a 10K rpm SAS disk, ms.")
    seek_ms_15k: PositiveFloat = Field(default=3.5, description="Average seek of a 15K rpm SAS disk, ms.")
    short_stroke_factor: PositiveFloat = Field(
        default=0.5,
        description="Share of the average seek paid: vDisk and write-cache files sit in a narrow band "
        "of the disk, so seeks are short (fraction).",
    )
    queue_reorder_exponent: NonNegativeFloat = Field(
        default=0.45,
        description="Command queuing: with q requests queued per spindle the disks and the RAID "
        "controller pick the closest, so positioning time scales as q^-exponent (0: no reordering). "
        "A bare SAS disk gains 2-2.5x from queue depth 1 to 32 (about 0.3); 0.45 was calibrated on "
        "the 2007 write-cache queue with the PERC's own elevator on top.",
    )
    queue_reorder_max_depth: PositiveFloat = Field(
        default=32.0, description="Per-spindle queue depth beyond which reordering gains nothing more."
    )
    media_rate_mb_s_hdd: PositiveFloat = Field(
        default=80.0, description="Sustained media transfer rate of a rotational disk, MB/s."
    )
    ssd_service_time_ms: PositiveFloat = Field(
        default=0.15, description="Service time of one SSD I/O when the inventory gives none, ms."
    )
    nvme_service_time_ms: PositiveFloat = Field(
        default=0.04, description="Service time of one NVMe I/O when the inventory gives none, ms."
    )
    media_rate_mb_s_ssd: PositiveFloat = Field(default=250.0, description="SSD transfer rate, MB/s.")
    media_rate_mb_s_nvme: PositiveFloat = Field(default=1500.0, description="NVMe transfer rate, MB/s.")
    controller_write_cache_mb: NonNegativeFloat = Field(
        default=128.0,
        description="Dirty data a RAID controller's battery-backed cache holds before host writes "
        "wait for destaging, MB (PERC 5/i: 256 MB, about half available to writes).",
    )
    controller_write_ms: PositiveFloat = Field(
        default=0.12, description="Host write acknowledged from the controller cache, ms."
    )

    # --- servers ----------------------------------------------------------------------------------
    server_boot_time_s: PositiveFloat = Field(default=90.0, description="Server power-on to OS up, s.")
    server_shutdown_s: PositiveFloat = Field(default=20.0, description="Server graceful shutdown, s.")
    server_idle_watts: PositiveFloat = Field(default=210.0, description="Server at idle CPU, W.")
    server_max_watts: PositiveFloat = Field(default=330.0, description="Server at 100% CPU, W.")
    server_off_watts: NonNegativeFloat = Field(default=9.0, description="Server in S5 (BMC only), W.")

    fs_cache_max_mb_32bit: PositiveFloat = Field(
        default=960.0,
        description="File-system cache of a 32-bit Windows server whose inventory gives no "
        "fs_cache_mb, MB: the system cache's virtual-address limit (2007 paper, appendix: 960 MB "
        "is the maximum on Windows Server 2003 R2 32-bit). Applied when the OS name says 32-bit.",
    )
    dirty_page_ram_fraction: PositiveFloat = Field(
        default=0.5,
        le=1.0,
        description="Share of RAM a server's cache manager lets buffered writes hold dirty before it "
        "makes writers wait for the lazy writer (Windows Server 2003 CcDirtyPageThreshold: the cache "
        "working-set maximum less 2 MB, at most half of physical memory; KB 920739).",
    )
    lazy_writer_ios: PositiveFloat = Field(
        default=3.0,
        description="Disk writes a server's lazy writer keeps in flight while it flushes buffered "
        "(SMB) writes: Windows Server 2003 runs CcNumberWorkerThreads = ExCriticalWorkerThreads "
        "(5) - 2 = 3 cache workers on a large system, each writing one run at a time. Writers the "
        "cache manager throttles wait in memory, not in the disk queue.",
    )
    dirty_page_reserve_mb: NonNegativeFloat = Field(
        default=2.0,
        description="What the dirty-page threshold keeps below the cache's size, MB (2003: 2 MB).",
    )

    # --- workloads --------------------------------------------------------------------------------
    smb_io_kb: PositiveFloat = Field(
        default=60.0,
        description="SMB1 read/write size of a file copy, KB (XP to a 2003 server: 60 KB, the "
        "largest write that fits the negotiated buffer with CAP_LARGE_READX/WRITEX).",
    )
    copy_smb_requests_in_flight: PositiveInt = Field(
        default=2,
        description="SMB requests one copy keeps in flight in each direction: the copy loop's own "
        "read (or write) and one the client's cache manager issues ahead of it (read-ahead of the "
        "source, write-behind of the destination). The streaming protocol keeps one per client.",
    )
    smb_max_mpx_count: PositiveInt = Field(
        default=50,
        description="SMB1 MaxMpxCount a Windows 2003 server grants a client: requests one session "
        "may have outstanding (SMB1's credits). Caps copy_smb_requests_in_flight.",
    )
    copy_local_s_per_gb: NonNegativeFloat = Field(
        default=4.0, description="Client CPU time of a file copy per GB copied, s."
    )

    @model_validator(mode="before")
    @classmethod
    def _merge_partial_phases(cls, data: Any) -> Any:
        """A phase given in part (``kernel: {read_mb: 70}``) keeps that phase's other defaults."""
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name in ("pxe", "realmode", "kernel", "logon", "settle"):
            given = merged.get(name)
            if isinstance(given, dict):
                default = cls.model_fields[name].default
                merged[name] = {**default.model_dump(), **given}
        return merged

    @model_validator(mode="after")
    def _boot_shares_add_up(self) -> TwinParameters:
        total = sum(p.local_share for p in self.boot_phases())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(
                f"the local_share of pxe, realmode, kernel and logon must add up to 1 (they split "
                f"local_disk_boot_time_s), got {total:g}"
            )
        return self

    def boot_phases(self) -> tuple[BootPhase, BootPhase, BootPhase, BootPhase]:
        return (self.pxe, self.realmode, self.kernel, self.logon)
