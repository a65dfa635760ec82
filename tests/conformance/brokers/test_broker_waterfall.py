"""The logon waterfall with a broker: what the launcher timed stays the launcher's, the phases it
could not see come from the broker's record (named as such), and what neither has keeps a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.launcher import waterfall
from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.base import Launch
from labctl.launcher.connectors.citrix import CitrixConnector
from labctl.launcher.connectors.horizon import HorizonConnector
from labctl.launcher.session import Session
from tests.conformance.brokers.replay import Replay
from tests.conformance.brokers.test_citrix_monitor import MADE_CONNECTION, TOKEN, Monitor, made_session, ts

LAUNCH = ts("2026-11-28T08:00:00")


def session(launch: Launch) -> Session:
    s = Session(id="l-1", desktop="d1", user="u1", workload="task", launch_ts=LAUNCH, launch=launch)
    s.client_ts = LAUNCH + 25.0
    s.hello = {"shell_start_ts": LAUNCH + 40.0}
    s.hello_ts = LAUNCH + 42.0
    return s


def by_name(event: dict[str, object]) -> dict[str, dict[str, object]]:
    return {p["name"]: p for p in event["phases"]}  # type: ignore[index, attr-defined]


def test_citrix_phases_from_the_launcher_and_the_monitor(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CTX_MONITOR_TOKEN", TOKEN)
    launch = Launch(
        argv=["wfica", "x.ica"],
        brokering_s=24.0,
        spans={"brokering": (LAUNCH, LAUNCH + 24.0), "machine_ready": (LAUNCH + 3.0, LAUNCH + 21.0)},
    )
    monitor = Monitor([made_session("mine", "u1", "2026-11-28T08:00:00Z", MADE_CONNECTION)])
    with Replay(monitor.route) as server:
        cfg = ConnectorConfig.model_validate(
            {
                "kind": "citrix",
                "server": "https://sf/Citrix/StoreWeb",
                "broker_api": {
                    "url": server.url + "/monitorodata",
                    "auth": "bearer",
                    "secret": "env:CTX_MONITOR_TOKEN",
                },
            }
        )
        event = waterfall.event(session(launch), CitrixConnector(cfg), LAUNCH + 45.0)
    p = by_name(event)
    # The launcher's own timing wins where it has one (brokering, machine_ready, shell_ready).
    assert p["brokering"]["duration_s"] == 24.0 and "source" not in p["brokering"]
    assert p["machine_ready"]["duration_s"] == 18.0 and "source" not in p["machine_ready"]
    assert p["shell_ready"]["duration_s"] == 2.0 and "source" not in p["shell_ready"]
    # What only the Monitor saw, with where it was read.
    assert p["protocol_connect"] == {
        "name": "protocol_connect",
        "measured": True,
        "duration_s": 2.5,
        "source": "citrix-monitor: Connection.HdxStartDate..HdxEndDate",
    }
    assert p["authentication"]["duration_s"] == 2.34
    assert p["authentication"]["source"] == "citrix-monitor: Connection.AuthenticationDuration (ms)"
    assert p["profile_load"]["duration_s"] == 6.0 and p["group_policy"]["duration_s"] == 3.25
    assert event["broker"]["session"] == "mine"  # type: ignore[index]
    assert event["broker"]["logon_total_s"] == 41.5  # type: ignore[index]
    # 45 s in all: 24 (launcher spans) + 3 (first operation) + 2 (shell) + broker 2.5+2.34+6+3.25
    assert p["unaccounted"]["duration_s"] == pytest.approx(
        45 - 24 - 3 - 2 - (2.5 + 2.34 + 6.0 + 3.25), abs=1e-3
    )


def test_citrix_monitor_without_the_logon_yet_keeps_every_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_MONITOR_TOKEN", TOKEN)
    launch = Launch(argv=["wfica"], brokering_s=1.0, spans={"brokering": (LAUNCH, LAUNCH + 1.0)})
    with Replay(Monitor([]).route) as server:
        cfg = ConnectorConfig.model_validate(
            {
                "kind": "citrix",
                "broker_api": {
                    "url": server.url + "/monitorodata",
                    "auth": "bearer",
                    "secret": "env:CTX_MONITOR_TOKEN",
                },
            }
        )
        event = waterfall.event(session(launch), CitrixConnector(cfg), LAUNCH + 45.0)
    p = by_name(event)
    assert event["broker"] == {
        "why": "the Citrix Monitor has no session of u1 that started during this logon (yet)"
    }
    assert p["profile_load"]["measured"] is False and p["machine_ready"]["measured"] is False
    assert p["protocol_connect"]["why"] == CitrixConnector.unmeasured["protocol_connect"]


def test_horizon_without_broker_api_says_so_per_phase() -> None:
    cfg = ConnectorConfig.model_validate({"kind": "horizon", "server": "https://cs01"})
    event = waterfall.event(session(Launch(argv=["vmware-view"])), HorizonConnector(cfg), LAUNCH + 45.0)
    p = by_name(event)
    assert p["brokering"]["why"] == HorizonConnector.unmeasured["brokering"]
    assert event["broker"] == {"why": "no broker_api in the connector: the Horizon REST API is not asked"}
    assert [n for n, x in p.items() if x["measured"]] == ["shell_ready", "first_operation", "unaccounted"]
