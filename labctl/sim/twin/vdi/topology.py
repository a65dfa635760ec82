"""A VDI lab as queueing stations, and the route each desktop's I/O takes through them.

Stations (one row each in the per-station arrays):

- a host's NICs (storage and streaming bytes; its ports serve in parallel);
- an array's front-end ports (bytes), each controller (I/O processing), each tier (drives in
  parallel; an SSD serves several I/Os at once);
- a PVS server's NICs (streamed bytes) and CPU (per request, vCPUs in parallel);
- station 0, a dummy with no work, for roles a desktop does not use.

A desktop's requests visit stations by *role*: its host's NIC; the array side of its own datastore
(port, owning controller, tiers: "D" roles); the array side of its image (a PVS vDisk, a replica,
an MCS base disk; "I" roles); its PVS server. Which roles an I/O kind visits, and how often, is the
model's business (it depends on caches and modes); this module only maps roles to stations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from labctl.inventory.vdi import ArrayHardware, ProvisioningKind, VdiLab, WriteCacheMode
from labctl.sim.twin.vdi import arrays as arr
from labctl.sim.twin.vdi.phases import Templates, build_templates

MAX_TIERS = 3
KB = 1024.0


class Role(IntEnum):
    HNET = 0
    DPORT = 1
    DCTRL = 2
    DT0 = 3
    DT1 = 4
    DT2 = 5
    IPORT = 6
    ICTRL = 7
    IT0 = 8
    IT1 = 9
    IT2 = 10
    PNIC = 11
    PCPU = 12


N_ROLES = len(Role)
D_TIERS = (Role.DT0, Role.DT1, Role.DT2)
I_TIERS = (Role.IT0, Role.IT1, Role.IT2)


class Mode(IntEnum):
    """Where a desktop's writes and image reads go."""

    PVS_DISK = 0  # PVS, write cache on the device's disk
    PVS_RAM = 1  # PVS, write cache in device RAM with overflow to its disk
    PVS_SERVER = 2  # PVS, write cache on the PVS server
    CLONE = 3  # linked clone or MCS: image reads from a shared copy, writes to the desktop's own disk
    FULL = 4  # full clone: everything on its own disk


@dataclass
class ArrayModel:
    hw: ArrayHardware
    tiers: tuple[arr.TierTiming, ...]
    placement: arr.Placement
    port: int  # station
    ctrls: list[int]  # stations, one per controller
    tier_st: list[int]  # stations, padded to MAX_TIERS with the dummy
    write_cache_bytes: float
    ctrl_write_s: float
    ctrl_read_s: float
    failover_s: float


@dataclass
class Topology:
    vdi: VdiLab
    names: list[str]
    index: dict[str, int]
    pools: list
    hosts: list
    datastores: list
    pvs: list
    arrays: list[ArrayModel]
    templates: Templates
    pool_of: np.ndarray
    host_of: np.ndarray  # changes when a host enters maintenance
    ds_of: np.ndarray
    pvs_of: np.ndarray  # -1: not streamed
    img_ds: np.ndarray  # datastore holding the image copy this desktop reads (-1: none)
    mode: np.ndarray  # Mode per desktop
    ram_cache_mb: np.ndarray  # PVS RAM cache (0 if none)
    ds_array: np.ndarray
    ds_ctrl: np.ndarray  # controller index (within its array) owning the datastore's volume
    n_st: int
    s_io: np.ndarray  # per station: service per I/O on one server, s
    s_kb: np.ndarray  # per station: transfer per KB on one server, s
    parallel: np.ndarray  # per station: servers
    host_nic: np.ndarray  # station of each host's NICs
    pvs_nic: np.ndarray
    pvs_cpu: np.ndarray
    pvs_cache_cap_mb: np.ndarray
    kind_of_station: list[str] = field(default_factory=list)  # for reading: "host", "port", "ctrl", ...
    station: np.ndarray = field(default_factory=lambda: np.zeros((0, N_ROLES), dtype=np.int64))
    static_class: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def rebuild_routes(self) -> None:
        """The station of every desktop's every role, after placement or controller ownership changed."""
        n = len(self.names)
        st = np.zeros((n, N_ROLES), dtype=np.int64)
        st[:, Role.HNET] = self.host_nic[self.host_of]
        ports = np.array([a.port for a in self.arrays] + [0])
        tier_st = np.array([a.tier_st for a in self.arrays] + [[0] * MAX_TIERS])
        ctrl_st = self._ctrl_station_of_ds()
        a_d = self.ds_array[self.ds_of]
        st[:, Role.DPORT] = ports[a_d]
        st[:, Role.DCTRL] = ctrl_st[self.ds_of]
        st[:, list(D_TIERS)] = tier_st[a_d]
        has_img = self.img_ds >= 0
        img = np.where(has_img, self.img_ds, 0)
        a_i = np.where(has_img, self.ds_array[img], len(self.arrays))
        st[:, Role.IPORT] = ports[a_i]
        st[:, Role.ICTRL] = np.where(has_img, ctrl_st[img], 0)
        st[:, list(I_TIERS)] = tier_st[a_i]
        streamed = self.pvs_of >= 0
        st[:, Role.PNIC] = np.where(
            streamed, self.pvs_nic[np.maximum(self.pvs_of, 0)] if len(self.pvs) else 0, 0
        )
        st[:, Role.PCPU] = np.where(
            streamed, self.pvs_cpu[np.maximum(self.pvs_of, 0)] if len(self.pvs) else 0, 0
        )
        self.station = st
        keys = np.stack([self.pool_of, self.host_of, self.ds_of, self.pvs_of + 1, self.img_ds + 1], axis=1)
        self.static_class = (
            np.unique(keys, axis=0, return_inverse=True)[1].ravel() if n else np.zeros(0, dtype=np.int64)
        )

    def _ctrl_station_of_ds(self) -> np.ndarray:
        return np.array([self.arrays[a].ctrls[c] for a, c in zip(self.ds_array, self.ds_ctrl, strict=True)])


