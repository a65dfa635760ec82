"""The simulated vCenter's inventory, derived from the lab: datacenters, clusters, ESXi hosts,
datastores and VMs, placed exactly as the lab twin places them.

The twin's view of the lab (:func:`labctl.sim.twin.vdi.implicit.vdi_of`) decides every desktop's
host and datastore, every host's hardware and every datastore's size, so the simulated vCenter and
the twin agree on where each counter belongs. Clusters declared under ``vcenters:`` without a
``vdi:`` section get hosts named ``esx-<cluster>-NN`` (lower case, from 01), e.g. ``esx-vdi-01``;
a VM's ``host:`` must name one of its vCenter's hosts. Every VM starts powered off.

Task latency and the pace of power operations are declared in *lab* seconds and converted with
the lab's time scale, so a power-on storm takes as long in lab time on a 60x simulated lab as on a
real one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from labctl.errors import BadInputError
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import ClusterSpec, DatacenterSpec, Lab, VCenter
from labctl.inventory.ranges import expand_names
from labctl.inventory.vdi import DesktopPool, ProvisioningKind, VdiLab
from labctl.sim.twin.vdi.implicit import vdi_of

# Latency of vCenter tasks, lab seconds (mean), keyed by the simulator's task name (TaskInfo.name
# without "_Task"). vSphere 6.x/7.x power tasks on an idle vCenter complete in about 1-3 s.
TASK_LATENCY_LAB_S: dict[str, float] = {
    "PowerOn": 2.0,
    "PowerOff": 1.5,
    "Reset": 2.0,  # one task: the VM stops and starts again
    "Suspend": 3.0,
    "PowerOnMultiVM": 0.5,  # the batched call itself; each VM's PowerOn subtask has its own latency
    "EnterMaintenanceMode": 1.0,  # after the twin has moved the host's desktops
    "ExitMaintenanceMode": 1.0,
}
# Spread of every task's latency: coefficient of variation (stddev / mean) of a normal draw, as
# govmomi's DelayConfig.DelayJitter applies it.
TASK_JITTER_CV = 0.3
# How long EnterMaintenanceMode waits for the twin to evacuate the host, lab seconds (vMotion of
# a host's desktops takes minutes; the task fails with Timedout after this).
MAINTENANCE_TIMEOUT_LAB_S = 1800.0
MIN_WALL_TIMEOUT_S = 5.0  # the twin's side answers in wall time, whatever the scale
# Real-time samples vCenter keeps: one hour of 20 s samples.
PERF_SAMPLES = 180

DEFAULT_VM_CPUS = 2
DEFAULT_VM_MEMORY_MB = 2048
DEFAULT_GUEST_ID = "windows9_64Guest"  # Windows 10 64-bit, the VDI desktops of the 2016-2019 papers
DEFAULT_DISK_GB = 40


@dataclass(frozen=True)
class HostPlacement:
    name: str
    datacenter: str
    cluster: str
    sockets: int
    cores: int  # all sockets
    mhz_per_core: int
    ram_mb: int


@dataclass(frozen=True)
class DatastorePlacement:
    name: str
    datacenter: str
    uuid: str  # the VMFS volume id: summary.url ends in it, its datastore.* counters are keyed by it
    capacity_bytes: int
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class VmPlacement:
    name: str
    datacenter: str
    cluster: str
    host: str
    guest_ip: str
    datastore: str = ""
    vcpus: int = DEFAULT_VM_CPUS
    memory_mb: int = DEFAULT_VM_MEMORY_MB
    disk_gb: int = DEFAULT_DISK_GB
    guest_id: str = DEFAULT_GUEST_ID


@dataclass(frozen=True)
class Topology:
    vcenter: VCenter
    host: str
    port: int
    datacenters: tuple[DatacenterSpec, ...]
    hosts: dict[str, tuple[str, str]]  # host name -> (datacenter, cluster)
    vms: tuple[VmPlacement, ...]
    host_specs: tuple[HostPlacement, ...] = ()
    datastores: tuple[DatastorePlacement, ...] = ()
    power_ops_per_lab_s: float = 0.0  # 0: power tasks are not paced


def vcenter_address(vc: VCenter) -> tuple[str, int]:
    u = urlparse(vc.url)
    port = u.port or (443 if u.scheme == "https" else 80)
    return u.hostname or "127.0.0.1", port


def host_names(cluster: ClusterSpec) -> list[str]:
    return [f"esx-{cluster.name.lower()}-{i:02d}" for i in range(1, cluster.hosts + 1)]


def _generated_ip(index: int) -> str:
    return f"10.250.{index // 250}.{index % 250 + 1}"


def volume_uuid(vcenter: str, datastore: str) -> str:
    """A VMFS-style volume id (8-8-4-12 hex), stable for a vCenter and datastore name."""
    h = hashlib.sha1(f"{vcenter}/{datastore}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:16]}-{h[16:20]}-{h[20:32]}"


def guest_id(os_name: str) -> str:
    """The vSphere guest id of a pool's OS (Windows 10 desktops unless it says otherwise)."""
    s = os_name.lower()
    if "windows 7" in s:
        return "windows7_64Guest" if "64" in s or "x64" in s else "windows7Guest"
    if "server" in s:
        return "windows9Server64Guest"
    return DEFAULT_GUEST_ID


