"""Boot storm (2007 paper, test scenario 1).

Groups of 1, 5, 10, 25, 50, 75 and 100 clients are woken from S5 at once by Wake-on-LAN. Before
each group every client of the lab is brought to S5, so no client-side cache helps. Over the
six-minute storm window the streaming server's CPU, used memory, outbound NIC utilisation and the
write-cache volume's disk queue are recorded; each client's boot time (first network contact to
agent up) and session retries are read from the streaming software. The criteria
(``criteria/boot_storm.yaml``) judge every cell; a client that never boots is a lab fault.

    labctl run boot_storm -k "50 or 75"
    pytest testplans/test_boot_storm.py --profile quick
"""

import pytest

from labctl.inventory.model import Lab
from labctl.scenarios.boot_storm import BootStorm, BootStormSettings
from labctl.scenarios.settings import CellValues, Count


class BootStormPlan(BootStormSettings):
    """``boot_storm.params.yaml``: one cell per group size."""

    group_sizes: CellValues[Count]

    def lab_problems(self, lab: Lab) -> list[str]:
        return self.group_problems(lab, max(self.group_sizes), "group_sizes")


pytestmark = pytest.mark.plan("boot_storm", params=BootStormPlan)


def test_boot_storm(group_size: int, plan_params: BootStormPlan, lab: Lab, run_cell) -> None:
    cell = run_cell(BootStorm(group_size, plan_params)).summary

    # the first `group_size` clients of the group were woken in one burst, and each has an outcome
    woken = list(lab.groups[plan_params.clients].members[:group_size])
    assert sorted(cell.clients) == sorted(woken)
    assert sum(a.ok for a in cell.actions if a.action == "on") == group_size
    # every client that came up has its boot time and retries from the streaming server
    for client in cell.by_role("storm"):
        assert client.outcome == "ready" and client.boot_time_s is not None and client.retries is not None
        assert 0 < client.boot_time_s <= client.time_to_ready_s + 1
    # the window ran its full length from the burst, and the group was sent back to S5 (a restore
    # that fails is reported beside the verdict, and the next cell's prepare checks S5 again)
    assert cell.window.duration_s == pytest.approx(plan_params.window_s)
    assert cell.restore is not None and [p.name for p in cell.phases] == ["prepare", "window", "restore"]
