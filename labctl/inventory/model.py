"""Typed, immutable model of a lab inventory (`hardware/*.yaml`).

Two layers:
- *Spec* models mirror the YAML as written (ranges such as ``optiplex-[001-100]`` unexpanded);
  pydantic validates types and unknown keys against them.
- The resolved :class:`Lab` has every range expanded into one :class:`Machine` per box, groups
  resolved to machine names, and one configuration (e.g. standalone or HA) applied.

Nothing outside :mod:`labctl.inventory` parses YAML; everything else reads these objects.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from labctl.errors import UnknownTargetError
from labctl.inventory.agents import Agents, AgentsSpec
from labctl.inventory.faults import FaultSpec
from labctl.inventory.refs import CredentialRef
from labctl.inventory.twin_params import TwinParameters
from labctl.inventory.vdi import VdiLab, VdiSpec


class Frozen(BaseModel):
    """Base for every inventory object: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# --- credentials -------------------------------------------------------------------------------

# A credential *reference*, never a value (labctl.inventory.refs): CredentialRef, imported above.


class TlsMode(StrEnum):
    VERIFY = "verify"  # system trust store (or ca_file)
    INSECURE = "insecure"  # explicit opt-out, e.g. a BMC with a self-signed certificate


class Tls(Frozen):
    mode: TlsMode = TlsMode.VERIFY
    ca_file: str | None = None  # a PEM bundle to trust instead of the system store


class HostKeyPolicy(StrEnum):
    STRICT = "strict"  # known_hosts must hold the key
    ACCEPT_NEW = "accept-new"  # trust on first use, then strict
    INSECURE = "insecure"  # accept anything (simulated labs only)


class SshAccess(Frozen):
    host: str | None = None  # default: the machine's IP
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: str
    password: CredentialRef | None = None
    key_file: CredentialRef | None = None  # reference to a path of a private key
    host_key_policy: HostKeyPolicy = HostKeyPolicy.STRICT
    known_hosts: str | None = None


class BmcEndpoint(Frozen):
    """A server's baseboard management controller, spoken to over Redfish (iDRAC)."""

    url: str
    user: str
    password: CredentialRef
    tls: Tls = Tls()
    max_sessions: PositiveInt = 4  # iDRAC allows few concurrent sessions


class IpmiEndpoint(Frozen):
    """A BMC spoken to over IPMI 2.0 (RMCP+, UDP): chassis power on/off/reset and status."""

    host: str
    port: Annotated[int, Field(ge=1, le=65535)] = 623  # the IPMI LAN port (RMCP, IPMI 2.0 section 13)
    user: str
    password: CredentialRef


class PowerKind(StrEnum):
    """The power backend that carries a machine's power actions (``power:`` in the inventory).

    Each value has one module in :mod:`labctl.lab.power` and one line in its registry; a machine
    without ``power:`` gets its kind's default (client: wol-ssh, server: redfish, vm: vcenter).
    """

    WOL_SSH = "wol-ssh"  # Wake-on-LAN on; the OS's own shutdown over SSH for off/reboot/reset
    REDFISH = "redfish"  # ComputerSystem.Reset on the server's bmc:
    VCENTER = "vcenter"  # vCenter power tasks
    IPMI = "ipmi"  # IPMI chassis control on the machine's ipmi: endpoint
    # a site agent runs the machine's own backend where the wire is; chosen from the agents:
    # section, never written as power: (see Machine.power_kind)
    AGENT = "agent"


SUPPORTED_POWER_KINDS = tuple(k.value for k in PowerKind if k is not PowerKind.AGENT)


# --- hardware ----------------------------------------------------------------------------------


class Cpu(Frozen):
    model: str = ""
    sockets: PositiveInt = 1
    cores: PositiveInt  # cores per socket
    ghz: PositiveFloat


class Nics(Frozen):
    count: PositiveInt
    speed_gbps: PositiveFloat


class DiskType(StrEnum):
    SAS = "sas"
    SATA = "sata"
    SSD = "ssd"
    NVME = "nvme"


class VolumePurpose(StrEnum):
    OS = "os"
    VDISK = "vdisk"
    WRITE_CACHE = "write_cache"
    DATA = "data"
    SHARE = "share"
    DATABASE = "database"