def _disk_gb(pool: DesktopPool) -> int:
    prov = pool.provisioning
    if prov.kind is ProvisioningKind.PVS:  # the write-cache disk (none when the cache is on the server)
        return max(1, round(prov.write_cache_disk_gb))
    return max(1, round(prov.image_gb))  # a delta or differencing disk has its base disk's size


def _datacenters(vc: VCenter) -> tuple[DatacenterSpec, ...]:
    dcs = vc.datacenters or (DatacenterSpec(name="DC0", clusters=(ClusterSpec(name="Cluster0"),)),)
    if not any(dc.clusters for dc in dcs):
        dcs = (*dcs[:-1], dcs[-1].model_copy(update={"clusters": (ClusterSpec(name="Cluster0"),)}))
    return dcs


def _hosts(vc: VCenter, dcs: tuple[DatacenterSpec, ...], vdi: VdiLab | None) -> list[HostPlacement]:
    """The vCenter's hosts: a VDI cluster's as the inventory names them, others esx-<cluster>-NN."""
    vdi_hosts: dict[tuple[str, str], list[HostPlacement]] = {}
    for h in (vdi.hosts if vdi else {}).values():
        if h.vcenter == vc.name:
            vdi_hosts.setdefault((h.datacenter, h.cluster), []).append(
                HostPlacement(
                    h.name,
                    h.datacenter,
                    h.cluster,
                    h.sockets,
                    h.total_cores,
                    round(h.ghz * 1000),
                    round(h.ram_gb * 1024),
                )
            )
    out: list[HostPlacement] = []
    for dc in dcs:
        for cl in dc.clusters:
            named = vdi_hosts.get((dc.name, cl.name))
            if named:
                out += named
                continue
            sockets = 2 if cl.host_cpu_cores > 8 else 1
            out += [
                HostPlacement(
                    n,
                    dc.name,
                    cl.name,
                    sockets,
                    cl.host_cpu_cores,
                    round(cl.host_cpu_ghz * 1000),
                    round(cl.host_ram_gb * 1024),
                )
                for n in host_names(cl)
            ]
    return out


def topology(lab: Lab, vc: VCenter) -> Topology:
    dcs = _datacenters(vc)
    vdi = vdi_of(lab)
    hosts = _hosts(vc, dcs, vdi)
    by_name = {h.name: h for h in hosts}
    order = [h.name for h in hosts]
    machines = [m for m in lab.vms if m.vcenter == vc.name]
    vms: list[VmPlacement] = []
    used: dict[str, set[str]] = {}  # datastore -> clusters whose VMs live on it
    for i, m in enumerate(machines):
        if m.vm_host and m.vm_host not in by_name:
            raise BadInputError(
                f"VM {m.name}: host {m.vm_host!r} is not in vCenter {vc.name}'s topology "
                f"(the simulated hosts are: {', '.join(order)}; hosts are named esx-<cluster>-NN)"
            )
        placed = vdi.placement.get(m.name) if vdi is not None else None
        host = m.vm_host or (placed[1] if placed and placed[1] in by_name else order[i % len(order)])
        h = by_name[host]
        if placed is None or vdi is None:
            vms.append(VmPlacement(m.name, h.datacenter, h.cluster, host, m.ip or _generated_ip(i)))
            continue
        pool = vdi.pools[placed[0]]
        vms.append(
            VmPlacement(
                m.name,
                h.datacenter,
                h.cluster,
                host,
                m.ip or _generated_ip(i),
                datastore=placed[2],
                vcpus=pool.vcpus,
                memory_mb=round(pool.ram_gb * 1024),
                disk_gb=_disk_gb(pool),
                guest_id=guest_id(pool.os),
            )
        )
        used.setdefault(placed[2], set()).add(h.cluster)
    stores = _datastores(vc, vdi, hosts, used)
    if any(not v.datastore for v in vms):  # a lab without arrays: one local datastore per datacenter
        for dc in {v.datacenter for v in vms if not v.datastore}:
            local = [h.name for h in hosts if h.datacenter == dc]
            stores.append(
                DatastorePlacement(
                    "LocalDS_0", dc, volume_uuid(vc.name, f"{dc}/LocalDS_0"), 2**41, tuple(local)
                )
            )
        vms = [v if v.datastore else replace(v, datastore="LocalDS_0") for v in vms]
    addr, port = vcenter_address(vc)
    rate = vdi.twin.vcenter_power_ops_per_s if vdi is not None else 0.0
    return Topology(
        vc,
        addr,
        port,
        tuple(dcs),
        {h.name: (h.datacenter, h.cluster) for h in hosts},
        tuple(vms),
        tuple(hosts),
        tuple(stores),
        rate,
    )


