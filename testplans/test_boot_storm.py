"""Boot storm (2007 paper, test scenario 1): groups of clients woken from S5 at once.

Cells come from boot_storm.params.yaml (group_sizes); criteria from criteria/boot_storm.yaml.
    labctl run boot_storm -k "50 or 75"
    pytest testplans/test_boot_storm.py --profile quick
"""

import pytest

from labctl.plugin.cells import boot_storm_cell

pytestmark = pytest.mark.plan("boot_storm")


def test_boot_storm(group_size, plan_params, lab_env, plan_cell):
    result = boot_storm_cell(plan_cell, lab_env, plan_params, group_size)
    assert len(result.clients) == group_size