def build_topology(vdi: VdiLab) -> Topology:
    p = vdi.twin
    pools = list(vdi.pools.values())
    hosts = list(vdi.hosts.values())
    datastores = list(vdi.datastores.values())
    pvs = list(vdi.pvs_servers.values())
    host_i = {h.name: i for i, h in enumerate(hosts)}
    ds_i = {d.name: i for i, d in enumerate(datastores)}
    pvs_i = {s.name: i for i, s in enumerate(pvs)}
    array_names = [a for a in vdi.arrays]
    array_i = {a: i for i, a in enumerate(array_names)}

    # --- stations ---------------------------------------------------------------------------------
    s_io: list[float] = [0.0]
    s_kb: list[float] = [0.0]
    par: list[float] = [1e9]
    kinds: list[str] = ["dummy"]

    def station(io: float, per_kb: float, servers: float, kind: str) -> int:
        s_io.append(io)
        s_kb.append(per_kb)
        par.append(max(servers, 1.0))
        kinds.append(kind)
        return len(s_io) - 1

    def link_s_per_kb(gbps: float) -> float:
        return KB / (gbps * 1e9 / 8.0 * p.network_efficiency)

    host_nic = np.array([station(0.0, link_s_per_kb(h.nics.speed_gbps), h.nics.count, "host") for h in hosts])
    pvs_nic = np.array([station(0.0, link_s_per_kb(s.nics.speed_gbps), s.nics.count, "pvs_nic") for s in pvs])
    pvs_cpu = np.array(
        [station(p.pvs_cpu_cycles_per_request / (s.ghz * 1e9), 0.0, s.vcpus, "pvs_cpu") for s in pvs]
    )

    names: list[str] = []
    pool_of: list[int] = []
    host_of: list[int] = []
    ds_of: list[int] = []
    pvs_of: list[int] = []
    img_ds: list[int] = []
    mode: list[int] = []
    ram_mb: list[float] = []
    for pi, pool in enumerate(pools):
        prov = pool.provisioning
        servers = [pvs_i[s] for s in prov.pvs_servers]
        for k, d in enumerate(pool.desktops):
            if d not in vdi.placement:
                continue
            _, h, ds = vdi.placement[d]
            names.append(d)
            pool_of.append(pi)
            host_of.append(host_i[h])
            ds_of.append(ds_i[ds])
            if prov.kind is ProvisioningKind.PVS:
                s = servers[k % len(servers)]
                pvs_of.append(s)
                # reads go to the vDisk's store; with the cache on the server, its store holds them too
                wc_store = pvs[s].write_cache_datastore
                on_server = prov.write_cache is WriteCacheMode.SERVER and wc_store is not None
                img_ds.append(
                    ds_i[wc_store] if on_server and wc_store is not None else ds_i[pvs[s].vdisk_datastore]
                )
                m = {
                    WriteCacheMode.DEVICE_DISK: Mode.PVS_DISK,
                    WriteCacheMode.DEVICE_RAM_OVERFLOW: Mode.PVS_RAM,
                    WriteCacheMode.SERVER: Mode.PVS_SERVER,
                }[prov.write_cache or WriteCacheMode.DEVICE_DISK]
                mode.append(m)
            else:
                pvs_of.append(-1)
                if prov.kind is ProvisioningKind.LINKED_CLONE and prov.replica_datastore:
                    img_ds.append(ds_i[prov.replica_datastore])
                elif prov.kind is ProvisioningKind.FULL_CLONE:
                    img_ds.append(-1)  # no shared image: it reads its own disk
                else:
                    img_ds.append(ds_i[ds])  # the replica / base disk copy on its own datastore
                mode.append(Mode.FULL if prov.kind is ProvisioningKind.FULL_CLONE else Mode.CLONE)
            in_ram = prov.write_cache is WriteCacheMode.DEVICE_RAM_OVERFLOW
            ram_mb.append((prov.ram_cache_mb or 0.0) if in_ram else 0.0)

    ds_array = np.array([array_i[d.array] for d in datastores], dtype=np.int64)
    # volumes alternate over active controllers in datastore order; active/standby: all on the first
    ds_ctrl = np.zeros(len(datastores), dtype=np.int64)
    per_array_count: dict[int, int] = {}
    for j, a in enumerate(ds_array):
        hw = vdi.arrays[array_names[a]]
        k = per_array_count.get(int(a), 0)
        ds_ctrl[j] = k % arr.active_controllers(hw)
        per_array_count[int(a)] = k + 1

    templates = build_templates(pools, vdi.hosts, p)
    # what each array holds: shared image copies and desktops with private data
    pool_arr = np.array(pool_of, dtype=np.int64)
    mode_arr = np.array(mode, dtype=np.int64)
    img_arr = np.array(img_ds, dtype=np.int64)
    ds_arr = np.array(ds_of, dtype=np.int64)
    array_models: list[ArrayModel] = []
    for a, name in enumerate(array_names):
        hw = vdi.arrays[name]
        timings = tuple(arr.tier_timing(t, p) for t in hw.tiers)[:MAX_TIERS]
        on_a = ds_array[ds_arr] == a if len(ds_arr) else np.zeros(0, dtype=bool)
        priv_desktops = int(np.count_nonzero(on_a & (mode_arr != Mode.PVS_SERVER)))
        copies = {int(i) for i in img_arr[(img_arr >= 0)] if ds_array[int(i)] == a}
        active_mb = float(np.mean(templates.footprint_cap_mb[pool_arr[on_a]])) if on_a.any() else 0.0
        place = arr.placement(hw, timings, p, len(copies), priv_desktops, active_mb)
        port = station(0.0, arr.port_s_per_kb(hw, p), hw.ports.count * arr.active_controllers(hw), "port")
        ctrls = [station(arr.controller_service_s(hw, p), 0.0, 1.0, "ctrl") for _ in hw.controllers]
        tier_st = [station(t.positioning_s, t.s_per_kb, t.servers, "tier") for t in timings]
        tier_st += [0] * (MAX_TIERS - len(tier_st))
        array_models.append(
            ArrayModel(
                hw,
                timings,
                place,
                port,
                ctrls,
                tier_st,
                arr.write_cache_mb(hw, p) * arr.MB,
                p.controller_write_ms.get(hw.kind, 0.5) / 1e3,
                p.controller_read_ms.get(hw.kind, 0.3) / 1e3,
                p.controller_failover_s.get(hw.kind, 20.0),
            )
        )

    topo = Topology(
        vdi=vdi,
        names=names,
        index={n: i for i, n in enumerate(names)},
        pools=pools,
        hosts=hosts,
        datastores=datastores,
        pvs=pvs,
        arrays=array_models,
        templates=templates,
        pool_of=pool_arr,
        host_of=np.array(host_of, dtype=np.int64),
        ds_of=ds_arr,
        pvs_of=np.array(pvs_of, dtype=np.int64),
        img_ds=img_arr,
        mode=mode_arr,
        ram_cache_mb=np.array(ram_mb),
        ds_array=ds_array,
        ds_ctrl=ds_ctrl,
        n_st=len(s_io),
        s_io=np.array(s_io),
        s_kb=np.array(s_kb),
        parallel=np.array(par),
        host_nic=host_nic,
        pvs_nic=pvs_nic,
        pvs_cpu=pvs_cpu,
        pvs_cache_cap_mb=np.array([max(0.0, (s.ram_gb - p.pvs_os_reserve_gb) * 1024.0) for s in pvs]),
        kind_of_station=kinds,
    )
    topo.rebuild_routes()
    return topo
