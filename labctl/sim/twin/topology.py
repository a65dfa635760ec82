"""The lab as queueing stations, and which stations each client's requests pass through.

A *station* is one resource that requests queue for: a server's CPU (its cores serve in
parallel), one direction of one NIC port, a switch uplink, a volume (its spindles serve in
parallel). A client's request visits stations by *role* (the streaming server's CPU, its NIC port
towards the client, the vDisk volume, ...); :class:`Topology` maps every (role, client) to a
station index, so the solver works on ``(roles, clients)`` arrays.

Placement follows the inventory:
- clients are spread round-robin over ``configuration.streaming_servers`` and, on each server,
  over its NIC ports (PVS balances clients over the server's addresses);
- the vDisk and the write cache live on ``configuration.vdisk_volume``/``write_cache_volume``; when
  that volume belongs to another server (the HA NAS) reads that miss the streaming server's cache
  and every write cross the network to it (its NICs and CPU are extra stations);
- clients fill the secondary switches' ports in inventory order (one port per switch is its
  uplink), the rest sit on the primary switch with the servers; a secondary switch's uplink is a
  station in each direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from labctl.inventory.model import Lab, Machine, ServerHardware, Volume
from labctl.inventory.twin_params import TwinParameters
from labctl.sim.twin import hardware as hwm


class Role(IntEnum):
    SS_CPU = 0  # streaming server CPU
    SS_OUT = 1  # streaming server NIC port, outbound (to the client; to the NAS for HA writes)
    SS_IN = 2  # streaming server NIC port, inbound
    UP_DOWN = 3  # secondary switch uplink towards the clients
    UP_UP = 4  # secondary switch uplink towards the servers
    VD_VOL = 5  # volume holding the vDisk
    WC_VOL = 6  # volume holding the write cache
    BK_CPU = 7  # remote storage server CPU (HA NAS)
    BK_OUT = 8  # remote storage server NIC, outbound (towards the streaming server)
    BK_IN = 9  # remote storage server NIC, inbound
    SH_CPU = 10  # file-share server CPU (copy workloads)
    SH_OUT = 11
    SH_IN = 12
    SH_VOL = 13  # volume holding the share


N_ROLES = len(Role)


class StationKind(IntEnum):
    CPU = 0
    NIC_OUT = 1
    NIC_IN = 2
    UPLINK = 3
    VOLUME = 4
    DUMMY = 5


@dataclass
class VolumeInfo:
    station: int
    server: str
    index: int  # position among the server's volumes (PDH instance number)
    volume: Volume
    timing: hwm.DiskTiming
    penalty: int
    controller_cache_bytes: float  # 0 without a write-back controller
    # buffered writes the server's cache manager holds dirty for this volume before writers wait:
    # the share's volume (SMB writes go through the file server's cache); 0 elsewhere (the
    # streaming service writes its write-cache files write-through)
    os_dirty_bytes: float = 0.0


@dataclass
class ServerNode:
    name: str
    hw: ServerHardware
    cpu: int  # station index
    nic_out: list[int]
    nic_in: list[int]
    nic_names: tuple[str, ...]
    nic_rate: float  # counted bytes/s per port
    volumes: list[VolumeInfo]
    os: str = ""  # the inventory's OS name (a 32-bit Windows caps its file cache)


@dataclass
class Topology:
    m: np.ndarray  # parallel servers per station (cores, spindles, 1)
    kind: np.ndarray  # StationKind per station
    rate: np.ndarray  # bytes/s of NIC/uplink stations (0 elsewhere)
    owner: list[str]  # machine (or switch) of each station
    servers: dict[str, ServerNode]
    volumes: list[VolumeInfo]
    role_station: np.ndarray  # (N_ROLES, clients) station index; the dummy station when absent
    client_names: list[str]
    client_server: list[str]  # streaming server of each client
    client_link_rate: np.ndarray  # counted bytes/s of each client's port
    ss_nic_rate: np.ndarray  # rate of the streaming server port each client uses
    vdisk_remote: np.ndarray  # per client: the vDisk lives on another server than its streaming server
    wc_remote: np.ndarray  # per client: the write cache lives on another server
    vdisk_server: str | None
    wc_server: str | None
    share_server: str | None
    dummy: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def n_stations(self) -> int:
        return len(self.m)


def _split(ref: str) -> tuple[str, str]:
    server, _, volume = ref.partition(":")
    return server, volume


def build_topology(lab: Lab, p: TwinParameters) -> Topology:
    m: list[float] = []
    kind: list[int] = []
    rate: list[float] = []
    owner: list[str] = []

    def station(k: StationKind, parallel: float, who: str, bytes_per_s: float = 0.0) -> int:
        m.append(parallel)
        kind.append(int(k))
        rate.append(bytes_per_s)
        owner.append(who)
        return len(m) - 1

    servers: dict[str, ServerNode] = {}
    volumes: list[VolumeInfo] = []
    for srv in lab.servers:
        hw = srv.server_hardware
        if hw is None:
            continue
        cpu = station(StationKind.CPU, hwm.cores(hw), srv.name)
        nic_rate = hwm.nic_counted_bytes_per_s(hw.nics.speed_gbps, p)
        outs = [station(StationKind.NIC_OUT, 1, srv.name, nic_rate) for _ in range(hw.nics.count)]
        ins = [station(StationKind.NIC_IN, 1, srv.name, nic_rate) for _ in range(hw.nics.count)]
        vols = []
        for i, v in enumerate(hw.volumes):
            st = station(StationKind.VOLUME, v.disks, srv.name)
            info = VolumeInfo(
                st,
                srv.name,
                i,
                v,
                hwm.disk_timing(v, p),
                hwm.raid_write_penalty(v),
                p.controller_write_cache_mb * hwm.MB if v.controller_write_back else 0.0,
            )
            vols.append(info)
            volumes.append(info)
        servers[srv.name] = ServerNode(
            srv.name, hw, cpu, outs, ins, hwm.nic_names(hw.nics), nic_rate, vols, srv.os
        )

    # switches: clients fill the secondary switches' ports first (one port is the uplink)
    secondaries = [s for s in lab.switches if s.role == "secondary"]
    uplink_down: list[int] = []
    uplink_up: list[int] = []
    ports: list[int] = []
    for sw in secondaries:
        up_rate = hwm.nic_counted_bytes_per_s(sw.uplink_gbps, p)
        uplink_down.append(station(StationKind.UPLINK, 1, sw.name, up_rate))
        uplink_up.append(station(StationKind.UPLINK, 1, sw.name, up_rate))
        ports.append(max(0, sw.ports - 1))

    dummy = station(StationKind.DUMMY, 1, "")

    clients: list[Machine] = list(lab.clients)
    n = len(clients)
    rs = np.full((len(Role), n), dummy, dtype=np.int64)
    conf = lab.configuration
    streaming = [s for s in (conf.streaming_servers if conf else ()) if s in servers]
    if not streaming:
        streaming = [
            s.name for s in lab.servers if s.role and s.role.value == "streaming" and s.name in servers
        ]
    vd_server, vd_vol = _split(f"{conf.vdisk_server}:{conf.vdisk_volume}") if conf else (None, None)
    wc_server, wc_vol = (
        _split(f"{conf.write_cache_server}:{conf.write_cache_volume}") if conf else (None, None)
    )
    share = conf.share if conf else None
    share_server = share.server if share and share.server in servers else None

    def vol_station(server: str | None, name: str | None) -> int:
        if server is None or server not in servers:
            return dummy
        for info in servers[server].volumes:
            if info.volume.name == name:
                return info.station
        return dummy

    vd_station = vol_station(vd_server, vd_vol)
    wc_station = vol_station(wc_server, wc_vol)
    sh_station = dummy
    if share_server:
        sh_station = vol_station(share_server, share.volume if share else None)
        if sh_station == dummy and servers[share_server].volumes:
            sh_station = servers[share_server].volumes[0].station
        node = servers[share_server]
        for info in node.volumes:
            if info.station == sh_station:
                info.os_dirty_bytes = hwm.dirty_limit_mb(node.hw, p, node.os) * hwm.MB

    client_server: list[str] = []
    link_rate = np.zeros(n)
    ss_rate = np.zeros(n)
    per_server_count: dict[str, int] = {s: 0 for s in streaming}
    vdisk_remote = np.zeros(n, dtype=bool)
    wc_remote = np.zeros(n, dtype=bool)
    remote: str | None = None
    for i, c in enumerate(clients):
        ch = c.client_hardware
        link_rate[i] = hwm.nic_counted_bytes_per_s(ch.nic_speed_gbps if ch else 1.0, p)
        if not streaming:
            client_server.append("")
            continue
        ss = streaming[i % len(streaming)]
        client_server.append(ss)
        node = servers[ss]
        j = per_server_count[ss] % len(node.nic_out)
        per_server_count[ss] += 1
        rs[Role.SS_CPU, i] = node.cpu
        rs[Role.SS_OUT, i] = node.nic_out[j]
        rs[Role.SS_IN, i] = node.nic_in[j]
        ss_rate[i] = node.nic_rate
        rs[Role.VD_VOL, i] = vd_station
        rs[Role.WC_VOL, i] = wc_station
        for backing in (vd_server, wc_server):
            if backing and backing != ss and backing in servers:
                bk = servers[backing]
                k = streaming.index(ss) % len(bk.nic_out)
                rs[Role.BK_CPU, i] = bk.cpu
                rs[Role.BK_OUT, i] = bk.nic_out[k]
                rs[Role.BK_IN, i] = bk.nic_in[k]
                remote = backing
        vdisk_remote[i] = vd_server is not None and vd_server != ss and vd_server in servers
        wc_remote[i] = wc_server is not None and wc_server != ss and wc_server in servers
        if share_server:
            sh = servers[share_server]
            rs[Role.SH_CPU, i] = sh.cpu
            rs[Role.SH_OUT, i] = sh.nic_out[i % len(sh.nic_out)]
            rs[Role.SH_IN, i] = sh.nic_in[i % len(sh.nic_in)]
            rs[Role.SH_VOL, i] = sh_station

    # switch ports
    i = 0
    for s, cap in enumerate(ports):
        take = min(cap, n - i)
        rs[Role.UP_DOWN, i : i + take] = uplink_down[s]
        rs[Role.UP_UP, i : i + take] = uplink_up[s]
        i += take

    notes = []
    if remote:
        notes.append(f"vDisk/write cache on {remote}, reached over the network")
    return Topology(
        m=np.asarray(m, dtype=float),
        kind=np.asarray(kind, dtype=np.int64),
        rate=np.asarray(rate, dtype=float),
        owner=owner,
        servers=servers,
        volumes=volumes,
        role_station=rs,
        client_names=[c.name for c in clients],
        client_server=client_server,
        client_link_rate=link_rate,
        ss_nic_rate=ss_rate,
        vdisk_remote=vdisk_remote,
        wc_remote=wc_remote,
        vdisk_server=vd_server,
        wc_server=wc_server,
        share_server=share_server,
        dummy=dummy,
        notes=notes,
    )
