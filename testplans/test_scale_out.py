"""Scale-out (2012 paper 5.6, table 5): the same storm on one array and on two.

The desktops whose disks are on the first array (and the hosts they run on), then those of both
arrays; each cell is the VDI storm with every desktop pre-booted. The second cell checks that the
steady state grew near linearly with the desktops (the paper: 4,500 -> 9,000 IOPS for 630 -> 1,270).

    labctl run scale_out --lab hardware/vdi-2012-ps6010xvs-1270.yaml
"""

from typing import Annotated

import pytest
from pydantic import Field, StrictInt

from labctl.inventory.model import Lab
from labctl.scenarios.settings import CellValues
from labctl.scenarios.vdi_scale import ScaleOut, scaling
from labctl.scenarios.vdi_storm import VdiStormSettings, cell_desktops


class ScaleOutPlan(VdiStormSettings):
    """``scale_out.params.yaml``: one cell per number of arrays."""

    array_counts: CellValues[Annotated[StrictInt, Field(ge=1, le=64)]] = Field(
        description="numbers of arrays, one cell each (the first N arrays of the inventory)"
    )
    linear_within: float = Field(0.15, gt=0, lt=1, description="near linear: steady IOPS within this share")

    def lab_problems(self, lab: Lab) -> list[str]:
        n = len(lab.vdi.arrays) if lab.vdi is not None else 0
        if max(self.array_counts) > n:
            return [f"array_counts: {max(self.array_counts)} arrays, but {lab.name} has {n}"]
        return super().lab_problems(lab)


pytestmark = pytest.mark.plan("scale_out", params=ScaleOutPlan)


def _steady(cell, what: str = "iops_mean") -> float:
    fig = next(f for f in cell.phase_figures if f.phase == "steady" and not f.array)
    value = getattr(fig, what)
    assert value is not None
    return float(value)


def test_scale_out(array_count: int, plan_params: ScaleOutPlan, lab: Lab, run_cell, reuse_cell) -> None:
    arrays, smallest = array_count, min(plan_params.array_counts)
    config = lab.configuration.name if lab.configuration is not None else "default"
    base = None if arrays == smallest else reuse_cell("scale_out", config, smallest)
    per_desktop = _steady(base, "iops_per_desktop") if base is not None else None
    # each array's steady IOPS per desktop against the smallest cell's: judged by criteria/scale_out.yaml
    cell = run_cell(
        ScaleOut(arrays, plan_params, baseline_per_desktop=per_desktop, smallest=arrays == smallest)
    ).summary
    desktops = cell_desktops(lab, plan_params, arrays)
    assert cell.extra["sessions"] == len(desktops) and cell.extra["failed_sessions"] == 0
    # every array of the cell carried its share: one figure per array besides the total
    per_array = [f for f in cell.phase_figures if f.phase == "steady" and f.array]
    assert len(per_array) == arrays and all((f.iops_mean or 0) > 0 for f in per_array)
    if arrays == smallest:
        return
    if base is None:
        pytest.skip(f"the {smallest}-array cell did not run in this session: nothing to compare with")
    rows = scaling(
        [
            (smallest, int(base.extra["sessions"]), _steady(base)),
            (arrays, int(cell.extra["sessions"]), _steady(cell)),
        ]
    )
    # near-linear: the steady state per desktop stays what it was with fewer arrays
    assert abs(rows[-1].ratio - 1.0) <= plan_params.linear_within, rows
