"""Copy/reboot matrix (2007 paper, test scenario 2): copiers copy 512 MB while rebooters restart.

Cells: splits [copiers, rebooters] x copy_paths from copy_reboot.params.yaml.
    labctl run copy_reboot -k "50x50 and share_to_share"
"""

import pytest

from labctl.plugin.cells import copy_reboot_cell

pytestmark = pytest.mark.plan("copy_reboot")


def test_copy_reboot(split, copy_path, plan_params, lab_env, plan_cell):
    result = copy_reboot_cell(plan_cell, lab_env, plan_params, split, copy_path)
    assert len(result.copiers) == split[0] and len(result.rebooters) == split[1]
