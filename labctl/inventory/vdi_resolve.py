"""Check and expand the ``vdi:`` section of an inventory (see :mod:`labctl.inventory.vdi`).

Called by :func:`labctl.inventory.load.resolve` in two steps: :meth:`VdiResolver.desktops` early,
so desktops join the lab's machines (and its duplicate-name and address checks), then
:meth:`VdiResolver.finish` once vCenters and arrays are known. Every problem goes to the loader's
collector as one ``file:line: path: what (fix)`` line; nothing here raises on bad input.

Everything is linear in the number of desktops: a 3,000-desktop lab resolves in well under a second.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field

from labctl.inventory import vdi_checks
from labctl.inventory.model import (
    ClusterSpec,
    DatacenterSpec,
    Group,
    InventorySpec,
    Machine,
    MachineKind,
    StorageArray,
    VCenter,
)
from labctl.inventory.ranges import RangeError, expand_ips, expand_names
from labctl.inventory.vdi import (
    ArrayHardware,
    ControllerMode,
    Datastore,
    DesktopPool,
    DriveClass,
    EsxiHost,
    Launcher,
    Provisioning,
    ProvisioningKind,
    ProvisioningSpec,
    PvsServer,
    Tier,
    VdiLab,
    VdiSpec,
    WriteCacheMode,
)

Loc = tuple[str | int, ...]
AddProblem = Callable[[Loc, str, str], None]

# RAID level -> (smallest group, even count needed, how to say it)
_RAID_MIN: dict[int, tuple[int, bool, str]] = {
    1: (2, True, "an even number of drives"),
    10: (4, True, "an even number of drives, at least 4"),
    5: (3, False, "at least 3 drives"),
    6: (4, False, "at least 4 drives"),
    50: (6, False, "at least 6 drives (two RAID 5 groups)"),
    60: (8, False, "at least 8 drives (two RAID 6 groups)"),
}
# Controller names as each kind's management API reports them.
_CONTROLLER_NAMES: dict[str, tuple[str, ...]] = {
    "unity": ("spa", "spb"),
    "powerstore": ("node_a", "node_b"),
    "sc": ("ctrl_a", "ctrl_b"),
    "equallogic": ("cm0", "cm1"),
}
_DRIVE_ORDER = {DriveClass.SSD: 0, DriveClass.SAS_15K: 1, DriveClass.SAS_10K: 2, DriveClass.NL: 3}
# URL schemes each storage kind's management endpoint may use (EqualLogic PS has no REST: SNMP).
STORAGE_URL_SCHEMES: dict[str, tuple[str, ...]] = {"equallogic": ("snmp", "https", "http")}


def _suggest(name: str, known: Iterable[str], otherwise: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}?" if close else otherwise


def _declared_in(section: str, known: Iterable[str]) -> str:
    names = list(known)
    shown = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
    return f"declare it under {section}" + (f", or use one of: {shown}" if names else "")


@dataclass
class VdiResolver:
    spec: InventorySpec
    add: AddProblem
    hosts: dict[str, EsxiHost] = field(default_factory=dict)
    pools_hosts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pools_desktops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    placement: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    datastores: dict[str, Datastore] = field(default_factory=dict)
    _ds_locs: dict[str, Loc] = field(default_factory=dict)

    @property
    def vdi(self) -> VdiSpec:
        assert self.spec.vdi is not None
        return self.spec.vdi

    def _names(self, text: str, loc: Loc) -> list[str]:
        try:
            return expand_names(text)
        except RangeError as exc:
            self.add(loc, str(exc), exc.fix)
            return []

    def _ips(self, first: str | None, count: int, loc: Loc) -> list[str | None]:
        """A range's addresses (one each, counted up from ``first``), or none when not given or bad."""
        if first and count:
            try:
                return list(expand_ips(first, count))
            except RangeError as exc:
                self.add((*loc, "ip"), str(exc), exc.fix)
        return [None] * count

    def _taken(self, name: str, taken: Container[str], loc: Loc, what: str) -> bool:
        """Whether ``name`` was declared before (and say so)."""
        if name in taken:
            self.add((*loc, "name"), f"duplicate {what} name {name!r}", f"give each {what} its own name")
            return True
        return False

    def _names_in(self, entries: tuple[str, ...], loc: Loc, known: dict[str, object], what: str) -> list[str]:
        """Names or ranges that must all be in ``known``; unknown ones are reported, known kept."""
        out: list[str] = []
        for j, entry in enumerate(entries):
            names = self._names(entry, (*loc, j))
            unknown = [n for n in names if n not in known]
            if unknown:
                more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
                self.add(
                    (*loc, j),
                    f"unknown {what} {unknown[0]!r}{more}",
                    _suggest(unknown[0], known, f"declare it under vdi.{what}s"),
                )
            out.extend(n for n in names if n in known)
        return list(dict.fromkeys(out))

    # --- step 1: hosts, datastores, desktops (machines) -----------------------------------------
    def desktops(self) -> list[tuple[Machine, Loc]]:
        """Every desktop as a VM machine (with vCenter and host), and the spec entry declaring it."""
        self._hosts()
        self._datastores()
        out: list[tuple[Machine, Loc]] = []
        vcenter_of = {h.cluster: h.vcenter for h in self.hosts.values()}
        for i, ps in enumerate(self.vdi.pools):
            loc: Loc = ("vdi", "pools", i)
            names = self._names(ps.desktops, (*loc, "desktops"))
            cluster_hosts = [h.name for h in self.hosts.values() if h.cluster == ps.cluster]
            if ps.cluster not in vcenter_of:
                clusters = [c.name for c in self.vdi.clusters]
                self.add(
                    (*loc, "cluster"),
                    f"unknown cluster {ps.cluster!r}",
                    _suggest(ps.cluster, clusters, _declared_in("vdi.clusters", clusters)),
                )
            hosts = cluster_hosts
            if ps.hosts:
                in_cluster: dict[str, object] = dict.fromkeys(cluster_hosts)
                hosts = self._names_in(ps.hosts, (*loc, "hosts"), in_cluster, "host")
            stores = self._names_in(ps.datastores, (*loc, "datastores"), dict(self.datastores), "datastore")
            for j, ds in enumerate(stores):
                mounted = self.datastores[ds].cluster
                if mounted is not None and mounted != ps.cluster:
                    self.add(
                        (*loc, "datastores"),
                        f"datastore {ds!r} is mounted by cluster {mounted!r}, not {ps.cluster!r}",
                        "place the pool on datastores its cluster mounts",
                    )
                    stores = stores[:j]
                    break
            ips = self._ips(ps.ip, len(names), loc)
            self.pools_desktops[ps.name] = tuple(names)
            self.pools_hosts[ps.name] = tuple(hosts)
            if not hosts or not stores:
                continue  # reported above; no placement without a host and a datastore
            vcenter = vcenter_of.get(ps.cluster)
            tags = tuple(dict.fromkeys(("vdi", ps.name, *ps.tags)))
            for k, (name, ip) in enumerate(zip(names, ips, strict=True)):
                host, ds = hosts[k % len(hosts)], stores[k % len(stores)]
                self.placement[name] = (ps.name, host, ds)
                m = Machine(
                    name=name, kind=MachineKind.VM, os=ps.os, ip=ip, vcenter=vcenter, vm_host=host, tags=tags
                )
                out.append((m, (*loc, "desktops")))
        return out

    def _hosts(self) -> None:
        vcenters = {vc.name for vc in self.spec.vcenters}
        seen_clusters: set[str] = set()
        for i, cs in enumerate(self.vdi.clusters):
            loc: Loc = ("vdi", "clusters", i)
            self._taken(cs.name, seen_clusters, loc, "cluster")
            seen_clusters.add(cs.name)
            if cs.vcenter not in vcenters:
                self.add(
                    (*loc, "vcenter"),
                    f"unknown vCenter {cs.vcenter!r}",
                    _suggest(cs.vcenter, vcenters, _declared_in("vcenters:", vcenters)),
                )
            for j, hs in enumerate(cs.hosts):
                hloc: Loc = (*loc, "hosts", j)
                names = self._names(hs.name, (*hloc, "name"))
                for name, ip in zip(names, self._ips(hs.ip, len(names), hloc), strict=True):
                    if self._taken(name, self.hosts, hloc, "host"):
                        continue
                    self.hosts[name] = EsxiHost(
                        name=name,
                        vcenter=cs.vcenter,
                        datacenter=cs.datacenter,
                        cluster=cs.name,
                        model=hs.model,
                        cpu_model=hs.cpu_model,
                        sockets=hs.sockets,
                        cores=hs.cores,
                        ghz=hs.ghz,
                        ram_gb=hs.ram_gb,
                        nics=hs.nics,
                        ip=ip,
                    )

    def _datastores(self) -> None:
        arrays = {a.array for a in self.vdi.arrays}
        clusters = {c.name for c in self.vdi.clusters}
        for i, ds in enumerate(self.vdi.datastores):
            loc: Loc = ("vdi", "datastores", i)
            names = self._names(ds.name, (*loc, "name"))
            if ds.array not in arrays:
                self.add(
                    (*loc, "array"),
                    f"array {ds.array!r} has no hardware under vdi.arrays",
                    _suggest(ds.array, arrays, "describe its controllers and tiers under vdi.arrays"),
                )
            if ds.volume and len(names) > 1:
                self.add(
                    (*loc, "volume"),
                    "a range of datastores cannot share one volume",
                    "drop volume: (each datastore is the volume of its own name)",
                )
            if ds.cluster is not None and ds.cluster not in clusters:
                self.add(
                    (*loc, "cluster"),
                    f"unknown cluster {ds.cluster!r}",
                    _suggest(ds.cluster, clusters, _declared_in("vdi.clusters", clusters)),
                )
            for name in names:
                if self._taken(name, self.datastores, loc, "datastore"):
                    continue
                self.datastores[name] = Datastore(
                    name=name,
                    array=ds.array,
                    volume=ds.volume or name,
                    capacity_gb=ds.capacity_gb,
                    cluster=ds.cluster,
                )
                self._ds_locs[name] = loc

    # --- step 2: arrays, PVS, pools, launchers ----------------------------------------------------
    def finish(self, storage: dict[str, StorageArray], taken_names: Iterable[str]) -> VdiLab:
        arrays = self._arrays(storage)
        pvs = self._pvs_servers()
        pools = self._pools(pvs)
        launchers = self._launchers(pools)
        self._capacity(pools)
        vdi_checks.check_datastore_sizes(self.vdi, arrays, self.add)
        vdi_checks.check_launchers(self.vdi, self.add)
        taken = set(taken_names)
        for i, ps in enumerate(self.vdi.pools):
            if ps.name in taken:
                self.add(
                    ("vdi", "pools", i, "name"),
                    f"pool {ps.name!r} has the name of a machine or group",
                    "rename the pool (its desktops form a group of that name)",
                )
        return VdiLab(
            note=self.vdi.note,
            hosts=self.hosts,
            arrays=arrays,
            datastores=self.datastores,
            pvs_servers=pvs,
            pools=pools,
            launchers=launchers,
            twin=self.vdi.twin,
            placement=self.placement,
        )

    def _arrays(self, storage: dict[str, StorageArray]) -> dict[str, ArrayHardware]:
        out: dict[str, ArrayHardware] = {}
        for i, a in enumerate(self.vdi.arrays):
            loc: Loc = ("vdi", "arrays", i)
            if a.array not in storage:
                self.add(
                    (*loc, "array"),
                    f"unknown storage array {a.array!r}",
                    _suggest(a.array, storage, _declared_in("storage:", storage)),
                )
                continue
            if a.array in out:
                self.add((*loc, "array"), f"array {a.array!r} is described twice", "keep one entry per array")
                continue
            kind = storage[a.array].kind.value
            tiers: list[Tier] = []
            for j, t in enumerate(a.tiers):
                tloc: Loc = (*loc, "tiers", j)
                least, even, rule = _RAID_MIN[t.raid]
                width = t.raid_width or self.vdi.twin.raid_default_width[str(t.raid)]
                if t.count < least or (even and t.count % 2):
                    self.add(
                        (*tloc, "count"),
                        f"RAID {t.raid} cannot be formed from {t.count} drive(s)",
                        f"RAID {t.raid} needs {rule}",
                    )
                elif width > t.count:
                    self.add(
                        (*tloc, "raid_width"),
                        f"RAID groups of {width} drives need more than the tier's {t.count}",
                        f"give raid_width: {t.count} or fewer",
                    )
                if t.count >= least and not (even and t.count % 2):
                    vdi_checks.check_tier(t, width, tloc, self.add)
                if any(x.drive is t.drive for x in tiers):
                    self.add(
                        (*tloc, "drive"), f"two tiers of {t.drive.value} drives", "merge them into one tier"
                    )
                    continue
                tiers.append(
                    Tier(
                        name=t.drive.value,
                        drive=t.drive,
                        count=t.count,
                        capacity_gb=t.capacity_gb,
                        raid=t.raid,
                        raid_width=width,
                        spares=t.spares,
                        service_time_ms=t.service_time_ms,
                    )
                )
            tiers.sort(key=lambda x: _DRIVE_ORDER[x.drive])
            mode = a.controller_mode or (
                ControllerMode.ACTIVE_STANDBY if kind == "equallogic" else ControllerMode.ACTIVE_ACTIVE
            )
            base = _CONTROLLER_NAMES.get(kind, ("a", "b"))
            vdi_checks.check_controllers(a.controllers, mode, kind, base, loc, self.add)
            names = tuple(base[k] for k in range(min(a.controllers, len(base))))
            out[a.array] = ArrayHardware(
                name=a.array,
                kind=kind,
                model=a.model,
                controllers=names,
                controller_mode=mode,
                cache_gb=a.cache_gb,
                write_cache_mb=a.write_cache_mb,
                controller_max_iops=a.controller_max_iops,
                ports=a.ports,
                tiers=tuple(tiers),
            )
        return out

    def _pvs_servers(self) -> dict[str, PvsServer]:
        out: dict[str, PvsServer] = {}
        for i, s in enumerate(self.vdi.pvs_servers):
            loc: Loc = ("vdi", "pvs_servers", i)
            for key in ("vdisk_datastore", "write_cache_datastore"):
                ds = getattr(s, key)
                if ds is not None and ds not in self.datastores:
                    self.add(
                        (*loc, key),
                        f"unknown datastore {ds!r}",
                        _suggest(ds, self.datastores, _declared_in("vdi.datastores", self.datastores)),
                    )
            vd, wc = (
                self.datastores.get(s.vdisk_datastore),
                self.datastores.get(s.write_cache_datastore or ""),
            )
            if vd is not None and wc is not None and vd.array != wc.array:
                self.add(
                    (*loc, "write_cache_datastore"),
                    f"the write cache ({wc.array}) and the vDisk ({vd.array}) are on different arrays",
                    "keep a PVS server's stores on one array",
                )
            for name in self._names(s.name, (*loc, "name")):
                if self._taken(name, out, loc, "PVS server"):
                    continue
                out[name] = PvsServer(
                    name=name,
                    vcpus=s.vcpus,
                    ghz=s.ghz,
                    ram_gb=s.ram_gb,
                    nics=s.nics,
                    vdisk_datastore=s.vdisk_datastore,
                    write_cache_datastore=s.write_cache_datastore,
                )
        return out

    def _pools(self, pvs: dict[str, PvsServer]) -> dict[str, DesktopPool]:
        out: dict[str, DesktopPool] = {}
        workloads = self.vdi.twin.workloads
        for i, ps in enumerate(self.vdi.pools):
            loc: Loc = ("vdi", "pools", i)
            if ps.name in out:
                self.add((*loc, "name"), f"duplicate pool name {ps.name!r}", "give each pool its own name")
                continue
            if ps.workload not in workloads:
                self.add(
                    (*loc, "workload"),
                    f"unknown workload {ps.workload!r}",
                    _suggest(
                        ps.workload,
                        workloads,
                        f"use one of: {', '.join(workloads)}, or define it under vdi.twin.workloads",
                    ),
                )
            prov = self._provisioning(ps.provisioning, (*loc, "provisioning"), pvs)
            out[ps.name] = DesktopPool(
                name=ps.name,
                desktops=self.pools_desktops.get(ps.name, ()),
                cluster=ps.cluster,
                hosts=self.pools_hosts.get(ps.name, ()),
                datastores=tuple(
                    dict.fromkeys(
                        self.placement[n][2]
                        for n in self.pools_desktops.get(ps.name, ())
                        if n in self.placement
                    )
                ),
                vcpus=ps.vcpus,
                ram_gb=ps.ram_gb,
                os=ps.os,
                workload=ps.workload,
                provisioning=prov,
                tags=ps.tags,
            )
        return out

    def _provisioning(self, p: ProvisioningSpec, loc: Loc, pvs: dict[str, PvsServer]) -> Provisioning:
        servers: list[str] = []
        if p.kind is ProvisioningKind.PVS:
            if not p.pvs_servers:
                self.add(
                    (*loc, "pvs_servers"),
                    "PVS provisioning names no PVS server",
                    "list pvs_servers: [pvs-01, ...]",
                )
            servers = self._names_in(p.pvs_servers, (*loc, "pvs_servers"), dict(pvs), "pvs_server")
            if p.write_cache is None:
                self.add(
                    (*loc, "write_cache"),
                    "PVS provisioning needs a write-cache mode",
                    "write_cache: device_disk, device_ram_overflow or server",
                )
            if p.write_cache is WriteCacheMode.DEVICE_RAM_OVERFLOW and p.ram_cache_mb is None:
                self.add(
                    (*loc, "ram_cache_mb"),
                    "cache in device RAM with overflow needs its RAM size",
                    "add ram_cache_mb: 256 (or 512)",
                )
            if p.write_cache is WriteCacheMode.SERVER:
                for s in servers:
                    if pvs[s].write_cache_datastore is None:
                        self.add(
                            (*loc, "write_cache"),
                            f"write cache on the server, but PVS server {s!r} has no write_cache_datastore",
                            "give the PVS servers a write_cache_datastore",
                        )
                        break
        else:
            for key in ("pvs_servers", "write_cache", "ram_cache_mb"):
                if getattr(p, key):
                    self.add(
                        (*loc, key),
                        f"{key} applies to PVS provisioning only, not {p.kind.value}",
                        f"remove {key}:",
                    )
        if p.replica_datastore is not None:
            if p.kind is not ProvisioningKind.LINKED_CLONE:
                self.add(
                    (*loc, "replica_datastore"),
                    f"a replica belongs to linked clones, not {p.kind.value}",
                    "remove replica_datastore:",
                )
            elif p.replica_datastore not in self.datastores:
                self.add(
                    (*loc, "replica_datastore"),
                    f"unknown datastore {p.replica_datastore!r}",
                    _suggest(
                        p.replica_datastore, self.datastores, _declared_in("vdi.datastores", self.datastores)
                    ),
                )
        return Provisioning(
            kind=p.kind,
            image_gb=p.image_gb,
            pvs_servers=tuple(servers),
            write_cache=p.write_cache,
            ram_cache_mb=p.ram_cache_mb,
            write_cache_disk_gb=p.write_cache_disk_gb,
            replica_datastore=p.replica_datastore,
            delta_gb=p.delta_gb,
        )

    def _capacity(self, pools: dict[str, DesktopPool]) -> None:
        """Each datastore must hold what its desktops allocate (plus a replica or base image copy)."""
        need: dict[str, float] = dict.fromkeys(self.datastores, 0.0)
        images: dict[str, float] = dict.fromkeys(self.datastores, 0.0)
        for pool_name, _host, ds_name in self.placement.values():
            need[ds_name] += pools[pool_name].provisioning.disk_gb() if pool_name in pools else 0.0
        for pool in pools.values():
            prov = pool.provisioning
            if prov.kind is ProvisioningKind.MCS or (
                prov.kind is ProvisioningKind.LINKED_CLONE and prov.replica_datastore is None
            ):
                for ds_name in pool.datastores:
                    images[ds_name] = max(images[ds_name], prov.image_gb)  # a copy of the image on each
            elif prov.replica_datastore is not None and prov.replica_datastore in images:
                images[prov.replica_datastore] += prov.image_gb
        for name, ds in self.datastores.items():
            total = need[name] + images[name]
            if total > ds.capacity_gb:
                self.add(
                    (*self._ds_locs[name], "capacity_gb"),
                    f"datastore {name!r} must hold {total:.0f} GB for its desktops but has {ds.capacity_gb:g} GB",
                    "add datastores to the pool, or capacity",
                )

    def _launchers(self, pools: dict[str, DesktopPool]) -> tuple[Launcher, ...]:
        out: list[Launcher] = []
        seen: set[str] = set()
        first_pool = next(iter(pools), "")
        for i, ls in enumerate(self.vdi.launchers):
            loc: Loc = ("vdi", "launchers", i)
            pool = ls.pool or first_pool
            if pool not in pools:
                self.add(
                    (*loc, "pool"),
                    f"unknown pool {pool!r}",
                    _suggest(pool, pools, _declared_in("vdi.pools", pools)),
                )
            names = self._names(ls.name, (*loc, "name"))
            for name, ip in zip(names, self._ips(ls.ip, len(names), loc), strict=True):
                if self._taken(name, seen, loc, "launcher"):
                    continue
                seen.add(name)
                out.append(
                    Launcher(
                        name=name,
                        sessions=ls.sessions,
                        pool=pool,
                        protocol=ls.protocol,
                        ip=ip,
                        kind=ls.kind,
                        access=ls.access,
                        local=ls.local,
                    )
                )
        return tuple(out)


