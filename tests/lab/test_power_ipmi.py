"""A machine with ``power: ipmi`` is powered over IPMI (pyghmi) by the simulated lab's BMC (UDP),
through the same facade as every other backend."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from labctl.inventory import load_lab
from labctl.lab.power import State
from labctl.lab.session import LabSession
from tests.drivers.power_labs import IPMI_PORT, ipmi_lab_file, running_sim
from tests.lab.conftest import FAST

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    base = tmp_path_factory.mktemp("ipmi")
    with running_sim(base, lambda attempt: ipmi_lab_file(base, name=f"ipmi-{attempt}.yaml")) as s:
        yield s


@pytest.fixture
def session(sim) -> Iterator[LabSession]:
    with LabSession(load_lab(sim.lab_file), sim.clock, settings=FAST) as s:
        yield s


def state_of(s: LabSession, name: str) -> State:
    return s.power.state(name)[name].state


def eventually(fn, wall_s: float = 10.0) -> bool:
    deadline = time.monotonic() + wall_s
    while not fn():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_the_simulator_runs_the_bmc_on_its_inventory_address(sim) -> None:
    ep = sim.endpoint("ipmi", "infra-01")
    assert (ep.port, ep.protocol) == (IPMI_PORT, "udp")


def test_ipmi_status_off_and_on(session: LabSession) -> None:
    s = session
    st = s.power.state("infra-01")["infra-01"]
    assert (st.state, st.source, st.detail) == (State.ON, "ipmi", "chassis power on")
    off = s.power.off("infra-01", force=True)
    o = off.outcomes["infra-01"]
    assert off.ok and o.backend == "ipmi" and o.detail == "power down accepted"
    assert o.sent_lab is not None and o.delivered_lab is not None and o.sent_lab <= o.delivered_lab
    (group,) = off.group_actions()
    assert (group.backend, group.ok, group.delivery_spread_s) == ("ipmi", 1, 0.0)
    assert eventually(lambda: state_of(s, "infra-01") is State.OFF)
    again = s.power.off("infra-01")
    assert again.ok and again.outcomes["infra-01"].detail == "already off"
    assert again.outcomes["infra-01"].sent_lab is None  # nothing was sent
    on = s.power.on("infra-01")
    assert on.ok and on.outcomes["infra-01"].detail == "power up accepted"
    assert eventually(lambda: state_of(s, "infra-01") is State.ON)
    kinds = [(e.kind, e.detail.get("backend")) for e in s.timeline.events() if e.target == "infra-01"]
    assert ("power.action", "ipmi") in kinds


def test_a_mixed_group_fans_out_to_every_backend_at_once(session: LabSession) -> None:
    s = session
    rep = s.power.on("infra-01,pvs-01,optiplex-001")
    assert rep.ok, rep.failed
    assert {o.backend for o in rep.outcomes.values()} == {"ipmi", "redfish", "wol-ssh"}
    assert {g.backend for g in rep.group_actions()} == {"ipmi", "redfish", "wol-ssh"}
    assert rep.delivery_spread_lab_s is None  # a magic packet is never seen arriving
    request = s.timeline.events("power.request")[-1]
    assert set(request.detail["backends"]) == {"ipmi", "redfish", "wol-ssh"}
    s.power.off("optiplex-001")
