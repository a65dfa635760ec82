"""The vSphere driver against govmomi's ESX model (`vcsim -esx`), whose counter catalogue and host
configuration govmomi captured from a real ESXi 6.5 host (simulator/esx/performance_manager.go:
`govc object.collect -s -dump PerformanceManager:ha-perfmgr perfCounter`).

An ESXi host answers the same API as vCenter with another inventory (one `ha-datacenter`, one
host) and its own counter keys: the driver resolves counters by name, so its readings must mean
the same on both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from labctl.drivers.vsphere import VCenterClient, unit_scale
from labctl.drivers.vsphere_perf import DATASTORE_COUNTERS, HOST_COUNTERS, VM_COUNTERS
from tests.drivers.vcsim import run_vcsim

VCENTER = json.loads((Path(__file__).parent / "vcenter_counters.json").read_text())["counters"]


@pytest.fixture(scope="module")
def esx() -> Iterator[VCenterClient]:
    with run_vcsim("-esx") as sim, pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABCTL_TEST_VC_PASSWORD", sim.password)
        with VCenterClient(sim.vcenter(), timeout_s=20, page_size=1) as client:
            yield client


def test_an_esxi_host_is_read_as_one(esx: VCenterClient) -> None:
    assert esx.about["api_type"] == "HostAgent"
    inv = esx.inventory()  # two VMs, one a page
    assert sorted(inv) == ["ha-host_VM0", "ha-host_VM1"]
    assert {v.datacenter for v in inv.values()} == {"ha-datacenter"}
    assert all(v.host == "ha-host" and v.connection_state == "connected" for v in inv.values())
    assert list(esx.hosts()) == ["localhost.localdomain"]
    assert esx.hosts_in_maintenance() == []
    assert list(esx.datastores()) == ["LocalDS_0"]


@pytest.mark.parametrize("name", sorted({*HOST_COUNTERS, *VM_COUNTERS, *DATASTORE_COUNTERS}))
def test_every_counter_is_on_the_host_in_the_vcenters_unit(esx: VCenterClient, name: str) -> None:
    table = esx.perf_counters()
    assert name in table, f"{name}: not in the recorded ESXi catalogue"
    assert table[name].unit == VCENTER[name]["unit"]
    assert table[name].stats_type == VCENTER[name]["stats_type"]
    assert unit_scale(table[name].unit) == unit_scale(VCENTER[name]["unit"])
