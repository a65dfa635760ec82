"""Virtual-desktop labs in the inventory: the ``vdi:`` section, as written and as resolved.

A VDI lab is ESXi hosts in vCenter clusters running pools of desktop VMs, whose disks live on
datastores that are volumes of SAN arrays, with PVS servers streaming images and session launchers
logging users on. As written (``*Spec``), names may be compact ranges (``desk-[0001-3000]``); once
resolved (:class:`VdiLab`) every host, datastore and desktop is named, every reference checked, and
every desktop is also a :class:`~labctl.inventory.model.Machine` of kind ``vm`` (with its vCenter
and host) so the power and readiness code drives it like any VM.

This module only holds data; :mod:`labctl.inventory.vdi_resolve` checks and expands it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PositiveInt

from labctl.inventory.refs import CredentialRef
from labctl.inventory.vdi_params import VdiTwinParameters


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NicSet(_Frozen):
    count: PositiveInt
    speed_gbps: PositiveFloat


# --- hosts ---------------------------------------------------------------------------------------


class EsxiHostSpec(_Frozen):
    """One ESXi host, or a range of identical ones (``name: esx-vdi-[01-08]``)."""

    name: str
    model: str = ""
    cpu_model: str = ""
    sockets: PositiveInt = 2
    cores: PositiveInt  # per socket
    ghz: PositiveFloat
    ram_gb: PositiveFloat
    nics: NicSet
    ip: str | None = None  # management address (first, counted up for a range), optional


class VdiClusterSpec(_Frozen):
    name: str
    vcenter: str  # a name under vcenters:
    datacenter: str = "DC0"
    hosts: tuple[EsxiHostSpec, ...] = Field(min_length=1)


# --- arrays --------------------------------------------------------------------------------------


class DriveClass(StrEnum):
    SSD = "ssd"
    SAS_15K = "15k"
    SAS_10K = "10k"
    NL = "nl"  # nearline 7.2K


class ControllerMode(StrEnum):
    ACTIVE_ACTIVE = "active_active"  # each controller owns some volumes (Unity SPs, SC, PowerStore nodes)
    ACTIVE_STANDBY = "active_standby"  # one controller serves every volume (EqualLogic PS)


RaidLevel = Literal[1, 5, 6, 10, 50, 60]


class TierSpec(_Frozen):
    """Drives of one class in one RAID layout: a tier of a pool (or the whole pool)."""

    drive: DriveClass
    count: PositiveInt  # data drives, spares excluded
    capacity_gb: PositiveFloat  # per drive
    raid: RaidLevel
    raid_width: PositiveInt | None = None  # drives per RAID group (default: 4+1 for RAID 5, 6+2 for 6)
    spares: NonNegativeInt = 0
    service_time_ms: PositiveFloat | None = None  # one random I/O at queue depth 1 (default by class)


class ArraySpec(_Frozen):
    """The hardware of an array declared under ``storage:`` (which holds its endpoint)."""

    array: str  # the storage: entry's name
    model: str = ""
    controllers: PositiveInt = 2
    controller_mode: ControllerMode | None = (
        None  # default: active_standby for equallogic, else active_active
    )
    cache_gb: PositiveFloat  # cache memory per controller
    write_cache_mb: PositiveFloat | None = (
        None  # mirrored write cache per controller (default: a share of cache_gb)
    )
    controller_max_iops: PositiveFloat | None = None  # small cached I/Os per second per controller
    ports: NicSet  # front-end ports per controller
    tiers: tuple[TierSpec, ...] = Field(min_length=1)


class DatastoreSpec(_Frozen):
    """A VMFS datastore (or a range of them) on an array volume of the same name unless ``volume``."""

    name: str
    array: str
    volume: str | None = None  # array volume name; default the datastore's name (a range maps 1:1)
    capacity_gb: PositiveFloat
    cluster: str | None = None  # mounted by this cluster's hosts (default every cluster)


class PvsServerSpec(_Frozen):
    """A Provisioning Services server (or a range), streaming vDisks from its RAM cache."""

    name: str
    vcpus: PositiveInt = 4
    ghz: PositiveFloat = 2.6
    ram_gb: PositiveFloat
    nics: NicSet
    vdisk_datastore: str  # where the vDisk files live (read on a RAM-cache miss)
    write_cache_datastore: str | None = None  # where targets' caches live with write_cache: server


# --- pools ---------------------------------------------------------------------------------------


class ProvisioningKind(StrEnum):
    PVS = "pvs"  # streamed from PVS servers, changes in a write cache
    LINKED_CLONE = "linked_clone"  # reads from a replica, writes to a delta disk (Horizon)
    MCS = "mcs"  # reads from a master image copy, writes to a differencing disk (XenDesktop)
    FULL_CLONE = "full_clone"  # each desktop its own full disk


class WriteCacheMode(StrEnum):
    DEVICE_DISK = "device_disk"  # cache on the device's hard drive (a VMDK on a datastore)
    DEVICE_RAM_OVERFLOW = "device_ram_overflow"  # in the device's RAM, overflow to its disk
    SERVER = "server"  # on the PVS server


class ProvisioningSpec(_Frozen):
    kind: ProvisioningKind
    image_gb: PositiveFloat = 25.0  # vDisk, replica, master image or full disk size
    # pvs
    pvs_servers: tuple[str, ...] = ()  # names or ranges; targets are balanced over them
    write_cache: WriteCacheMode | None = None
    ram_cache_mb: PositiveFloat | None = None  # device_ram_overflow: the RAM part
    write_cache_disk_gb: PositiveFloat = 2.0  # device disk size (device_disk, overflow)
    # linked clones / MCS
    replica_datastore: str | None = None  # linked clones: one shared replica here (default one per datastore)
    delta_gb: PositiveFloat = 3.0  # delta / differencing disk allocation per desktop


class WorkloadName(StrEnum):
    TASK = "task"
    KNOWLEDGE = "knowledge"
    POWER = "power"


class PoolSpec(_Frozen):
    name: str
    desktops: str  # a compact range: desk-[0001-3000]
    cluster: str
    hosts: tuple[str, ...] = ()  # names or ranges within the cluster (default every host of it)
    datastores: tuple[str, ...] = Field(min_length=1)  # names or ranges; desktops are spread over them
    vcpus: PositiveInt = 1
    ram_gb: PositiveFloat = 2.0
    os: str = "Windows 10 Enterprise x64"
    workload: str = "task"  # a workload profile of vdi.twin.workloads (task, knowledge, power)
    provisioning: ProvisioningSpec
    ip: str | None = None  # desktops' addresses: first, counted up (default: generated, DHCP-like)
    tags: tuple[str, ...] = ()


# How a launcher is reached from where its calls are made: ``ssh`` (OpenSSH to the launcher machine,
# from the controller or from the site agent it is placed at; labctl/lab/launchers/registry.py) or
# ``local`` (on its site agent's own machine, which hosts it: labctl/agents/launchers.py).
LAUNCHER_KINDS: tuple[str, ...] = ("ssh", "local")


class LauncherAccess(_Frozen):
    """How labctl reaches a launcher machine (``kind: ssh``: OpenSSH for Windows on the launcher,
    running labctl's launcher script; see docs/session-launchers.md)."""

    user: str
    password: CredentialRef | None = None  # a credential reference (env:NAME, secret:KEY), never the value
    key_file: CredentialRef | None = None  # a credential reference to a private key's path
    port: int = Field(22, ge=1, le=65535)
    host_key_policy: Literal["strict", "accept-new", "insecure"] = "strict"
    known_hosts: str | None = None
    script: str = r"C:\labctl\launcher.ps1"  # the launcher script on the launcher machine


class LauncherLocal(_Frozen):
    """A launcher on its site agent's own machine (``kind: local``): the agent starts
    ``labctl launcher --config <config> serve`` and relays the controller's calls to it."""

    config: str  # the launcher's configuration file on the agent's machine (an absolute path)
    serve: bool = True  # the agent starts the daemon and stops it with itself (false: a service runs it)


class LauncherSpec(_Frozen):
    """Session launchers (a VSI-style load generator's launcher machines), a name or a range."""

    name: str
    sessions: PositiveInt  # sessions each launcher starts, one after the other
    pool: str | None = None  # the pool its users log on to (default the first pool)
    protocol: Literal["ica", "blast", "pcoip", "rdp"] = "ica"
    ip: str | None = None
    kind: str = "ssh"  # how it is reached: ssh (OpenSSH), local (hosted by its site agent)
    access: LauncherAccess | None = None  # ssh: how that backend logs in
    local: LauncherLocal | None = None  # local: the launcher's configuration on its agent's machine


class VdiSpec(_Frozen):
    note: str = ""  # what the published system tested, for readers and `labctl sim calibrate`
    clusters: tuple[VdiClusterSpec, ...] = Field(min_length=1)
    arrays: tuple[ArraySpec, ...] = ()
    datastores: tuple[DatastoreSpec, ...] = Field(min_length=1)
    pvs_servers: tuple[PvsServerSpec, ...] = ()
    pools: tuple[PoolSpec, ...] = Field(min_length=1)
    launchers: tuple[LauncherSpec, ...] = ()
    twin: VdiTwinParameters = VdiTwinParameters()


# --- resolved ------------------------------------------------------------------------------------


class EsxiHost(_Frozen):
    name: str
    vcenter: str
    datacenter: str
    cluster: str
    model: str
    cpu_model: str
    sockets: int
    cores: int  # per socket
    ghz: float
    ram_gb: float
    nics: NicSet
    ip: str | None

    @property
    def total_cores(self) -> int:
        return self.sockets * self.cores

    @property
    def cpu_mhz(self) -> float:
        """CPU capacity as vCenter counts it: cores x clock, MHz."""
        return self.total_cores * self.ghz * 1000.0


class Tier(_Frozen):
    name: str  # "ssd", "15k", ... (unique within the array)
    drive: DriveClass
    count: int
    capacity_gb: float
    raid: int
    raid_width: int
    spares: int
    service_time_ms: float | None

    @property
    def usable_gb(self) -> float:
        """Capacity after RAID (mirrors, parity)."""
        if self.raid in (1, 10):
            share = 0.5
        elif self.raid in (5, 50):
            share = (self.raid_width - 1) / self.raid_width
        else:
            share = (self.raid_width - 2) / self.raid_width
        return self.count * self.capacity_gb * share


class ArrayHardware(_Frozen):
    name: str
    kind: str  # the storage: entry's kind (unity, powerstore, sc, equallogic)
    model: str
    controllers: tuple[str, ...]  # names as the kind reports them: spa/spb, A/B, node-a/node-b
    controller_mode: ControllerMode
    cache_gb: float
    write_cache_mb: float | None
    controller_max_iops: float | None
    ports: NicSet
    tiers: tuple[Tier, ...]  # fastest first


class Datastore(_Frozen):
    name: str
    array: str
    volume: str
    capacity_gb: float
    cluster: str | None


class PvsServer(_Frozen):
    name: str
    vcpus: int
    ghz: float
    ram_gb: float
    nics: NicSet
    vdisk_datastore: str
    write_cache_datastore: str | None


class Provisioning(_Frozen):
    kind: ProvisioningKind
    image_gb: float
    pvs_servers: tuple[str, ...]
    write_cache: WriteCacheMode | None
    ram_cache_mb: float | None
    write_cache_disk_gb: float
    replica_datastore: str | None
    delta_gb: float

    def disk_gb(self) -> float:
        """What one desktop allocates on its own datastore, GB."""
        if self.kind is ProvisioningKind.PVS:
            return 0.0 if self.write_cache is WriteCacheMode.SERVER else self.write_cache_disk_gb
        if self.kind is ProvisioningKind.FULL_CLONE:
            return self.image_gb
        return self.delta_gb


class DesktopPool(_Frozen):
    name: str
    desktops: tuple[str, ...]
    cluster: str
    hosts: tuple[str, ...]
    datastores: tuple[str, ...]
    vcpus: int
    ram_gb: float
    os: str
    workload: str
    provisioning: Provisioning
    tags: tuple[str, ...]
    implicit: bool = False  # made by the twin for VMs outside any pool, not written in the file


class Launcher(_Frozen):
    name: str
    sessions: int
    pool: str
    protocol: str
    ip: str | None
    kind: str = "ssh"
    access: LauncherAccess | None = None
    local: LauncherLocal | None = None
    agent: str | None = None  # the site agent it is placed at (agents.sites[].launchers), None: here

    @property
    def transport(self) -> str:
        """How this controller carries ``labctl-launcher/1`` to it: ``agent`` (over NATS to the site
        agent it is placed at, which reaches it by its ``kind``) or its own ``kind``."""
        return "agent" if self.agent else self.kind


class VdiLab(_Frozen):
    """The virtual-desktop part of a resolved lab."""

    note: str
    hosts: dict[str, EsxiHost]  # in inventory order
    arrays: dict[str, ArrayHardware]
    datastores: dict[str, Datastore]
    pvs_servers: dict[str, PvsServer]
    pools: dict[str, DesktopPool]
    launchers: tuple[Launcher, ...]
    twin: VdiTwinParameters
    # every desktop: (pool, host, datastore). Desktop k of a pool runs on hosts[k % len] and keeps its
    # disks on datastores[k % len]: spread evenly, as the papers distribute them.
    placement: dict[str, tuple[str, str, str]]

    def pool_of(self, desktop: str) -> DesktopPool:
        return self.pools[self.placement[desktop][0]]

    def host_of(self, desktop: str) -> EsxiHost:
        return self.hosts[self.placement[desktop][1]]

    def datastore_of(self, desktop: str) -> Datastore:
        return self.datastores[self.placement[desktop][2]]