def _datastores(
    vc: VCenter, vdi: VdiLab | None, hosts: list[HostPlacement], used: dict[str, set[str]]
) -> list[DatastorePlacement]:
    """The datastores of this vCenter's VMs and clusters, each mounted on every host of the clusters
    that use it (desktops move within their cluster), in one datacenter."""
    if vdi is None:
        return []
    clusters = {h.cluster for h in hosts}
    out = []
    for ds in vdi.datastores.values():
        users = set(used.get(ds.name, ()))
        if ds.cluster in clusters:
            users.add(ds.cluster)
        if not users:
            continue
        mounted = [h for h in hosts if h.cluster in users]
        dc = mounted[0].datacenter
        out.append(
            DatastorePlacement(
                ds.name,
                dc,
                volume_uuid(vc.name, ds.name),
                round(ds.capacity_gb * 1024**3),
                tuple(h.name for h in mounted if h.datacenter == dc),
            )
        )
    return out


def _targets(f: FaultSpec) -> set[str]:
    return {n for t in f.targets for n in expand_names(t)}


def vm_faults(faults: list[FaultSpec] | tuple[FaultSpec, ...], topo: Topology) -> list[FaultSpec]:
    names = {v.name for v in topo.vms}
    out = []
    for f in faults:
        if f.kind is not FaultKind.VCENTER_TASK_FAILS:
            continue
        targets = _targets(f)
        if targets & names or topo.vcenter.name in targets:
            out.append(f)
    return out


def fault_entries(topo: Topology, faults: list[FaultSpec], time_scale: float) -> list[dict[str, Any]]:
    """The vcenter_task_fails faults of this vCenter as labctl-vcsim takes them (VM names, wall s)."""
    vm_names = [v.name for v in topo.vms]
    out = []
    for f in vm_faults(faults, topo):
        targets = _targets(f)
        vms = vm_names if topo.vcenter.name in targets else [n for n in vm_names if n in targets]
        out.append({"vms": vms, "after_wall_s": f.after_s / time_scale, "probability": f.probability})
    return out


def simulator_config(
    topo: Topology,
    *,
    username: str,
    password: str,
    time_scale: float,
    faults: list[FaultSpec],
    seed: int,
    ready_file: str,
    datastore_dir: str,
    tls_cert: str = "",
    tls_key: str = "",
    faults_file: str = "",
) -> dict[str, Any]:
    """The JSON configuration of the labctl-vcsim program (see vcsimlab/main.go)."""
    specs = {h.name: h for h in topo.host_specs}
    return {
        "listen": f"{topo.host}:{topo.port}",
        "username": username,
        "password": password,
        "tls_cert": tls_cert,
        "tls_key": tls_key,
        "ready_file": ready_file,
        "datastore_dir": datastore_dir,
        "datacenters": [
            {
                "name": dc.name,
                "clusters": [
                    {
                        "name": cl.name,
                        "hosts": [
                            {
                                "name": h.name,
                                "sockets": h.sockets,
                                "cores": h.cores,
                                "cpu_mhz": h.mhz_per_core,
                                "ram_mb": h.ram_mb,
                            }
                            for h in topo.host_specs
                            if (h.datacenter, h.cluster) == (dc.name, cl.name)
                        ],
                    }
                    for cl in dc.clusters
                ],
            }
            for dc in topo.datacenters
        ],
        "datastores": [
            {
                "name": d.name,
                "datacenter": d.datacenter,
                "uuid": d.uuid,
                "capacity_bytes": d.capacity_bytes,
                "hosts": [h for h in d.hosts if h in specs],
            }
            for d in topo.datastores
        ],
        "vms": [
            {
                "name": v.name,
                "datacenter": v.datacenter,
                "host": v.host,
                "datastore": v.datastore,
                "cpus": v.vcpus,
                "memory_mb": v.memory_mb,
                "disk_gb": v.disk_gb,
                "guest_id": v.guest_id,
            }
            for v in topo.vms
        ],
        "task_delay_ms": {k: round(v * 1000 / time_scale) for k, v in TASK_LATENCY_LAB_S.items()},
        "task_jitter": TASK_JITTER_CV,
        "power_ops_per_wall_s": topo.power_ops_per_lab_s * time_scale,
        "maintenance_timeout_wall_s": max(MIN_WALL_TIMEOUT_S, MAINTENANCE_TIMEOUT_LAB_S / time_scale),
        "perf_samples": PERF_SAMPLES,
        "faults": fault_entries(topo, faults, time_scale),
        "faults_file": faults_file,
        "seed": seed,
    }
