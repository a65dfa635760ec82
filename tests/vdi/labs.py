"""Small VDI inventories for tests, written as YAML so they go through the real loader.

No test here starts a simulator, so the addresses are never bound; they sit in 127.30.x.x, inside
the tests' loopback range, all the same.
"""

from __future__ import annotations

from pathlib import Path

from labctl.inventory import load_lab
from labctl.inventory.model import Lab

SSD = "{drive: ssd, count: 8, capacity_gb: 400, raid: 10}"
HDD_15K = "{drive: 15k, count: 24, capacity_gb: 600, raid: 10}"


def vdi_yaml(
    *,
    desktops: int = 16,
    hosts: int = 2,
    tiers: tuple[str, ...] = (SSD,),
    arrays: int = 1,
    provisioning: str = "{kind: pvs, pvs_servers: [pvs-01], write_cache: device_disk}",
    workload: str = "task",
    host_ram_gb: float = 96,
    host_cores: int = 4,
    ram_gb: float = 1,
    faults: str = "",
    twin: str = "",
    cache_gb: float = 2,
    datastore_gb: float = 1000,  # within the default array's 1,600 GB (a datastore larger than its array is refused)
) -> str:
    storage = "".join(
        f"  - {{name: arr-{a}, kind: unity, url: 'https://127.30.0.{a + 2}:8443', user: admin,"
        f" password: 'secret:sim.unity_password'}}\n"
        for a in range(1, arrays + 1)
    )
    hw = "".join(
        f"    - array: arr-{a}\n      model: test\n      cache_gb: {cache_gb}\n"
        f"      ports: {{count: 2, speed_gbps: 10}}\n      tiers: [{', '.join(tiers)}]\n"
        for a in range(1, arrays + 1)
    )
    stores = "".join(
        f"    - {{name: ds-{a}, array: arr-{a}, capacity_gb: {datastore_gb:g}}}\n"
        for a in range(1, arrays + 1)
    )
    lab_extra = ""
    if faults:
        lab_extra += "  faults:\n" + "".join(f"    {line}\n" for line in faults.strip().splitlines())
    twin_block = (
        ("  twin:\n" + "".join(f"    {line}\n" for line in twin.strip().splitlines())) if twin else ""
    )
    text = f"""
lab:
  name: vdi-test
  time_scale: 60
  simulated: true
  seed: 7
{lab_extra}networks:
  - {{name: net, subnet: 127.30.0.0/16, broadcast: 127.30.255.255}}
vcenters:
  - {{name: vc-01, url: 'https://127.30.0.1:8989/sdk', user: administrator@vsphere.local, password: 'secret:sim.vcenter_password'}}
storage:
{storage}vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: "esx-vdi-[01-{hosts:02d}]", sockets: 2, cores: {host_cores}, ghz: 3.0, ram_gb: {host_ram_gb}, nics: {{count: 2, speed_gbps: 10}}}}
  arrays:
{hw}  datastores:
    - {{name: pvs-store, array: arr-1, capacity_gb: 200}}
{stores}  pvs_servers:
    - {{name: pvs-01, vcpus: 4, ram_gb: 16, nics: {{count: 2, speed_gbps: 10}}, vdisk_datastore: pvs-store}}
  pools:
    - name: pool
      desktops: "d-[0001-{desktops:04d}]"
      cluster: vdi
      datastores: [{", ".join(f"ds-{a}" for a in range(1, arrays + 1))}]
      vcpus: 1
      ram_gb: {ram_gb}
      workload: {workload}
      provisioning: {provisioning}
  launchers:
    - {{name: "vsi-[01-04]", sessions: 40, pool: pool, access: {{user: vsi, password: 'secret:sim.launcher_password'}}}}
{twin_block}"""
    return text


def load(tmp_path: Path, text: str, name: str = "vdi-test.yaml") -> Lab:
    path = tmp_path / name
    path.write_text(text)
    return load_lab(path, every_machine=True)
