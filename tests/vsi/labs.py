"""Small simulated VDI labs for the VSI plans' tests: a few desktops, launchers with access, a
Unity array (the array the simulated lab serves on this branch), on their own loopback block."""

from __future__ import annotations

from pathlib import Path

from tests.labfiles import _free_block

SSD = "{drive: ssd, count: 8, capacity_gb: 400, raid: 10}"


def vdi_lab(
    tmp_path: Path,
    *,
    desktops: int = 6,
    arrays: int = 1,
    tiers: str = SSD,
    launchers: int = 2,
    sessions: int = 8,
    name: str = "vsi-test.yaml",
    ram_pool: bool = False,
    faults: str = "",
    bmcs: int = 0,
    time_scale: float = 60,
) -> Path:
    """A lab file with ``desktops`` PVS task workers (write cache on the device disk) on two hosts;
    with ``ram_pool`` the pool is called ``disk`` and a second pool ``ram`` of as many desktops keeps
    its write cache in device RAM (256 MB) with overflow to its disk (the 2014 post's two modes).
    ``faults``: YAML of `lab.faults` entries (``"- {kind: bmc_503, targets: [infra-01]}"``);
    ``bmcs``: that many infrastructure servers with a (simulated iDRAC) BMC, ``infra-01`` ..."""
    import random

    a = _free_block(random.Random())
    storage = "".join(
        f"  - {{name: arr-{k}, kind: unity, url: 'https://127.{a}.0.{k + 1}:8443', user: admin,"
        f" password: 'secret:sim.unity_password', tls: {{mode: insecure}}}}\n"
        for k in range(1, arrays + 1)
    )
    hw = "".join(
        f"    - {{array: arr-{k}, model: test, cache_gb: 2, ports: {{count: 2, speed_gbps: 10}}, tiers: [{tiers}]}}\n"
        for k in range(1, arrays + 1)
    )
    stores = "".join(
        f"    - {{name: ds-{k}, array: arr-{k}, capacity_gb: 500}}\n" for k in range(1, arrays + 1)
    )
    access = '{user: vsi, password: "secret:sim.launcher_password", port: 2222, host_key_policy: insecure}'
    ram = ram_launchers = ""
    if ram_pool:
        ram = (
            f'    - {{name: ram, desktops: "r-[0001-{desktops:04d}]", cluster: vdi, datastores: [ds-1],'
            f" vcpus: 1, ram_gb: 1, workload: task, ip: 127.{a}.17.1, provisioning: {{kind: pvs,"
            " pvs_servers: [pvs-01], write_cache: device_ram_overflow, ram_cache_mb: 256}}\n"
        )
        ram_launchers = (
            f'    - {{name: "vsr-[01-{launchers:02d}]", sessions: {sessions}, pool: ram,'
            f" ip: 127.{a}.3.1, access: {access}}}\n"
        )
    fault_yaml = "".join(f"    {line}\n" for line in faults.strip().splitlines())
    servers = "".join(
        f"  - {{name: infra-{k:02d}, role: infrastructure, network: net, mac: '00:1a:a0:30:00:{k:02x}',"
        f" ip: 127.{a}.5.{k}, bmc: {{url: 'https://127.{a}.6.{k}:8443', user: root,"
        f" password: 'secret:sim.bmc_password', tls: {{mode: insecure}}}}}}\n"
        for k in range(1, bmcs + 1)
    )
    text = f"""
lab:
  name: vsi-test-{a}
  time_scale: {time_scale:g}
  simulated: true
  seed: 7
{"  faults:" + chr(10) + fault_yaml if fault_yaml else ""}{"servers:" + chr(10) + servers if servers else ""}networks:
  - {{name: net, subnet: 127.{a}.0.0/16, broadcast: 127.{a}.255.255, speed_gbps: 10}}
vcenters:
  - {{name: vc-01, url: 'https://127.{a}.0.1:8989/sdk', user: administrator@vsphere.local, password: 'secret:sim.vcenter_password', tls: {{mode: insecure}}}}
storage:
{storage}vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: "esx-vdi-[01-02]", sockets: 2, cores: 4, ghz: 3.0, ram_gb: 96, nics: {{count: 2, speed_gbps: 10}}, ip: 127.{a}.1.1}}
  arrays:
{hw}  datastores:
    - {{name: pvs-store, array: arr-1, capacity_gb: 200}}
{stores}  pvs_servers:
    - {{name: pvs-01, vcpus: 4, ram_gb: 16, nics: {{count: 2, speed_gbps: 10}}, vdisk_datastore: pvs-store}}
  pools:
    - name: {"disk" if ram_pool else "pool"}
      desktops: "d-[0001-{desktops:04d}]"
      cluster: vdi
      datastores: [{", ".join(f"ds-{k}" for k in range(1, arrays + 1))}]
      vcpus: 1
      ram_gb: 1
      workload: task
      ip: 127.{a}.16.1
      provisioning: {{kind: pvs, pvs_servers: [pvs-01], write_cache: device_disk}}
{ram}  launchers:
    - {{name: "vsi-[01-{launchers:02d}]", sessions: {sessions}, pool: {"disk" if ram_pool else "pool"}, ip: 127.{a}.2.1, access: {access}}}
{ram_launchers}"""
    path = tmp_path / name
    path.write_text(text)
    return path
