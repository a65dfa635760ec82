"""A storm of real sessions on desktops already up: logons through the lab's launchers, steady
work, logoff, no boot phase (issue 24). One cell per session count; the logon waterfall, the
operations' response times and the hosts on one timeline; judged by ``criteria/session_storm.yaml``.

    labctl run session_storm --lab my-pool.yaml --param session_counts=4,10
    labctl run session_storm --lab hardware/vdi-2012-ps6010xvs-630.yaml --profile quick
"""

from typing import Annotated

import pytest
from pydantic import Field, StrictInt

from labctl.inventory.model import Lab
from labctl.scenarios.session_storm import SessionStorm, SessionStormSettings
from labctl.scenarios.settings import CellValues
from labctl.scenarios.vdi_storm import cell_desktops


class SessionStormPlan(SessionStormSettings):
    """``session_storm.params.yaml``: one cell per number of sessions."""

    session_counts: CellValues[Annotated[StrictInt, Field(ge=1, le=100000)]]


pytestmark = pytest.mark.plan("session_storm", params=SessionStormPlan)


def test_session_storm(session_count: int, plan_params: SessionStormPlan, lab: Lab, run_cell) -> None:
    run = run_cell(SessionStorm(session_count, plan_params))
    cell = run.summary
    desktops = cell_desktops(lab, plan_params.model_copy(update={"desktops": session_count}))

    # every desktop got its user through the launchers, logged on and worked
    assert cell.extra["sessions"] == len(desktops) and cell.extra["failed_sessions"] == 0
    assert sorted(c.name for c in cell.by_role("desktop")) == sorted(desktops)
    assert all(c.login_s is not None and c.login_s > 0 for c in cell.by_role("desktop"))
    assert all(c.operations for c in cell.by_role("desktop"))
    assert [p.name for p in cell.phases] == ["prepare", *plan_params.phases]
