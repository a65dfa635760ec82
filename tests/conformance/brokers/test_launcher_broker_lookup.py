"""The launcher asks the broker about a logon beside its collector: a workload's report is answered
while the broker is still thinking (a workload re-sends after 5 s, which would double its
operations), and the waterfall arrives in the journal once the broker has answered."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from labctl.launcher.config import LauncherConfig
from labctl.launcher.daemon import Launcher
from labctl.launcher.session import Session
from tests.conformance.brokers.replay import Answer, Call, Replay
from tests.conformance.brokers.test_citrix_monitor import MADE_CONNECTION, TOKEN, Monitor, made_session, ts

DEADLINE_S = 30.0  # a hang detector, not a speed measure


def test_a_slow_broker_never_holds_a_workloads_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTX_MONITOR_TOKEN", TOKEN)
    release = threading.Event()
    monitor = Monitor([made_session("mine", "u1", "2026-11-28T08:00:00Z", MADE_CONNECTION)])

    def slow(call: Call) -> Answer:
        release.wait(DEADLINE_S)  # the broker thinks until the test lets it answer
        return monitor.route(call)

    with Replay(slow) as server:
        cfg = LauncherConfig.model_validate(
            {
                "name": "l1",
                "state_dir": str(tmp_path / "state"),
                "connector": {
                    "kind": "citrix",
                    "broker_api": {
                        "url": server.url + "/monitorodata",
                        "auth": "bearer",
                        "secret": "env:CTX_MONITOR_TOKEN",
                    },
                },
            }
        )
        launcher = Launcher(cfg)
        launch = ts("2026-11-28T08:00:00")
        s = Session(id="l1-1", desktop="d1", user="u1", workload="task", launch_ts=launch, state="active")
        s.hello, s.hello_ts = {"event": "hello"}, launch + 40.0
        launcher.sessions[s.id] = s
        answers: list[dict[str, object]] = []
        op = {"event": "operation", "user": "u1", "session": s.id, "index": 0, "name": "cpu"}
        report = threading.Thread(
            target=lambda: answers.append(
                launcher.report([{**op, "start_ts": launch + 42.0, "response_s": 1.0}])
            )
        )
        report.start()
        report.join(DEADLINE_S)
        assert not report.is_alive() and answers[0]["ok"] is True
        assert not release.is_set()  # answered while the broker had not
        assert [e["event"] for e in launcher.journal.after(0)] == ["operation"]
        release.set()
        for t in [t for t in threading.enumerate() if t.name == "waterfall-l1-1"]:
            t.join(DEADLINE_S)
        launcher.journal.close()
    logon = [e for e in launcher.journal.after(0) if e["event"] == "logon"]
    assert len(logon) == 1 and logon[0]["broker"]["session"] == "mine"
    assert {p["name"]: p.get("source") for p in logon[0]["phases"]}["profile_load"] == (
        "citrix-monitor: Connection.ProfileLoadStartDate..ProfileLoadEndDate"
    )
