"""PVS write-cache modes (the 2014 post): one workload, the cache on the device disk vs in device
RAM with overflow to the disk: host IOPS per user per mode.

Each cell is one pool of the inventory (one pool per mode: ``provisioning.write_cache`` and
``ram_cache_mb``), run as the VDI storm; its host IOPS per user is the pool's datastores' steady
IOPS over its users (a RAM cache absorbs what never reaches the disk).

    labctl run write_cache_modes --lab hardware/my-pvs-lab.yaml --param pools=std-disk,std-ram512
"""

import pytest
from pydantic import Field

from labctl.inventory.model import Lab
from labctl.scenarios.settings import CellValues
from labctl.scenarios.vdi_scale import WriteCacheModes
from labctl.scenarios.vdi_storm import VdiStormSettings


class WriteCacheModesPlan(VdiStormSettings):
    """``write_cache_modes.params.yaml``: one cell per pool (each pool one write-cache mode)."""

    pools: CellValues[str] = Field(description="pools of the inventory, one write-cache mode each")

    def lab_problems(self, lab: Lab) -> list[str]:
        known = lab.vdi.pools if lab.vdi is not None else {}
        return [
            f"pools: {p!r} is not a pool of {lab.name} (pools: {', '.join(known)})"
            for p in self.pools
            if p not in known
        ]


pytestmark = pytest.mark.plan("write_cache_modes", params=WriteCacheModesPlan)


def test_write_cache_modes(pool: str, plan_params: WriteCacheModesPlan, lab: Lab, run_cell) -> None:
    cell = run_cell(WriteCacheModes(pool, plan_params)).summary
    host = next(f for f in cell.phase_figures if f.array == f"pool:{pool}")
    # the hosts' disk I/O per user in steady state, measured on the pool's datastores
    assert host.samples > 0 and host.iops_per_desktop is not None
    prov = lab.vdi.pools[pool].provisioning
    if prov.write_cache is not None and prov.write_cache.value == "device_disk":
        assert host.iops_per_desktop > 1.0  # every write reaches the disk
