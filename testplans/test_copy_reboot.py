"""Copy/reboot matrix (2007 paper, test scenario 2).

All clients are booted and the boot storm is let pass; then one group copies a 512 MB file while
another group reboots at the same moment: 25/25, 25/50, 50/25 and 50/50 (copiers/rebooters), each
with four copy paths (local->local, local->share, share->local, share->share). Measured: each
copy's duration, the rebooting clients' boot time and retries, and the servers' counters; judged
by ``criteria/copy_reboot.yaml``.

    labctl run copy_reboot -k "50x50 and share_to_share"
"""

import pytest

from labctl.inventory.model import Lab
from labctl.scenarios.copy_reboot import CopyPath, CopyReboot, CopyRebootSettings
from labctl.scenarios.settings import CellValues, Pair


class CopyRebootPlan(CopyRebootSettings):
    """``copy_reboot.params.yaml``: one cell per split [copiers, rebooters] and copy path."""

    splits: CellValues[Pair]
    copy_paths: CellValues[CopyPath]

    def lab_problems(self, lab: Lab) -> list[str]:
        largest = max(c + r for c, r in self.splits)
        return super().lab_problems(lab) + self.group_problems(lab, largest, "splits")


pytestmark = pytest.mark.plan("copy_reboot", params=CopyRebootPlan)


def test_copy_reboot(
    split: tuple[int, int], copy_path: CopyPath, plan_params: CopyRebootPlan, run_cell
) -> None:
    copiers, rebooters = split
    cell = run_cell(CopyReboot(copiers, rebooters, copy_path, plan_params)).summary

    # every copier copied its 512 MB, every rebooter came back with its boot time from the server
    assert [c.outcome for c in cell.by_role("copier")] == ["copied"] * copiers
    assert all(c.copy_s is not None and c.copy_s > 0 for c in cell.by_role("copier"))
    assert len(cell.by_role("rebooter")) == rebooters
    assert all(c.boot_time_s is not None and c.retries is not None for c in cell.by_role("rebooter"))
    # the reboots went out in one burst, while the copies ran
    assert sum(a.ok for a in cell.actions if a.action == "reboot") == rebooters
    assert cell.window.duration_s >= max(c.copy_s for c in cell.by_role("copier")) - 1
