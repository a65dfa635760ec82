"""A "simultaneous" SSH reboot is simultaneous: every session is opened before the burst, every
command is sent before the first machine goes down, and the delivery spread is far below what
connecting to the machines one after another costs."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from labctl.inventory import load_lab
from labctl.lab.session import DriverSettings, LabSession
from tests.drivers.power_labs import running_sim
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration

CLIENTS = 12
# 6x: the simulated Windows drops sshd one lab second after `shutdown /r /t 0`, 167 ms of wall time,
# so "every command sent before the first went down" does not depend on the machine's speed
TIME_SCALE = 6.0


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    base = tmp_path_factory.mktemp("burst")
    with running_sim(
        base,
        lambda attempt: make_test_lab(base, CLIENTS, time_scale=TIME_SCALE, name=f"burst-{attempt}.yaml"),
    ) as s:
        yield s


@pytest.fixture
def session(sim) -> Iterator[LabSession]:
    with LabSession(
        load_lab(sim.lab_file), sim.clock, settings=DriverSettings(ssh_command_timeout_s=60)
    ) as s:
        yield s


def up(s: LabSession, names: list[str]) -> None:
    s.power.on(names)
    ready = s.wait_ready(names, timeout_s=600)
    assert all(r.ready for r in ready.values()), ready


def test_a_reboot_burst_sends_everything_before_anything_goes_down(session: LabSession) -> None:
    s = session
    names = [m.name for m in s.lab.clients]
    up(s, names)
    # what one reboot costs from cold (connect, authenticate, run): a sequential fan-out pays it
    # per machine, so its deliveries would spread over about (N - 1) times this
    s.ssh.close()
    t0 = time.monotonic()
    single = s.power.reboot(names[:1])
    single_call_s = time.monotonic() - t0
    assert single.ok and single.delivery_spread_wall_s == 0.0
    up(s, names)
    s.ssh.close()  # no cached connection: the burst must open every session itself, first
    report = s.power.reboot(names)
    assert report.ok, report.failed
    outs = list(report.outcomes.values())
    assert all(o.sent_wall is not None and o.delivered_wall is not None for o in outs)
    assert all("delivered (session dropped)" in o.detail for o in outs)
    # sessions were opened before the burst: the last command left before the first machine dropped
    assert max(o.sent_wall for o in outs) < min(o.delivered_wall for o in outs)  # type: ignore[type-var]
    assert report.delivery_spread_wall_s is not None
    assert report.delivery_spread_wall_s < (CLIENTS - 1) * single_call_s / 3
    assert report.delivery_spread_lab_s == pytest.approx(report.delivery_spread_wall_s * TIME_SCALE)
    # the timeline and the run record say the same
    dispatch = s.timeline.events("power.dispatch")[-1]
    assert dispatch.detail["delivery_spread_s"] == report.delivery_spread_lab_s
    (group,) = report.group_actions()
    assert (group.backend, group.machines, group.ok) == ("wol-ssh", CLIENTS, CLIENTS)
    assert group.delivery_spread_s == pytest.approx(report.delivery_spread_lab_s)
    assert group.send_spread_s == pytest.approx(report.send_spread_lab_s)
    up(s, names)
    off = s.power.off(names)
    assert off.ok and off.delivery_spread_wall_s is not None
    assert all("shutdown /s /t 0: delivered" in o.detail for o in off.outcomes.values())


def test_a_wake_burst_has_no_delivery_spread_and_off_machines_are_already_off(session: LabSession) -> None:
    s = session
    names = [m.name for m in s.lab.clients][:4]
    deadline = time.monotonic() + 30
    while any(st.state.value != "off" for st in s.power.state(names).values()):
        assert time.monotonic() < deadline, "clients did not go off"
        s.power.off(names)
        time.sleep(0.3)
    off = s.power.off(names)
    assert off.ok and {o.detail for o in off.outcomes.values()} == {"already off (SSH not answering)"}
    assert off.delivery_spread_wall_s is None  # nothing was sent
    on = s.power.on(names)
    assert on.ok and on.delivery_spread_lab_s is None and on.send_spread_wall_s >= 0
    assert all(o.sent_lab is not None and o.delivered_lab is None for o in on.outcomes.values())
