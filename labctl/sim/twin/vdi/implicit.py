"""The VDI part of a lab whose inventory has VMs but no ``vdi:`` section (or VMs outside its pools).

The 2007 lab (`hardware/sim-2007.yaml`) has ten desktop VMs on a vCenter cluster and a Unity array
with one LUN; those VMs become one implicit pool of full-clone task workers on hosts named as the
simulated vCenter names them (``esx-<cluster>-NN``, VMs without a host placed round-robin, as
:mod:`labctl.sim.vcenter.topology` does), their disks spread over every LUN of every array. Arrays
without hardware in the inventory get a modest default per kind. Nothing here is written in a file:
it keeps the twin one model for every lab.
"""

from __future__ import annotations

from labctl.inventory.model import ClusterSpec, DatacenterSpec, Lab, Machine
from labctl.inventory.vdi import (
    ArrayHardware,
    ControllerMode,
    Datastore,
    DesktopPool,
    DriveClass,
    EsxiHost,
    NicSet,
    Provisioning,
    ProvisioningKind,
    Tier,
    VdiLab,
)
from labctl.inventory.vdi_params import VdiTwinParameters

IMPLICIT_POOL = "vms"
DEFAULT_DATASTORE_GB = 2048.0
_DEFAULT_VM_VCPUS = 2  # as the simulated vCenter creates VMs
_DEFAULT_VM_RAM_GB = 2.0
_LOCAL_ARRAY = "local-disks"


def default_array(name: str, kind: str) -> ArrayHardware:
    """Hardware for an array the inventory does not describe: two controllers, ten SSDs in RAID 5."""
    names = {"unity": ("spa", "spb"), "powerstore": ("node_a", "node_b"), "sc": ("ctrl_a", "ctrl_b")}
    return ArrayHardware(
        name=name,
        kind=kind,
        model="(not described in the inventory)",
        controllers=names.get(kind, ("cm0", "cm1")),
        controller_mode=ControllerMode.ACTIVE_STANDBY
        if kind == "equallogic"
        else ControllerMode.ACTIVE_ACTIVE,
        cache_gb=16.0,
        write_cache_mb=None,
        controller_max_iops=None,
        ports=NicSet(count=2, speed_gbps=10.0),
        tiers=(
            Tier(
                name="ssd",
                drive=DriveClass.SSD,
                count=10,
                capacity_gb=800.0,
                raid=5,
                raid_width=5,
                spares=1,
                service_time_ms=None,
            ),
        ),
    )


def _hosts_of(lab: Lab) -> dict[str, EsxiHost]:
    hosts: dict[str, EsxiHost] = {}
    for vc in lab.vcenters.values():
        dcs = vc.datacenters or (DatacenterSpec(name="DC0", clusters=(ClusterSpec(name="Cluster0"),)),)
        for dc in dcs:
            for cl in dc.clusters or (ClusterSpec(name="Cluster0"),):
                for i in range(1, cl.hosts + 1):
                    name = f"esx-{cl.name.lower()}-{i:02d}"
                    hosts.setdefault(
                        name,
                        EsxiHost(
                            name=name,
                            vcenter=vc.name,
                            datacenter=dc.name,
                            cluster=cl.name,
                            model="",
                            cpu_model="",
                            sockets=1,
                            cores=cl.host_cpu_cores,
                            ghz=cl.host_cpu_ghz,
                            ram_gb=cl.host_ram_gb,
                            nics=NicSet(count=2, speed_gbps=10.0),
                            ip=None,
                        ),
                    )
    return hosts


def _place(vms: list[Machine], hosts: dict[str, EsxiHost]) -> list[str]:
    """Each VM's host: its own ``host:`` if known, else round-robin over its vCenter's hosts."""
    out = []
    by_vc: dict[str | None, list[str]] = {}
    for h in hosts.values():
        by_vc.setdefault(h.vcenter, []).append(h.name)
    for i, m in enumerate(vms):
        if m.vm_host in hosts:
            out.append(str(m.vm_host))
            continue
        order = by_vc.get(m.vcenter) or list(hosts)
        out.append(order[i % len(order)])
    return out


def vdi_of(lab: Lab) -> VdiLab | None:
    """The lab's VDI part, with every VM in a pool; None when the lab has no VMs at all."""
    vdi = lab.vdi
    pooled = set(vdi.placement) if vdi is not None else set()
    loose = [m for m in lab.vms if m.name not in pooled]
    if not loose:
        return vdi
    hosts = dict(vdi.hosts) if vdi is not None else {}
    arrays = dict(vdi.arrays) if vdi is not None else {}
    datastores = dict(vdi.datastores) if vdi is not None else {}
    if not hosts:
        hosts = _hosts_of(lab)
    if not hosts:
        return vdi
    if not datastores:
        for a in lab.storage.values():
            arrays.setdefault(a.name, default_array(a.name, a.kind.value))
            for lun in a.luns or (f"{a.name}-ds",):
                datastores[lun] = Datastore(
                    name=lun, array=a.name, volume=lun, capacity_gb=DEFAULT_DATASTORE_GB, cluster=None
                )
        if not datastores:  # no array at all: the hosts' own disks
            arrays[_LOCAL_ARRAY] = default_array(_LOCAL_ARRAY, "local")
            datastores["local-ds"] = Datastore(
                name="local-ds",
                array=_LOCAL_ARRAY,
                volume="local-ds",
                capacity_gb=DEFAULT_DATASTORE_GB,
                cluster=None,
            )
    stores = list(datastores)
    placement = dict(vdi.placement) if vdi is not None else {}
    for k, (m, h) in enumerate(zip(loose, _place(loose, hosts), strict=True)):
        placement[m.name] = (IMPLICIT_POOL, h, stores[k % len(stores)])
    pool = DesktopPool(
        name=IMPLICIT_POOL,
        desktops=tuple(m.name for m in loose),
        cluster=hosts[placement[loose[0].name][1]].cluster,
        hosts=tuple(dict.fromkeys(placement[m.name][1] for m in loose)),
        datastores=tuple(dict.fromkeys(placement[m.name][2] for m in loose)),
        vcpus=_DEFAULT_VM_VCPUS,
        ram_gb=_DEFAULT_VM_RAM_GB,
        os="",
        workload="task",
        provisioning=Provisioning(
            kind=ProvisioningKind.FULL_CLONE,
            image_gb=40.0,
            pvs_servers=(),
            write_cache=None,
            ram_cache_mb=None,
            write_cache_disk_gb=0.0,
            replica_datastore=None,
            delta_gb=0.0,
        ),
        tags=(),
        implicit=True,
    )
    base = vdi or VdiLab(
        note="",
        hosts={},
        arrays={},
        datastores={},
        pvs_servers={},
        pools={},
        launchers=(),
        twin=VdiTwinParameters(),
        placement={},
    )
    return base.model_copy(
        update={
            "hosts": hosts,
            "arrays": arrays,
            "datastores": datastores,
            "pools": {**base.pools, IMPLICIT_POOL: pool},
            "placement": placement,
        }
    )
