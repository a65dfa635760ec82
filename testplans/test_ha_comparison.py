"""HA comparison (2007 paper): the boot storm and the copy/reboot matrix on the HA configuration
(second streaming server; vDisks and write caches on the NAS's 8-disk RAID10) beside standalone,
then a side-by-side of retries, boot time and disk queue.

Cells: configurations x group_sizes, configurations x splits x copy_paths (ha_comparison.params.yaml).
Standalone cells already measured in this run (labctl run 2007) are reused.
"""

import pytest

from labctl.plugin.cells import boot_storm_cell, copy_reboot_cell
from labctl.plugin.comparison import side_by_side

pytestmark = pytest.mark.plan("ha_comparison")


def test_ha_boot_storm(configuration, group_size, plan_params, lab_env, plan_cell, reuse_cell):
    if reuse_cell("boot_storm", configuration, group_size):
        return
    boot_storm_cell(plan_cell, lab_env, plan_params, group_size, configuration, criteria="boot_storm")


def test_ha_copy_reboot(configuration, split, copy_path, plan_params, lab_env, plan_cell, reuse_cell):
    if reuse_cell("copy_reboot", configuration, split[0], split[1], copy_path):
        return
    copy_reboot_cell(plan_cell, lab_env, plan_params, split, copy_path, configuration, criteria="copy_reboot")


def test_side_by_side(run_folder, plan_params):
    """Standalone vs HA: retries, boot time and write-cache disk queue per cell, as a table."""
    table = side_by_side(run_folder, plan_params)
    assert table.rows, "no cell was measured in both configurations"
