"""The simulated vCenter's inventory, derived from the lab: datacenters, clusters, ESXi hosts, VMs.

Names follow the inventory: datacenters and clusters as declared, VMs under their inventory names.
The inventory gives a host *count* per cluster, so hosts are named ``esx-<cluster>-NN``
(lower case, from 01), e.g. ``esx-vdi-01``; a VM's ``host:`` must name one of them. VMs without a
host are placed round-robin over every host of their vCenter. Every VM starts powered off.

Task latency is declared in *lab* seconds and converted with the lab's time scale, so a power-on
takes as long in lab time on a 60x simulated lab as on a real one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from labctl.errors import BadInputError
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import ClusterSpec, DatacenterSpec, Lab, Machine, VCenter
from labctl.inventory.ranges import expand_names

# Latency of vCenter tasks, lab seconds (mean), keyed by the simulator's task name (TaskInfo.name
# without "_Task"). vSphere 6.x/7.x power tasks on an idle vCenter complete in about 1-3 s.
TASK_LATENCY_LAB_S: dict[str, float] = {
    "PowerOn": 2.0,
    "PowerOff": 1.5,
    "Reset": 0.0,  # a reset runs a PowerOff and a PowerOn subtask, each with its own latency
    "Suspend": 3.0,
    "ShutdownGuest": 0.5,
    "PowerOnMultiVM": 0.5,  # the batched call itself; each VM's PowerOn subtask has its own latency
}
# Spread of every task's latency: coefficient of variation (stddev / mean) of a normal draw, as
# govmomi's DelayConfig.DelayJitter applies it.
TASK_JITTER_CV = 0.3

DEFAULT_VM_CPUS = 2
DEFAULT_VM_MEMORY_MB = 2048
DEFAULT_GUEST_ID = "windows9_64Guest"  # Windows 10 64-bit, the VDI desktops of the 2016-2019 papers


@dataclass(frozen=True)
class VmPlacement:
    name: str
    datacenter: str
    cluster: str
    host: str
    guest_ip: str


@dataclass(frozen=True)
class Topology:
    vcenter: VCenter
    host: str
    port: int
    datacenters: tuple[DatacenterSpec, ...]
    hosts: dict[str, tuple[str, str]]  # host name -> (datacenter, cluster)
    vms: tuple[VmPlacement, ...]


def vcenter_address(vc: VCenter) -> tuple[str, int]:
    u = urlparse(vc.url)
    port = u.port or (443 if u.scheme == "https" else 80)
    return u.hostname or "127.0.0.1", port


def host_names(cluster: ClusterSpec) -> list[str]:
    return [f"esx-{cluster.name.lower()}-{i:02d}" for i in range(1, cluster.hosts + 1)]


def _generated_ip(index: int) -> str:
    return f"10.250.{index // 250}.{index % 250 + 1}"


def topology(lab: Lab, vc: VCenter) -> Topology:
    dcs = vc.datacenters or (DatacenterSpec(name="DC0", clusters=(ClusterSpec(name="Cluster0"),)),)
    if not any(dc.clusters for dc in dcs):
        dcs = (*dcs[:-1], dcs[-1].model_copy(update={"clusters": (ClusterSpec(name="Cluster0"),)}))
    hosts: dict[str, tuple[str, str]] = {}
    for dc in dcs:
        for cl in dc.clusters:
            for h in host_names(cl):
                hosts[h] = (dc.name, cl.name)
    order = list(hosts)
    vms: list[VmPlacement] = []
    machines: list[Machine] = [m for m in lab.vms if m.vcenter == vc.name]
    for i, m in enumerate(machines):
        if m.vm_host:
            if m.vm_host not in hosts:
                raise BadInputError(
                    f"VM {m.name}: host {m.vm_host!r} is not in vCenter {vc.name}'s topology "
                    f"(the simulated hosts are: {', '.join(order)}; hosts are named esx-<cluster>-NN)"
                )
            host = m.vm_host
        else:
            host = order[i % len(order)]
        dc_name, cl_name = hosts[host]
        vms.append(VmPlacement(m.name, dc_name, cl_name, host, m.ip or _generated_ip(i)))
    addr, port = vcenter_address(vc)
    return Topology(vc, addr, port, tuple(dcs), hosts, tuple(vms))


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
                        "hosts": host_names(cl),
                        "cpu_cores": cl.host_cpu_cores,
                        "cpu_mhz": round(cl.host_cpu_ghz * 1000),
                        "ram_mb": round(cl.host_ram_gb * 1024),
                    }
                    for cl in dc.clusters
                ],
            }
            for dc in topo.datacenters
        ],
        "vms": [
            {
                "name": v.name,
                "datacenter": v.datacenter,
                "host": v.host,
                "cpus": DEFAULT_VM_CPUS,
                "memory_mb": DEFAULT_VM_MEMORY_MB,
                "guest_id": DEFAULT_GUEST_ID,
            }
            for v in topo.vms
        ],
        "task_delay_ms": {k: round(v * 1000 / time_scale) for k, v in TASK_LATENCY_LAB_S.items()},
        "task_jitter": TASK_JITTER_CV,
        "faults": fault_entries(topo, faults, time_scale),
        "faults_file": faults_file,
        "seed": seed,
    }
