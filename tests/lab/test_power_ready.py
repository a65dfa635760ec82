"""Power and wait_ready against a running simulated lab (every backend over its socket)."""

from __future__ import annotations

import time

import pytest

from labctl.lab.power import State
from tests.lab.conftest import FAST

pytestmark = pytest.mark.integration


def eventually(fn, wall_s: float = 5.0, step: float = 0.1):
    deadline = time.monotonic() + wall_s
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def test_clients_wake_in_one_burst_and_the_one_that_never_wakes_is_reported(session_for) -> None:
    s = session_for()
    report = s.power.on("clients")
    assert report.ok and set(report.outcomes) == {f"optiplex-00{i}" for i in range(1, 6)}
    assert 0 <= report.send_spread_wall_s < 0.5 and report.send_spread_lab_s == pytest.approx(
        report.send_spread_wall_s * 60
    )
    # each machine's first packet is stamped on the lab clock, within the call that sent it
    assert all(report.started_lab <= o.sent_lab <= report.finished_lab for o in report.outcomes.values())  # type: ignore[operator]
    t0 = time.monotonic()
    ready = s.wait_ready("clients", timeout_s=90)  # placeholder twin: 31 lab s to boot
    assert time.monotonic() - t0 < 4
    assert ready["optiplex-003"].state == "timeout" and "not active" in ready["optiplex-003"].detail
    others = [r for n, r in ready.items() if n != "optiplex-003"]
    assert all(r.ready and r.boot_time_s == pytest.approx(30.0) and r.retries == 0 for r in others)
    assert all(r.at is not None for r in others)
    kinds = [e.kind for e in s.timeline.events()]
    assert kinds.count("power.action") == 5 and kinds.count("ready") == 4 and kinds.count("timeout") == 1
    dispatch = s.timeline.events("power.dispatch")[0]
    assert dispatch.target == "clients" and dispatch.detail["spread_s"] == report.send_spread_lab_s
    states = s.power.state("clients")
    assert states["optiplex-003"].state is State.OFF and states["optiplex-001"].state is State.ON
    # off: SSH shutdown; the client that never woke is already off
    off = s.power.off("clients")
    assert off.ok and off.outcomes["optiplex-003"].detail.startswith("already off")
    assert eventually(lambda: all(st.state is State.OFF for st in s.power.state("clients").values()))


def test_servers_over_redfish_and_a_hung_bmc_does_not_lose_the_others(sim, session_for) -> None:
    s = session_for()
    states = s.power.state("servers")
    assert {st.state for st in states.values()} == {State.ON}
    assert all(st.source == "redfish" for st in states.values())
    ready = s.wait_ready("servers", timeout_s=60)
    assert all(r.ready for r in ready.values()), ready
    # a reboot that comes back: PowerState stays On, the OS drops and answers again
    rep = s.power.reboot("infra-01")
    assert rep.ok and "GracefulRestart" in rep.outcomes["infra-01"].detail
    o = rep.outcomes["infra-01"]
    assert o.sent_lab is not None and rep.started_lab <= o.sent_lab <= rep.finished_lab


def test_vms_power_on_ready_and_a_failing_task(session_for) -> None:
    s = session_for()
    rep = s.power.on("vdi-[001-004]")
    assert not rep.ok
    assert set(rep.failed) == {"vdi-002"} and "injected fault" in rep.failed["vdi-002"].detail
    ready = s.wait_ready("vdi-[001-004]", timeout_s=120)
    assert {n for n, r in ready.items() if r.ready} == {"vdi-001", "vdi-003", "vdi-004"}
    assert ready["vdi-002"].state == "timeout" and "poweredOff" in ready["vdi-002"].detail
    st = s.power.state("vdi-[001-004]")
    assert st["vdi-001"].state is State.ON and st["vdi-002"].state is State.OFF
    off = s.power.off("vdi-[001-004]")
    assert set(off.failed) == {"vdi-002"}  # its power tasks all fail
    assert s.power.state("vdi-001")["vdi-001"].state is State.OFF


def test_unknown_selector_raises_before_any_action(session_for) -> None:
    from labctl.errors import UnknownTargetError

    s = session_for()
    with pytest.raises(UnknownTargetError):
        s.power.on("optiplex-[001-099]")
    assert s.timeline.events() == []


def test_mixed_group_runs_every_backend_and_times_out_per_machine(sim, tmp_path, session_for) -> None:
    s = session_for(FAST)
    rep = s.power.on("optiplex-004,vdi-005,pvs-01")
    assert rep.ok, rep.failed
    assert rep.outcomes["pvs-01"].detail in ("already on", "On accepted")
    ready = s.wait_ready(["optiplex-004", "vdi-005", "pvs-01"], timeout_s=120)
    assert all(r.ready for r in ready.values()), ready
    s.power.off("optiplex-004,vdi-005")


def test_a_stopped_wait_returns_at_once_with_the_machine_not_ready(session_for) -> None:
    """Ctrl-C in a copy/reboot cell stops the reboot watch: it must not sit out its deadline."""
    import threading

    s = session_for()
    stop = threading.Event()
    result: dict[str, object] = {}
    # optiplex-003 never wakes; 3,600 lab s is a minute of wall time at 60x
    waiter = threading.Thread(
        target=lambda: result.update(s.wait_ready(["optiplex-003"], timeout_s=3600, stop=stop)), daemon=True
    )
    waiter.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    stop.set()
    waiter.join(timeout=30)
    assert not waiter.is_alive(), "wait_ready ignored the stop"
    assert time.monotonic() - t0 < 5
    r = result["optiplex-003"]
    assert r.state == "timeout" and r.detail.startswith("wait stopped before it was ready")  # type: ignore[attr-defined]