# --- what the rest of the resolved lab learns from the vdi section -------------------------------


def vcenters_with_clusters(vcenters: dict[str, VCenter], vdi: VdiLab, add: AddProblem) -> dict[str, VCenter]:
    """Each vCenter's datacenters gain the VDI clusters it manages (host count and hardware), so the
    simulated vCenter builds them. A cluster declared both ways is reported once."""
    by_vc: dict[str, dict[str, list[EsxiHost]]] = {}
    for h in vdi.hosts.values():
        by_vc.setdefault(h.vcenter, {}).setdefault(f"{h.datacenter}/{h.cluster}", []).append(h)
    out = dict(vcenters)
    for vc_name, clusters in by_vc.items():
        vc = out.get(vc_name)
        if vc is None:
            continue  # reported with the cluster
        dcs = {dc.name: list(dc.clusters) for dc in vc.datacenters}
        for key, hosts in clusters.items():
            dc_name, cl_name = key.split("/", 1)
            if any(c.name == cl_name for c in dcs.get(dc_name, [])):
                add(
                    ("vdi", "clusters"),
                    f"cluster {cl_name!r} is also declared under vcenters {vc_name!r} datacenters",
                    "declare it once, under vdi.clusters",
                )
                continue
            h = hosts[0]
            dcs.setdefault(dc_name, []).append(
                ClusterSpec(
                    name=cl_name,
                    hosts=len(hosts),
                    host_cpu_cores=h.total_cores,
                    host_cpu_ghz=h.ghz,
                    host_ram_gb=h.ram_gb,
                )
            )
        out[vc_name] = vc.model_copy(
            update={"datacenters": tuple(DatacenterSpec(name=n, clusters=tuple(c)) for n, c in dcs.items())}
        )
    return out


def storage_with_volumes(storage: dict[str, StorageArray], vdi: VdiLab) -> dict[str, StorageArray]:
    """Each array's LUN list gains the volumes its datastores live on (the array simulators serve them)."""
    out = dict(storage)
    for ds in vdi.datastores.values():
        arr = out.get(ds.array)
        if arr is not None and ds.volume not in arr.luns:
            out[ds.array] = arr.model_copy(update={"luns": (*arr.luns, ds.volume)})
    return out


def pool_groups(vdi: VdiLab) -> dict[str, Group]:
    """One group per pool, named after it: ``labctl power on task-pool``."""
    return {
        p.name: Group(name=p.name, members=p.desktops, description=f"desktops of pool {p.name}")
        for p in vdi.pools.values()
    }
