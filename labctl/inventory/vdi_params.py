"""Parameters of the virtual-desktop twin that no inventory gives: named, with units, defaults, sources.

Declared here because only the inventory parses YAML; owned by the VDI twin (`labctl.sim.twin.vdi`).
Override any of them in the inventory's ``vdi.twin:`` section (a phase or workload given in part
keeps its other defaults)::

    vdi:
      twin:
        vda_registration_s: 60
        login: {local_s: 40}
        workloads:
          task: {write_iops: 6}

What the guest does (phases, workloads) is the same whatever the provisioning; *where* each I/O
goes (PVS server RAM, the array's cache or tiers, the host's datastore, guest RAM) follows from the
pool's provisioning and write-cache mode, in the twin. The per-phase I/O volumes were calibrated
once on the 2012 EqualLogic paper (table 7: IOPS, read/write shares and sizes per phase, measured
with PVS and the write cache on the device's disk), the write footprints on the 2014 write-cache
post; hardware (drives, RAID, controllers, cores, RAM) comes from the inventory.
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


class GuestPhase(BaseModel):
    """One phase of a desktop's life as its guest OS lives it (boot, settle, login, logoff).

    A desktop is a closed loop: it works locally (``local_s`` in all, of which ``cpu_bound_share``
    stretches when the host's CPU is over-committed) and issues its I/O with up to
    ``guest_outstanding_io`` in flight; the phase ends when its local work and its I/O are done,
    so slow storage makes phases longer and their IOPS lower.
    """

    model_config = _frozen

    local_s: NonNegativeFloat = Field(
        description="Local work of the phase with instant I/O and a free CPU, s."
    )
    cpu_mhz: NonNegativeFloat = Field(description="CPU demand during the phase, MHz (one desktop).")
    cpu_bound_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Share of local_s that is CPU work (stretches under contention).",
    )
    image_read_mb: NonNegativeFloat = Field(
        description="Reads of the shared OS/application image (PVS vDisk, replica, master image), MB."
    )
    image_read_kb: PositiveFloat = Field(default=32.0, description="Size of one image read, KB.")
    private_read_mb: NonNegativeFloat = Field(
        description="Reads of data this desktop wrote since boot (write cache, delta disk), MB."
    )
    private_read_kb: PositiveFloat = Field(default=32.0, description="Size of one private read, KB.")
    write_mb: NonNegativeFloat = Field(description="Writes, MB.")
    write_kb: PositiveFloat = Field(default=5.0, description="Size of one write, KB.")
    network_kb_s: NonNegativeFloat = Field(
        default=5.0,
        description="Guest network traffic other than image streaming (directory, profile), KB/s.",
    )
    in_use_mem_mb: NonNegativeFloat = Field(description="Guest memory in use at the end of the phase, MB.")
    active_mem_mb: NonNegativeFloat = Field(description="Guest memory actively touched during the phase, MB.")


class Operation(BaseModel):
    """One timed user operation of a workload (what a VSI-style launcher measures)."""

    model_config = _frozen

    name: str
    cpu_mhz_s: NonNegativeFloat = Field(description="CPU work of the action, MHz x s (one vCPU).")
    image_reads: NonNegativeFloat = Field(default=0.0, description="Image reads the action waits for.")
    private_reads: NonNegativeFloat = Field(default=0.0, description="Private reads the action waits for.")
    writes: NonNegativeFloat = Field(default=0.0, description="Writes the action waits for.")
    think_s: NonNegativeFloat = Field(description="User pause after the action, s.")


class Workload(BaseModel):
    """A workload profile: a loop of timed operations over a background of application activity.

    The background rates hold while the session runs (applications open, video playing, autosave,
    paging); the operations add their own I/O and CPU and are what the user waits for.
    """

    model_config = _frozen

    description: str = ""
    cpu_mhz: NonNegativeFloat = Field(description="Background CPU demand of a working session, MHz.")
    image_read_iops: NonNegativeFloat = Field(description="Background image reads, per s.")
    image_read_kb: PositiveFloat = Field(default=16.0, description="Image read size, KB.")
    private_read_iops: NonNegativeFloat = Field(description="Background private reads, per s.")
    private_read_kb: PositiveFloat = Field(default=1.0, description="Private read size, KB (table 7: 1 KB).")
    write_iops: NonNegativeFloat = Field(description="Background writes, per s.")
    write_kb: PositiveFloat = Field(default=9.0, description="Write size, KB (table 7: 9 KB).")
    network_kb_s: NonNegativeFloat = Field(description="Display protocol and other session traffic, KB/s.")
    in_use_mem_mb: NonNegativeFloat = Field(description="Guest memory in use during the session, MB.")
    active_mem_mb: NonNegativeFloat = Field(description="Guest memory actively touched, MB.")
    write_footprint_mb: PositiveFloat = Field(
        description="Distinct data the session's writes cover in the end (files and pages rewritten "
        "in place count once), MB: what a RAM write cache must hold to absorb every write."
    )
    operations: tuple[Operation, ...] = Field(min_length=1)


def _ops(*rows: tuple[str, float, float, float, float, float]) -> tuple[Operation, ...]:
    return tuple(
        Operation(name=n, cpu_mhz_s=c, image_reads=r, private_reads=p, writes=w, think_s=t)
        for n, c, r, p, w, t in rows
    )


# Login VSI Light (the 2012 paper's task worker): two applications open at a time, 12-minute loop
# with about 1:45 idle (paper 4.3.1). Background rates from table 7 (steady 7-8 IOPS: writes 9 KB,
# 0.2% reads of 1 KB at the write cache) and typical linked-clone task workers (about a quarter of
# guest I/O are image reads); CPU from 80 desktops per 8 x 3.6 GHz host staying under 95% at all
# times (2012) and 170 per 20 x 3.0 GHz host near 95% (2014).
_TASK = Workload(
    description="task worker (Login VSI Light: IE, Acrobat, Flash, Freemind, Bullzip PDF)",
    cpu_mhz=260.0,
    image_read_iops=2.0,
    private_read_iops=0.015,
    write_iops=7.0,
    network_kb_s=100.0,
    in_use_mem_mb=700.0,
    active_mem_mb=300.0,
    write_footprint_mb=400.0,
    operations=_ops(
        ("ie_open", 1500, 80, 0, 40, 55),
        ("ie_browse", 900, 40, 0, 60, 115),
        ("pdf_open", 1800, 120, 0, 30, 90),
        ("pdf_print", 2400, 60, 0, 120, 85),
        ("freemind_edit", 1200, 70, 0, 50, 120),
        ("flash_play", 2000, 50, 0, 40, 130),
        ("idle", 100, 0, 0, 5, 105),
    ),
)
# Login VSI Medium (knowledge worker): Outlook, Word, Excel, PowerPoint, IE, PDF, 7-zip; four
# applications open. I/O 1.6x the task worker and CPU 1.4x, the ratios of the 2014 post's Enhanced
# and Standard users (host IOPS 8 vs 5 per user with the cache on the device's disk, 110 vs 170 per host).
_KNOWLEDGE = Workload(
    description="knowledge worker (Login VSI Medium: Office, IE, PDF, 7-zip)",
    cpu_mhz=420.0,
    image_read_iops=3.2,
    private_read_iops=0.03,
    write_iops=11.2,
    network_kb_s=250.0,
    in_use_mem_mb=1300.0,
    active_mem_mb=550.0,
    write_footprint_mb=600.0,
    operations=_ops(
        ("outlook_open", 2500, 150, 0, 80, 60),
        ("word_type", 1800, 60, 0, 120, 120),
        ("excel_sort", 2200, 80, 0, 60, 90),
        ("ppt_slideshow", 3000, 160, 0, 60, 110),
        ("ie_browse", 1200, 60, 0, 80, 100),
        ("pdf_open", 1800, 120, 0, 30, 80),
        ("zip_compress", 4000, 40, 0, 250, 60),
        ("idle", 100, 0, 0, 5, 60),
    ),
)
# Login VSI Heavy (power worker): the knowledge worker plus more printing, video and compression.
# I/O 2x the task worker and CPU 1.6x (2014 post: Professional 9.1-11.7 host IOPS per user, 90 per host).
_POWER = Workload(
    description="power worker (Login VSI Heavy: Office, video, printing, compression)",
    cpu_mhz=480.0,
    image_read_iops=4.0,
    private_read_iops=0.04,
    write_iops=14.0,
    network_kb_s=270.0,
    in_use_mem_mb=1700.0,
    active_mem_mb=700.0,
    write_footprint_mb=650.0,
    operations=_ops(
        ("outlook_open", 2500, 150, 0, 80, 50),
        ("word_type", 1800, 60, 0, 150, 90),
        ("excel_sort", 3000, 100, 0, 80, 80),
        ("ppt_slideshow", 3500, 180, 0, 80, 90),
        ("video_play", 5000, 120, 0, 40, 90),
        ("pdf_print", 3000, 80, 0, 200, 70),
        ("zip_compress", 5000, 50, 0, 300, 60),
        ("idle", 100, 0, 0, 5, 45),
    ),
)

# Windows 7/10 desktop phases. Local times: a VM boot to VMware Tools in about 50 s; services and
# the broker agent settle for about 4 minutes more; a roaming-profile logon about 25 s. The write
# and private-read volumes make table 7's per-desktop array IOPS with PVS and the cache on the
# device's disk: boot+settle 16-18 (13% reads of 32 KB, writes of 5 KB), logon 3% reads of 23 KB.
_BOOT = GuestPhase(
    local_s=50.0,
    cpu_mhz=600.0,
    cpu_bound_share=0.6,
    image_read_mb=120.0,
    private_read_mb=5.2,
    write_mb=5.4,
    in_use_mem_mb=450.0,
    active_mem_mb=350.0,
)
_SETTLE = GuestPhase(
    local_s=220.0,
    cpu_mhz=100.0,
    cpu_bound_share=0.2,
    image_read_mb=40.0,
    private_read_mb=13.0,
    write_mb=13.9,
    in_use_mem_mb=500.0,
    active_mem_mb=120.0,
)
_LOGIN = GuestPhase(
    local_s=25.0,
    cpu_mhz=750.0,
    cpu_bound_share=0.6,
    image_read_mb=60.0,
    private_read_mb=0.5,
    private_read_kb=23.0,
    write_mb=3.0,
    network_kb_s=400.0,
    in_use_mem_mb=650.0,
    active_mem_mb=450.0,
)
_LOGOFF = GuestPhase(
    local_s=10.0,
    cpu_mhz=400.0,
    image_read_mb=5.0,
    private_read_mb=1.0,
    write_mb=1.5,
    network_kb_s=500.0,
    in_use_mem_mb=500.0,
    active_mem_mb=200.0,
)
_IDLE = GuestPhase(
    local_s=60.0,
    cpu_mhz=30.0,
    cpu_bound_share=0.1,
    image_read_mb=0.6,
    image_read_kb=16.0,
    private_read_mb=0.01,
    private_read_kb=4.0,
    write_mb=0.15,
    write_kb=4.0,
    network_kb_s=1.0,
    in_use_mem_mb=500.0,
    active_mem_mb=60.0,
)


class VdiTwinParameters(BaseModel):
    model_config = _frozen

    # --- guest phases and workloads ----------------------------------------------------------
    boot: GuestPhase = Field(default=_BOOT, description="Power-on to VMware Tools running and an IP.")
    settle: GuestPhase = Field(
        default=_SETTLE,
        description="After the OS is up: services, delayed starts, broker agent (boot storm I/O).",
    )
    login: GuestPhase = Field(default=_LOGIN, description="Session logon: profile, shell, start-up items.")
    logoff: GuestPhase = Field(default=_LOGOFF, description="Session logoff: profile written back.")
    idle: GuestPhase = Field(
        default=_IDLE, description="A booted desktop without a session (background), repeated every local_s."
    )
    workloads: dict[str, Workload] = Field(
        default={"task": _TASK, "knowledge": _KNOWLEDGE, "power": _POWER},
        description="Workload profiles by name; a pool names one.",
    )
    first_loop_io_factor: PositiveFloat = Field(
        default=1.7,
        description="I/O of a session's first workload loop relative to later loops (applications "
        "launched the first time write caches, prefetch and profile data; 2012 paper 5.4.2). "
        "Calibrated once on the 630-desktop login peak (6,846 IOPS).",
    )
    guest_outstanding_io: PositiveInt = Field(
        default=4,
        description="I/Os a desktop keeps in flight (Windows storage stack with a paravirtual adapter).",
    )
    vda_registration_s: NonNegativeFloat = Field(
        default=90.0,
        description="Guest OS up to the broker agent (VDA) registered and the desktop offered to users, s. "
        "The desktop service starts late in the boot; calibrated once on the 2012 paper's 20% "
        "pre-booted login storm (almost 100 minutes).",
    )
    session_connect_s: NonNegativeFloat = Field(
        default=5.0, description="Brokering and display-protocol connection before the logon starts, s."
    )
    reboot_after_logoff: bool = Field(
        default=True,
        description="Pooled non-persistent desktops restart after logoff (XenDesktop/Horizon default).",
    )
    login_fail_after_s: PositiveFloat = Field(
        default=60.0,
        description="A logon that fails (fault session_login_fails) gives up after this long, s.",
    )
    power_on_s: NonNegativeFloat = Field(
        default=3.0, description="VM power-on to the guest's first instruction (BIOS, VMX start), s."
    )
    shutdown_s: PositiveFloat = Field(default=15.0, description="Guest shutdown, s.")
    vcenter_power_ops_per_s: PositiveFloat = Field(
        default=3.0,
        description="Power operations vCenter completes per second when a plan powers on or restarts "
        "every desktop at once (its task concurrency over the task time). The fast-forward "
        "scenarios pace storms with it; the simulated vCenter should pace its tasks the same way. "
        "No paper gives it: calibrated once on the 2012 boot storm (1,270 desktops in 10-12 minutes).",
    )
    broker_max_power_actions_per_min: PositiveFloat = Field(
        default=10.0,
        description="Power-ons a broker starts per minute to serve users who found no ready desktop "
        "(XenDesktop hosting connection 'max new actions per minute', default 10).",
    )

    # --- PVS --------------------------------------------------------------------------------------
    direct_write_share: float = Field(
        default=0.03,
        ge=0.0,
        le=1.0,
        description="Share of guest writes that go straight to the write-cache disk whatever the mode "
        "(page file and event logs redirected to it, PVS best practice). Calibrated on the 2014 "
        "post's 512 MB RAM-cache rows (0.2-0.3 host IOPS per user).",
    )
    pvs_cpu_cycles_per_request: PositiveFloat = Field(
        default=120_000.0, description="PVS server CPU per streamed read or write request, cycles."
    )
    pvs_os_reserve_gb: NonNegativeFloat = Field(
        default=3.0, description="PVS server RAM kept by the OS and services, not caching the vDisk, GB."
    )
    image_hot_mb: PositiveFloat = Field(
        default=1500.0,
        description="Distinct image data desktops read (boot, logon, applications), MB: what a PVS "
        "server's RAM, an array's read cache or an SSD tier must hold to serve image reads from memory.",
    )
    network_rtt_ms: NonNegativeFloat = Field(
        default=0.2, description="Round trip host - switch - server or array without queueing, ms."
    )
    network_efficiency: PositiveFloat = Field(
        default=0.9, description="Payload share of a link's line rate (Ethernet, IP, TCP/iSCSI headers)."
    )

    # --- arrays -----------------------------------------------------------------------------------
    ssd_service_ms: PositiveFloat = Field(
        default=0.25, description="One random I/O on an SSD at queue depth 1 when the tier gives none, ms."
    )
    ssd_channels: PositiveInt = Field(
        default=4, description="I/Os an SSD serves at once (flash channels and dies): its parallel servers."
    )
    hdd_seek_ms: dict[str, PositiveFloat] = Field(
        default={"15k": 3.5, "10k": 4.5, "nl": 8.5},
        description="Average seek by drive class, ms (vendor data sheets: 15K 3.4-3.9, 10K 4.2-4.7, NL 8.5).",
    )
    hdd_rpm: dict[str, PositiveInt] = Field(
        default={"15k": 15000, "10k": 10000, "nl": 7200}, description="Spindle speed by drive class, rpm."
    )
    hdd_seek_share: PositiveFloat = Field(
        default=0.6,
        description="Share of the average seek a VDI I/O pays: volumes are spread over the disks but "
        "the hot data clusters (fraction).",
    )
    hdd_media_mb_s: PositiveFloat = Field(default=120.0, description="Sustained transfer of a disk, MB/s.")
    ssd_media_mb_s: PositiveFloat = Field(default=250.0, description="Sustained transfer of an SSD, MB/s.")
    raid_default_width: dict[str, PositiveInt] = Field(
        default={"1": 2, "10": 2, "5": 5, "50": 5, "6": 8, "60": 8},
        description="Drives per RAID group when a tier gives no raid_width (4+1 RAID 5, 6+2 RAID 6).",
    )
    tier_reserve_share: float = Field(
        default=0.1, ge=0.0, lt=1.0, description="Tier capacity kept free by the array (spares, metadata)."
    )
    private_hot_mb: PositiveFloat = Field(
        default=64.0,
        description="A desktop's recently written data that its own reads come back to, MB: what an "
        "array's read cache must hold per desktop to serve private re-reads from memory.",
    )
    read_cache_share: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Share of a controller's cache memory that caches reads."
    )
    write_cache_share: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="Share of a controller's cache memory that holds dirty writes (mirrored to the "
        "peer) when the inventory gives no write_cache_mb.",
    )
    controller_write_ms: dict[str, PositiveFloat] = Field(
        default={"equallogic": 0.6, "sc": 0.4, "unity": 0.25, "powerstore": 0.2},
        description="A write acknowledged from the mirrored controller cache, by array kind, ms "
        "(processing plus the mirror to the peer).",
    )
    controller_read_ms: dict[str, PositiveFloat] = Field(
        default={"equallogic": 0.4, "sc": 0.3, "unity": 0.15, "powerstore": 0.12},
        description="Controller processing of a read (a cache hit costs only this), by array kind, ms.",
    )
    controller_max_iops: dict[str, PositiveFloat] = Field(
        default={"equallogic": 40_000.0, "sc": 120_000.0, "unity": 250_000.0, "powerstore": 300_000.0},
        description="Small cached I/Os one controller processes per second when the inventory gives none "
        "(vendor maxima for 8 KB I/O, order of magnitude).",
    )
    controller_failover_s: dict[str, PositiveFloat] = Field(
        default={"equallogic": 25.0, "sc": 15.0, "unity": 20.0, "powerstore": 10.0},
        description="I/O stall while the surviving controller takes over a failed one's volumes, s.",
    )
    write_through_after_failover: bool = Field(
        default=True,
        description="A single surviving controller cannot mirror its write cache, so it writes through "
        "to the drives (EqualLogic, SC, Unity behaviour) until the peer returns.",
    )

    # --- hosts --------------------------------------------------------------------------------------
    vm_overhead_mhz: NonNegativeFloat = Field(
        default=15.0, description="Hypervisor CPU per powered-on VM (timers, device emulation), MHz."
    )
    cpu_cycles_per_io: PositiveFloat = Field(
        default=80_000.0, description="Hypervisor and guest CPU per disk I/O, cycles."
    )
    vm_overhead_mem_mb: NonNegativeFloat = Field(
        default=40.0, description="Host memory per VM for its VMX, page tables and frame buffer, MB."
    )
    tps_share: float = Field(
        default=0.25,
        ge=0.0,
        lt=1.0,
        description="Share of a desktop's in-use memory that transparent page sharing folds with "
        "identical pages of other desktops (ESXi up to 5.5 share between VMs by default).",
    )
    host_mem_reserve_share: float = Field(
        default=0.06,
        ge=0.0,
        lt=1.0,
        description="Host memory ESXi keeps free before it balloons (the 'high' free-memory state, ~6%).",
    )
    host_mem_base_gb: NonNegativeFloat = Field(
        default=2.0, description="Host memory used by ESXi itself, GB."
    )

    @model_validator(mode="before")
    @classmethod
    def _merge_partial(cls, data: Any) -> Any:
        """A phase or workload given in part keeps that phase's or workload's other defaults."""
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name in ("boot", "settle", "login", "logoff", "idle"):
            given = merged.get(name)
            if isinstance(given, dict):
                merged[name] = {**cls.model_fields[name].default.model_dump(), **given}
        given_w = merged.get("workloads")
        if isinstance(given_w, dict):
            defaults: dict[str, Workload] = cls.model_fields["workloads"].default
            out: dict[str, Any] = {k: v.model_dump() for k, v in defaults.items()}
            for name, w in given_w.items():
                out[name] = {**out[name], **w} if isinstance(w, dict) and name in out else w
            merged["workloads"] = out
        for name in (
            "controller_write_ms",
            "controller_read_ms",
            "controller_max_iops",
            "controller_failover_s",
        ):
            given_k = merged.get(name)
            if isinstance(given_k, dict):
                merged[name] = {**cls.model_fields[name].default, **given_k}
        return merged
