"""VSI-style storms on a virtual desktop pool (2012 paper: boot, login, steady state, logoff).

Desktops are powered on through vCenter (the boot storm), users log on through the session
launchers at a rate with 100 % or a share of the desktops pre-booted (the rest booted on demand as
users arrive), run their workload for the steady state, and log off; the arrays, the hosts and the
sessions are measured on one timeline. Per phase the arrays' IOPS per desktop (table 7), the
response-time index with its baseline and saturation point, and each desktop's user-experience
band; judged by ``criteria/vdi_storm.yaml`` (latency < 20 ms, CPU < 95 %, no ballooning, ...).

    labctl run vdi_storm --lab hardware/vdi-2012-ps6010xvs-630.yaml
    labctl run vdi_storm --lab hardware/vdi-2012-ps6010xvs-630.yaml -k "020"   # 20 % pre-booted
"""

from typing import Annotated

import pytest
from pydantic import Field, StrictInt

from labctl.inventory.model import Lab
from labctl.scenarios.settings import CellValues
from labctl.scenarios.vdi_storm import VdiStorm, VdiStormSettings, cell_desktops


class VdiStormPlan(VdiStormSettings):
    """``vdi_storm.params.yaml``: one cell per pre-booted share."""

    prebooted_pcts: CellValues[Annotated[StrictInt, Field(ge=0, le=100)]]


pytestmark = pytest.mark.plan("vdi_storm", params=VdiStormPlan)


def test_vdi_storm(prebooted_pct: int, plan_params: VdiStormPlan, lab: Lab, run_cell) -> None:
    run = run_cell(VdiStorm(prebooted_pct, plan_params))
    cell = run.summary
    desktops = cell_desktops(lab, plan_params)

    # every desktop of the pool got its user, through the launchers, and was judged
    assert cell.extra["sessions"] == len(desktops) and cell.extra["failed_sessions"] == 0
    assert sorted(c.name for c in cell.by_role("desktop")) == sorted(desktops)
    assert all(c.login_s is not None and c.login_s > 0 for c in cell.by_role("desktop"))
    # desktops not pre-booted were booted on demand as their users arrived
    prebooted = round(len(desktops) * prebooted_pct / 100)
    assert cell.extra["booted_on_demand"] == len(desktops) - prebooted
    # the phases ran on one timeline, in order, and each has the arrays' figures (table 7)
    names = [p.name for p in cell.phases]
    assert names == ["prepare", *plan_params.phases, "restore"]
    for phase in ("login", "steady"):
        fig = next(f for f in cell.phase_figures if f.phase == phase and not f.array)
        assert fig.samples > 0 and fig.iops_per_desktop is not None and fig.iops_per_desktop > 0
    # the response-time index has a baseline from the sessions' timed operations
    assert cell.response_index is not None and cell.response_index.baseline_s is not None
