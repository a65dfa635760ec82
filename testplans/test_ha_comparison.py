"""HA comparison (2007 paper): the boot storm and the copy/reboot matrix on the HA configuration
(second streaming server; vDisks and write caches on the NAS's 8-disk RAID10) beside standalone,
then a side-by-side of retries, boot time and disk queue.

Cells: configurations x group_sizes, configurations x splits x copy_paths (ha_comparison.params.yaml).
Standalone cells already measured in this run (labctl run 2007) are reused.
"""

import pytest

from labctl.inventory.model import Lab
from labctl.report.ha_comparison import side_by_side
from labctl.scenarios.boot_storm import BootStorm, BootStormSettings
from labctl.scenarios.copy_reboot import CopyPath, CopyReboot, CopyRebootSettings
from labctl.scenarios.settings import CellValues, Count, GroupName, Pair


class HaComparisonPlan(BootStormSettings, CopyRebootSettings):
    """``ha_comparison.params.yaml``: both scenarios' cells in each configuration."""

    configurations: CellValues[GroupName]
    group_sizes: CellValues[Count]
    splits: CellValues[Pair]
    copy_paths: CellValues[CopyPath]

    def lab_configurations(self) -> list[str | None]:
        return list(self.configurations)

    def lab_problems(self, lab: Lab) -> list[str]:
        largest = max([*self.group_sizes, *(c + r for c, r in self.splits)])
        return CopyRebootSettings.lab_problems(self, lab) + self.group_problems(lab, largest, "group_sizes")


pytestmark = pytest.mark.plan(
    "ha_comparison", params=HaComparisonPlan, criteria=["boot_storm", "copy_reboot"]
)


def test_ha_boot_storm(
    configuration: str, group_size: int, plan_params: HaComparisonPlan, run_cell, reuse_cell
):
    cell = (
        reuse_cell("boot_storm", configuration, group_size)
        or run_cell(BootStorm(group_size, plan_params)).summary
    )
    assert cell.configuration == configuration
    assert len(cell.values("boot_time_s")) == group_size


def test_ha_copy_reboot(
    configuration: str, split, copy_path, plan_params: HaComparisonPlan, run_cell, reuse_cell
):
    copiers, rebooters = split
    cell = (
        reuse_cell("copy_reboot", configuration, copiers, rebooters, copy_path.value)
        or run_cell(CopyReboot(copiers, rebooters, copy_path, plan_params)).summary
    )
    assert cell.configuration == configuration
    assert len(cell.values("boot_time_s", role="rebooter")) == rebooters


def test_side_by_side(run_folder):
    """Standalone vs HA: retries, boot time and write-cache disk queue per cell, as a table."""
    table = side_by_side(run_folder)
    assert table.rows, "no cell was measured in both configurations"
    for row in table.rows:  # each configuration measured on its own write-cache volume
        assert row["standalone"]["disk_queue_mean"] is not None and row["ha"]["disk_queue_mean"] is not None
