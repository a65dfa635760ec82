"""The lab's power strategy against a simulated lab: bring machines to off / ready once per need,
check it, say who did not make it and why, restore a snapshot, and notice power changes the run
did not make."""

from __future__ import annotations

import threading

import pytest

from labctl.lab.power import State
from labctl.lab.session import LabSession
from labctl.lab.strategy import Goal

pytestmark = pytest.mark.integration

CLIENTS = ["optiplex-001", "optiplex-002", "optiplex-003"]


def _kinds(s: LabSession, kind: str) -> list[str]:
    return [e.target for e in s.timeline.events(kind)]


def test_bring_acts_only_on_machines_not_there_and_checks_them(session: LabSession) -> None:
    off = session.strategy.bring(CLIENTS, Goal.OFF, timeout_s=120)
    assert off.ok and sorted(off.reached) == CLIENTS
    assert off.report is None and not _kinds(session, "power.request"), "all were off: nothing is sent"

    ready = session.strategy.bring(["optiplex-001", "optiplex-004"], Goal.READY, timeout_s=200)
    assert ready.reached == ("optiplex-001",) and list(ready.failed) == ["optiplex-004"]
    assert "optiplex-004" in ready.describe() and "1 of 2 not ready" in ready.describe()
    assert ready.report is not None and ready.report.action == "on"

    again = session.strategy.bring(["optiplex-001"], Goal.READY, timeout_s=60)
    assert again.ok and again.report is None, "already up: no second wake"

    down = session.strategy.bring(["optiplex-001"], Goal.OFF, timeout_s=120)
    assert down.ok and down.report is not None and down.report.action == "off"
    assert session.power.state(["optiplex-001"])["optiplex-001"].state is State.OFF
    assert [e.detail["goal"] for e in session.timeline.events("strategy.bring")] == [
        "off",
        "ready",
        "ready",
        "off",
    ]


def test_restore_returns_to_a_snapshot_on_the_timeline(session: LabSession) -> None:
    before = session.strategy.snapshot(CLIENTS)
    assert before == {n: State.OFF for n in CLIENTS}
    assert session.strategy.bring(["optiplex-002"], Goal.READY, timeout_s=200).ok
    res = session.strategy.restore(before, timeout_s=120)
    assert res.ok and sorted(res.reached) == CLIENTS
    assert session.strategy.snapshot(CLIENTS) == before
    assert (
        _kinds(session, "restore.start") and session.timeline.events("restore.end")[-1].detail["ok"] is True
    )
    outcome = res.restore_outcome()
    assert outcome.ok and outcome.left_on == [] and outcome.ended_ts_s >= outcome.started_ts_s


def test_a_stopped_wait_still_sends_and_names_what_it_did_not_see_arrive(session: LabSession) -> None:
    assert session.strategy.bring(["optiplex-003"], Goal.READY, timeout_s=200).ok
    stop = threading.Event()
    stop.set()  # a second Ctrl-C before the restore: send, do not wait, say what is left
    res = session.strategy.bring(["optiplex-003"], Goal.OFF, timeout_s=120, stop=stop)
    assert res.stopped and list(res.failed) == ["optiplex-003"] and res.report is not None
    assert "wait abandoned" in res.describe()
    assert session.strategy.bring(["optiplex-003"], Goal.OFF, timeout_s=120).ok  # it does go off


def test_power_changes_nobody_here_made_are_named_once(session: LabSession) -> None:
    assert session.strategy.bring(["optiplex-001"], Goal.READY, timeout_s=200).ok
    expected = {"optiplex-001": Goal.ON, "optiplex-002": Goal.OFF}
    reported: set[str] = set()
    assert session.strategy.unexpected(expected, reported) == {}
    session.power.off(["optiplex-001"], force=True)  # "labctl power off" from another shell
    session.power.on(["optiplex-002"])
    found: dict[str, str] = {}
    for _ in range(20):  # the machines take a few lab seconds to change state
        found = session.strategy.unexpected(expected, reported)
        if len(found) == 2:
            break
        session.clock.sleep(5)
    assert set(found) == {"optiplex-001", "optiplex-002"}
    assert "expected on, seen off" in found["optiplex-001"]
    session.strategy.unexpected(expected, reported)  # seen again: not a second event
    assert sorted(_kinds(session, "power.unexpected")) == ["optiplex-001", "optiplex-002"]
    session.strategy.bring(["optiplex-002"], Goal.OFF, timeout_s=120)