class Volume(Frozen):
    name: str
    purposes: tuple[VolumePurpose, ...] = Field(min_length=1)
    drive: str | None = None  # Windows drive letter, e.g. "D:"; names the PhysicalDisk instance
    raid: Literal[0, 1, 5, 6, 10, 50, 60]
    disks: PositiveInt
    disk_type: DiskType
    rpm: PositiveInt | None = None  # rotational disks: rpm, or give service_time_ms
    avg_seek_ms: PositiveFloat | None = None
    service_time_ms: PositiveFloat | None = None  # overrides what rpm/seek imply
    capacity_gb: PositiveFloat  # per disk
    controller_write_back: bool = True  # PERC write-back cache (battery-backed)


class ServerHardware(Frozen):
    cpu: Cpu
    ram_gb: PositiveFloat
    fs_cache_mb: PositiveFloat | None = None  # OS file-system cache cap (2003 R2 32-bit: 960 MB)
    nics: Nics
    volumes: tuple[Volume, ...] = ()


class ClientHardware(Frozen):
    cpu: Cpu | None = None
    ram_gb: PositiveFloat | None = None
    nic_speed_gbps: PositiveFloat = 1.0
    local_disk: bool = False  # diskless streaming clients have none


def _iana_zone(name: str) -> str:
    """A server's clock zone as an IANA name (``Europe/Berlin``, ``UTC``): what its local times mean."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"time_zone {name!r} is not an IANA time zone; write e.g. America/Los_Angeles, Europe/Berlin or UTC"
        ) from None
    return name


# The zone a Windows server's clock runs in: console typeperf stamps samples in local time with no
# zone, so without it those samples cannot be placed against the arrays' and vCenter's (UTC) clocks.
TimeZone = Annotated[str, AfterValidator(_iana_zone)]

# --- machines (as written, ranges allowed) -------------------------------------------------------


class MachineRole(StrEnum):
    STREAMING = "streaming"
    STORAGE = "storage"
    INFRASTRUCTURE = "infrastructure"
    HYPERVISOR = "hypervisor"
    SWITCH = "switch"


class ClientSpec(Frozen):
    name: str  # a name or a range, e.g. optiplex-[001-100]
    model: str = ""
    os: str = ""
    network: str
    mac: str  # one MAC (incremented for a range) or "first..last"
    ip: str  # one IPv4 (incremented for a range) or "first..last"
    ssh: SshAccess | None = None
    power: PowerKind | None = None  # default: wol-ssh
    tags: tuple[str, ...] = ()
    hardware: ClientHardware = ClientHardware()
    configurations: tuple[str, ...] = ()  # empty: present in every configuration


class ServerSpec(Frozen):
    name: str
    role: MachineRole
    model: str = ""
    os: str = ""
    network: str
    mac: str | None = None
    ip: str
    ssh: SshAccess | None = None
    bmc: BmcEndpoint | None = None
    power: PowerKind | None = None  # default: redfish
    ipmi: IpmiEndpoint | None = None  # with power: ipmi
    hardware: ServerHardware | None = None
    tags: tuple[str, ...] = ()
    configurations: tuple[str, ...] = ()
    time_zone: TimeZone | None = None  # its clock's zone (IANA); typeperf's local times need it


class VmSpec(Frozen):
    name: str  # range allowed
    vcenter: str
    host: str | None = None  # ESXi host name inside the vCenter topology
    ip: str | None = None
    power: PowerKind | None = None  # default: vcenter
    tags: tuple[str, ...] = ()
    configurations: tuple[str, ...] = ()


class Network(Frozen):
    name: str
    subnet: str  # CIDR
    broadcast: str
    wol_port: Annotated[int, Field(ge=1, le=65535)] = 9
    wol_relay: str | None = None  # a machine name on that subnet that sends WoL for us over SSH
    speed_gbps: PositiveFloat = 1.0


class ClusterSpec(Frozen):
    name: str
    hosts: PositiveInt = 1
    host_cpu_cores: PositiveInt = 16
    host_cpu_ghz: PositiveFloat = 2.6
    host_ram_gb: PositiveFloat = 256


class DatacenterSpec(Frozen):
    name: str
    clusters: tuple[ClusterSpec, ...] = ()


class VCenter(Frozen):
    name: str
    url: str
    user: str
    password: CredentialRef
    tls: Tls = Tls()
    datacenters: tuple[DatacenterSpec, ...] = ()


class StorageKind(StrEnum):
    UNITY = "unity"
    POWERSTORE = "powerstore"
    SC = "sc"  # Dell SC / Compellent (Data Collector REST)
    EQUALLOGIC = "equallogic"  # EqualLogic PS (SNMP, as SAN HQ polls it)


SUPPORTED_STORAGE_KINDS = tuple(k.value for k in StorageKind)


class StorageArray(Frozen):
    name: str
    kind: StorageKind
    url: str
    user: str
    password: CredentialRef
    tls: Tls = Tls()
    pools: tuple[str, ...] = ()
    luns: tuple[str, ...] = ()


class Share(Frozen):
    name: str
    server: str  # the server that hosts it
    unc: str  # \\server\share
    volume: str | None = None  # the server volume it lives on


class Switch(Frozen):
    name: str
    model: str = ""
    ports: PositiveInt = 48
    port_speed_gbps: PositiveFloat = 1.0
    uplink_gbps: PositiveFloat = 1.0
    spanning_tree_portfast: bool = True  # PortFast: a port forwards at link-up, no 30 s STP wait
    role: Literal["primary", "secondary"] = "primary"


class GroupSpec(Frozen):
    members: tuple[str, ...] = ()  # names or ranges
    tags: tuple[str, ...] = ()  # machines carrying all of these tags
    kind: Literal["client", "server", "vm"] | None = None
    description: str = ""


class ConfigurationSpec(Frozen):
    """One arrangement of the lab (standalone, HA, ...): which servers stream, where data lives."""

    description: str = ""
    streaming_servers: tuple[str, ...] = Field(min_length=1)
    vdisk_volume: str  # "server:volume"
    write_cache_volume: str  # "server:volume"
    share: str | None = None  # the share copy workloads use as "remote"


class NightlySpec(Frozen):
    """``lab.nightly``: what `labctl nightly` runs on this lab when no plans are named."""

    plans: tuple[str, ...] = Field(
        ("boot_storm",), min_length=1, description="plans run every night, in one run (one lease, one folder)"
    )
    profile: str | None = Field(None, description="their parameter profile (default: each plan file's)")
    params: dict[str, str | int | float | list[str | int | float]] = Field(
        default_factory=dict, description="plan parameter overrides, as `--param KEY=VALUE` would give them"
    )


class LabSpec(Frozen):
    name: str
    description: str = ""
    time_scale: PositiveFloat = 1.0  # 1 for real labs; the simulated lab runs faster
    simulated: bool = False
    # simulated labs: move every 127.x.y.z address onto 127.<block>.0.0/16 ("auto": a free block
    # remembered for this file); see labctl.inventory.placement
    loopback_block: int | Literal["auto"] | None = None
    seed: int = 0
    twin: TwinParameters = TwinParameters()
    faults: tuple[FaultSpec, ...] = ()
    nightly: NightlySpec = NightlySpec()


class InventorySpec(Frozen):
    lab: LabSpec
    networks: tuple[Network, ...] = Field(min_length=1)
    clients: tuple[ClientSpec, ...] = ()
    servers: tuple[ServerSpec, ...] = ()
    vms: tuple[VmSpec, ...] = ()
    vcenters: tuple[VCenter, ...] = ()
    storage: tuple[StorageArray, ...] = ()
    shares: tuple[Share, ...] = ()
    switches: tuple[Switch, ...] = ()
    groups: dict[str, GroupSpec] = {}
    configurations: dict[str, ConfigurationSpec] = {}
    default_configuration: str | None = None
    vdi: VdiSpec | None = (
        None  # virtual-desktop labs: hosts, pools, datastores, arrays (labctl.inventory.vdi)
    )
    agents: AgentsSpec | None = None  # site agents and their hub (labctl.inventory.agents)


# --- resolved lab --------------------------------------------------------------------------------


class MachineKind(StrEnum):
    CLIENT = "client"
    SERVER = "server"
    VM = "vm"


class Machine(Frozen):
    """One box after range expansion: what the power and source layers act on."""

    name: str
    kind: MachineKind
    role: MachineRole | None = None
    model: str = ""
    os: str = ""
    network: str | None = None
    mac: str | None = None  # lower-case, colon-separated
    ip: str | None = None
    ssh: SshAccess | None = None
    bmc: BmcEndpoint | None = None
    ipmi: IpmiEndpoint | None = None
    power: PowerKind | None = None  # as written; see power_kind
    vcenter: str | None = None
    vm_host: str | None = None
    tags: tuple[str, ...] = ()
    client_hardware: ClientHardware | None = None
    server_hardware: ServerHardware | None = None
    agent: str | None = None  # the site agent that serves it (from agents:), None: this controller
    time_zone: str | None = None  # servers: the clock's IANA zone, as declared (None: not declared)

    @property
    def ssh_host(self) -> str | None:
        if self.ssh is None:
            return None
        return self.ssh.host or self.ip

    @property
    def power_kind(self) -> PowerKind:
        """The backend that powers this machine from here: ``agent`` when a site agent serves it,
        else :attr:`own_power_kind`."""
        return PowerKind.AGENT if self.agent else self.own_power_kind

    @property
    def own_power_kind(self) -> PowerKind:
        """The backend on the wire: its ``power:`` setting, else its kind's default (what its
        agent runs, when it has one)."""
        return self.power or DEFAULT_POWER[self.kind]


DEFAULT_POWER: dict[MachineKind, PowerKind] = {
    MachineKind.CLIENT: PowerKind.WOL_SSH,
    MachineKind.SERVER: PowerKind.REDFISH,
    MachineKind.VM: PowerKind.VCENTER,
}

# The endpoint a backend needs on the machine (checked at load): backend -> (Machine field, as written)
POWER_ENDPOINT: dict[PowerKind, tuple[str, str]] = {
    PowerKind.REDFISH: ("bmc", "bmc: {url: ..., user: ..., password: ...}"),
    PowerKind.IPMI: ("ipmi", "ipmi: {host: ..., user: ..., password: ...}"),
    PowerKind.VCENTER: ("vcenter", "vcenter: <name>"),
}


class Group(Frozen):
    name: str
    members: tuple[str, ...]
    description: str = ""


class Configuration(Frozen):
    name: str
    description: str
    streaming_servers: tuple[str, ...]
    vdisk_server: str
    vdisk_volume: str
    write_cache_server: str
    write_cache_volume: str
    share: Share | None


class Lab(Frozen):
    """The resolved lab in one configuration. Built by :func:`labctl.inventory.load_lab`."""

    name: str
    description: str
    source_file: str
    time_scale: float
    simulated: bool
    loopback_block: int | None = None  # the block the file's 127.x addresses were placed on
    seed: int
    twin: TwinParameters
    faults: tuple[FaultSpec, ...]
    configuration: Configuration | None
    configurations: tuple[str, ...]  # every configuration the file declares
    networks: dict[str, Network]
    machines: dict[str, Machine]  # name -> machine, in inventory order
    groups: dict[str, Group]
    vcenters: dict[str, VCenter]
    storage: dict[str, StorageArray]
    shares: dict[str, Share]
    switches: tuple[Switch, ...]
    inventory_sha256: str
    vdi: VdiLab | None = None
    agents: Agents | None = None  # site agents, when the lab has outgrown one controller
    nightly: NightlySpec = NightlySpec()  # what `labctl nightly` runs here without named plans

    def machine(self, name: str) -> Machine:
        try:
            return self.machines[name]
        except KeyError:
            raise UnknownTargetError(name, self) from None

    @property
    def clients(self) -> tuple[Machine, ...]:
        return tuple(m for m in self.machines.values() if m.kind is MachineKind.CLIENT)

    @property
    def servers(self) -> tuple[Machine, ...]:
        return tuple(m for m in self.machines.values() if m.kind is MachineKind.SERVER)

    @property
    def vms(self) -> tuple[Machine, ...]:
        return tuple(m for m in self.machines.values() if m.kind is MachineKind.VM)

    def servers_with_role(self, role: MachineRole) -> tuple[Machine, ...]:
        return tuple(m for m in self.servers if m.role is role)

    def network_of(self, machine: Machine) -> Network | None:
        return self.networks.get(machine.network) if machine.network else None
