"""VDI labs in the inventory: the examples, desktops as VMs, and one-line problems for bad input."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from labctl.errors import InventoryError
from labctl.inventory import load_lab
from labctl.inventory.load import validate_file
from labctl.inventory.model import MachineKind
from labctl.inventory.vdi import ControllerMode, ProvisioningKind, WriteCacheMode
from tests.vdi.labs import load, vdi_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "vdi-2012-ps6010xvs-630.yaml": (630, 24),
    "vdi-2012-ps6010xvs-1270.yaml": (1270, 25),
    "vdi-horizon-unity680f-3000.yaml": (3000, 26),
    "vdi-mcs-sc40-1000.yaml": (1000, 27),
    "vdi-pvs-write-cache-2014.yaml": (370, 28),
}
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<path>[\w.\[\]-]+): (?P<what>.+)$")


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_example_validates_on_its_own_loopback_block(name: str) -> None:
    desktops, block = EXAMPLES[name]
    path = ROOT / "hardware" / name
    lab = validate_file(path)
    assert lab.vdi is not None and len(lab.vms) == desktops == len(lab.vdi.placement)
    assert f"Loopback block 127.{block}.0.0/16" in path.read_text()
    addresses = (
        [m.ip for m in lab.vms]
        + [vc.url for vc in lab.vcenters.values()]
        + [a.url for a in lab.storage.values()]
    )
    for addr in addresses:
        assert addr is not None and f"127.{block}." in addr, addr
    assert lab.vdi.note  # what the paper tested, for readers and the calibration


def test_desktops_are_vms_of_the_lab_spread_evenly_over_hosts_and_datastores() -> None:
    lab = load_lab(ROOT / "hardware" / "vdi-2012-ps6010xvs-630.yaml")
    assert lab.vdi is not None
    desktops = lab.vms
    assert all(m.kind is MachineKind.VM and m.vcenter == "vc-01" and m.vm_host for m in desktops)
    per_host = Counter(m.vm_host for m in desktops)
    assert (
        len(per_host) == 8 and max(per_host.values()) - min(per_host.values()) <= 1
    )  # ~80 each, as the paper
    per_ds = Counter(lab.vdi.placement[m.name][2] for m in desktops)
    assert set(per_ds) == {"VDIVOL1", "VDIVOL2", "VDIVOL3", "VDIVOL4"} and max(per_ds.values()) <= 158
    assert lab.groups["task-pool"].members == tuple(m.name for m in desktops)
    # datastore volumes are the array's LUNs; the VDI cluster is the vCenter's, for the simulators
    assert set(lab.storage["ps6010xvs-01"].luns) == {"vDisk-vol", "VDIVOL1", "VDIVOL2", "VDIVOL3", "VDIVOL4"}
    (dc,) = lab.vcenters["vc-01"].datacenters
    assert [(c.name, c.hosts, c.host_cpu_cores, c.host_ram_gb) for c in dc.clusters] == [("vdi", 8, 8, 96.0)]
    hw = lab.vdi.arrays["ps6010xvs-01"]
    assert hw.controller_mode is ControllerMode.ACTIVE_STANDBY and [t.name for t in hw.tiers] == [
        "ssd",
        "15k",
    ]
    pool = lab.vdi.pools["task-pool"]
    assert (
        pool.provisioning.kind is ProvisioningKind.PVS
        and pool.provisioning.write_cache is WriteCacheMode.DEVICE_DISK
    )
    assert pool.provisioning.pvs_servers == ("pvs-01", "pvs-02")


def test_3000_desktops_resolve_with_every_name_and_address_unique() -> None:
    lab = load_lab(ROOT / "hardware" / "vdi-horizon-unity680f-3000.yaml")
    names = [m.name for m in lab.vms]
    ips = [m.ip for m in lab.vms]
    assert len(names) == len(set(names)) == 3000 and len(set(ips)) == 3000
    assert len({m.vm_host for m in lab.vms}) == 20
    assert lab.vdi is not None and len(lab.vdi.launchers) == 120


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(InventoryError) as err:
        load(tmp_path, text)
    lines = str(err.value).splitlines()
    for line in lines:
        assert LINE.match(line), line  # file:line: path: what (fix)
    return lines


@pytest.mark.parametrize(
    ("edit", "path", "words"),
    [
        (
            ("cluster: vdi\n      datastores", "cluster: vdj\n      datastores"),
            "vdi.pools[0].cluster",
            "did you mean 'vdi'?",
        ),
        (
            ("count: 8, capacity_gb: 400, raid: 10", "count: 7, capacity_gb: 400, raid: 10"),
            "vdi.arrays[0].tiers[0].count",
            "RAID 10 cannot be formed from 7",
        ),
        (
            ("write_cache: device_disk", "write_cache: device_ram_overflow"),
            "vdi.pools[0].provisioning.ram_cache_mb",
            "ram_cache_mb: 256",
        ),
        (
            (
                "{kind: pvs, pvs_servers: [pvs-01], write_cache: device_disk}",
                "{kind: linked_clone, write_cache: device_disk}",
            ),
            "vdi.pools[0].provisioning.write_cache",
            "PVS provisioning only",
        ),
        (
            ("pvs_servers: [pvs-01], write_cache", "pvs_servers: [pvs-02], write_cache"),
            "vdi.pools[0].provisioning.pvs_servers[0]",
            "unknown pvs_server 'pvs-02'",
        ),
        (
            ("datastores: [ds-1]", "datastores: [ds-2]"),
            "vdi.pools[0].datastores[0]",
            "unknown datastore 'ds-2'",
        ),
        (("workload: task", "workload: tsak"), "vdi.pools[0].workload", "did you mean 'task'?"),
        (
            ("{name: ds-1, array: arr-1, capacity_gb: 1000}", "{name: ds-1, array: arr-1, capacity_gb: 20}"),
            "vdi.datastores[1].capacity_gb",
            "must hold 32 GB",
        ),
        (("- array: arr-1", "- array: arr-9"), "vdi.arrays[0].array", "unknown storage array 'arr-9'"),
    ],
)
def test_a_bad_vdi_section_is_one_line_naming_the_item_and_the_fix(
    tmp_path: Path, edit: tuple[str, str], path: str, words: str
) -> None:
    text = vdi_yaml()
    assert edit[0] in text
    lines = _problems(tmp_path, text.replace(edit[0], edit[1], 1))
    mine = [ln for ln in lines if f": {path}: " in ln]
    assert mine and words in mine[0], lines
    match = LINE.match(mine[0])
    assert match is not None
    edited = text.replace(edit[0], edit[1], 1).splitlines()[int(match["line"]) - 1]
    assert edit[1].splitlines()[0].strip() in edited  # the line number points at the edited line


def test_unknown_keys_in_the_vdi_section_get_a_did_you_mean(tmp_path: Path) -> None:
    lines = _problems(tmp_path, vdi_yaml().replace("vcpus: 1\n", "vcpu: 1\n"))
    assert any(
        "vdi.pools[0].vcpu: unknown key 'vcpu'" in ln and "did you mean 'vcpus'?" in ln for ln in lines
    )


def test_vdi_faults_target_hosts_and_datastores(tmp_path: Path) -> None:
    lab = load(
        tmp_path,
        vdi_yaml(
            faults="- {kind: host_in_maintenance, targets: [esx-vdi-02]}\n- {kind: datastore_full, targets: [ds-1]}"
        ),
    )
    assert [f.kind.value for f in lab.faults] == ["host_in_maintenance", "datastore_full"]
    lines = _problems(tmp_path, vdi_yaml(faults="- {kind: host_in_maintenance, targets: [esx-vdi-09]}"))
    assert any("fault targets unknown item 'esx-vdi-09'" in ln for ln in lines)


def test_a_pool_named_like_a_group_is_refused(tmp_path: Path) -> None:
    text = vdi_yaml() + "groups:\n  pool: {members: [d-0001]}\n"
    lines = _problems(tmp_path, text)
    assert any("vdi.pools[0].name: pool 'pool' has the name of a machine or group" in ln for ln in lines)


def test_equallogic_arrays_may_be_reached_over_snmp_and_others_not(tmp_path: Path) -> None:
    text = vdi_yaml().replace(
        "kind: unity, url: 'https://127.30.0.3:8443'", "kind: equallogic, url: 'snmp://127.30.0.3:16100'"
    )
    assert load(tmp_path, text).storage["arr-1"].url.startswith("snmp://")
    lines = _problems(
        tmp_path, vdi_yaml().replace("url: 'https://127.30.0.3:8443'", "url: 'snmp://127.30.0.3:16100'")
    )
    assert any("storage[0].url: malformed URL" in ln for ln in lines)
