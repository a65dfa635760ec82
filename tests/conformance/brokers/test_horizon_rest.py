"""The horizon connector: its client command line in each platform's syntax, and its REST client
against the examples of VMware's Horizon Server API reference (OpenAPI 2111: AuthTokens,
DesktopPoolInfo, ADUserOrGroupSummary, SessionInfo) served on loopback with the paging the
"Horizon Server REST Pagination and Filter Guide" defines (page/size, HAS_MORE_RECORDS)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from labctl.launcher.config import BrokerApi
from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.broker import BrokerError
from labctl.launcher.connectors.horizon import HorizonConnector, horizon_argv
from labctl.launcher.connectors.horizon_rest import NO_PHASES, HorizonRest, session_from
from tests.conformance.brokers.replay import Answer, Call, Replay, recorded_json

API_PASSWORD = "Adm1n-Pw"
TOKENS = recorded_json("horizon/auth_tokens_example.json")  # {"access_token": "<jwt.access.token>", ...}
POOL = recorded_json("horizon/desktop_pool_info_example.json")
USER = recorded_json("horizon/ad_user_or_group_example.json")
SESSION = recorded_json("horizon/session_info_example.json")


def made_session(i: int, start_ms: int) -> dict[str, Any]:
    s = copy.deepcopy(SESSION)
    s["id"], s["start_time"] = f"made-{i:04d}", start_ms
    return s


class ConnectionServer:
    def __init__(self, sessions: list[dict[str, Any]], per_page: int = 3, segment: str | None = None):
        self.sessions = sessions
        self.per_page = per_page
        self.segment = segment
        self.access = TOKENS["access_token"]
        self.expire_next = False
        self.calls: list[Call] = []
        self.logins: list[dict[str, Any]] = []

    def route(self, call: Call) -> Answer:
        self.calls.append(call)
        p = call.path
        if p == "/rest/login":
            self.logins.append(call.json())
            body = call.json()
            if (body["domain"], body["username"], body["password"]) != ("LAB", "svc-labctl", API_PASSWORD):
                return Answer(400)
            self.access = TOKENS["access_token"]
            return Answer.json(TOKENS)
        if p == "/rest/refresh":
            if call.json() != {"refresh_token": TOKENS["refresh_token"]}:
                return Answer(400)
            self.access = TOKENS["access_token"] + ".renewed"  # made: the example's token, marked
            return Answer.json({"access_token": self.access})
        if p == "/rest/logout":
            return Answer(200)
        if call.headers.get("authorization") != f"Bearer {self.access}" or self.expire_next:
            self.expire_next = False
            return Answer(401)
        if p == "/rest/inventory/v1/desktop-pools":
            disabled = {**POOL, "id": "made-disabled", "name": "closed-pool", "enabled": False}
            return Answer.json([POOL, disabled])
        if p == "/rest/external/v1/ad-users-or-groups":
            assert json.loads(call.query["filter"])["filters"][0] == {
                "type": "Equals",
                "name": "login_name",
                "value": "testuser",
            }
            return Answer.json([USER])
        if p == "/rest/inventory/v1/sessions":
            return self._page(call, self.sessions)
        if p == "/rest/helpdesk/v1/logon-timing/logon-segment":
            if self.segment is None:
                return Answer(404)
            return Answer.json({"logon_segment_data": self.segment})
        return Answer(404)

    def _page(self, call: Call, items: list[dict[str, Any]]) -> Answer:
        page, size = int(call.query["page"]), int(call.query["size"])
        assert page > 0 and 0 < size <= 1000  # the guide: both positive, size at most 1,000
        flt = json.loads(call.query["filter"])
        want = {f["name"]: f["value"] for f in flt["filters"]}
        chosen = [s for s in items if all(s.get(k) == v for k, v in want.items())]
        per = min(size, self.per_page)
        chunk = chosen[(page - 1) * per : page * per]
        more = page * per < len(chosen)
        return Answer.json(chunk, headers=[("HAS_MORE_RECORDS", "true")] if more else [])


def broker_api(url: str) -> BrokerApi:
    return BrokerApi.model_validate(
        {"url": url, "user": "svc-labctl", "domain": "LAB", "secret": "env:HZ_API_PASSWORD"}
    )


@pytest.fixture(autouse=True)
def api_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_API_PASSWORD", API_PASSWORD)


def test_the_client_command_line_in_each_platforms_syntax() -> None:
    assert horizon_argv(False, "vmware-view", "https://cs01", "u1", "LAB", "Win10-Task", "blast") == [
        "vmware-view",
        "--serverURL=https://cs01",
        "--userName=u1",
        "--desktopName=Win10-Task",
        "--nonInteractive",
        "--domainName=LAB",
        "--protocol=BLAST",
    ]
    assert horizon_argv(True, "vmware-view.exe", "https://cs01", "u1", "LAB", "Win10-Task", "blast") == [
        "vmware-view.exe",
        "-serverURL",
        "https://cs01",
        "-userName",
        "u1",
        "-desktopName",
        "Win10-Task",
        "-nonInteractive",
        "-domainName",
        "LAB",
        "-desktopProtocol",
        "Blast",
    ]


def test_session_start_time_is_epoch_milliseconds() -> None:
    """SessionInfo.start_time is epoch milliseconds (the reference): 1582181831000 is 2020-02-20,
    read as seconds it would be the year 52106."""
    s = session_from(SESSION)
    assert s.start_ts == 1582181831.0
    assert s.protocol == "PCOIP" and s.desktop_pool_id == POOL["id"]


def test_all_pages_are_read_while_has_more_records_says_so() -> None:
    """Seven sessions of the user in pages of three: HAS_MORE_RECORDS on the first two pages. The
    first page alone would miss the session the launch made (the last one)."""
    start_ms = SESSION["start_time"]
    sessions = [made_session(i, start_ms - 3_600_000) for i in range(6)] + [made_session(99, start_ms)]
    cs = ConnectionServer(sessions)
    with Replay(cs.route) as server:
        rest = HorizonRest(broker_api(server.url))
        got = rest.sessions(USER["id"], POOL["id"])
        window = (start_ms / 1000 - 60, start_ms / 1000 + 60)
        logon = rest.logon("testuser", "example.com", "sales-pool1", *window)
        again = rest.logon("testuser", "example.com", "sales-pool1", *window)
        rest.logout()
    assert [s.id for s in got] == [f"made-{i:04d}" for i in range(6)] + ["made-0099"]
    pages = [c.query["page"] for c in cs.calls if c.path == "/rest/inventory/v1/sessions"]
    assert pages == ["1", "2", "3"] * 3
    assert again == logon  # the pool and the user are looked up once in a run:
    looked_up = [c.path for c in cs.calls if "pools" in c.path or "ad-users" in c.path]
    assert looked_up == ["/rest/inventory/v1/desktop-pools", "/rest/external/v1/ad-users-or-groups"]
    assert logon is not None and logon.session == "made-0099"
    assert logon.extra["broker_session_start_ts"] == start_ms / 1000
    assert logon.spans == {} and set(logon.unmeasured.values()) == {NO_PHASES}
    assert "logon_segment_data" not in logon.extra  # the server has no segment endpoint (404)
    assert cs.logins == [{"domain": "LAB", "username": "svc-labctl", "password": API_PASSWORD}]
    assert cs.calls[-1].path == "/rest/logout"


def test_an_expired_access_token_is_refreshed_once() -> None:
    cs = ConnectionServer([SESSION], segment="raw segment text")
    with Replay(cs.route) as server:
        rest = HorizonRest(broker_api(server.url))
        assert rest.pool("sales-pool1").enabled
        cs.expire_next = True
        assert rest.logon_segment(SESSION["id"]) == "raw segment text"
    paths = [c.path for c in cs.calls]
    assert paths == [
        "/rest/login",
        "/rest/inventory/v1/desktop-pools",
        "/rest/helpdesk/v1/logon-timing/logon-segment",
        "/rest/refresh",
        "/rest/helpdesk/v1/logon-timing/logon-segment",
    ]
    assert cs.calls[-1].headers["authorization"] == "Bearer <jwt.access.token>.renewed"


def test_a_refused_api_logon_names_the_account_not_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_API_PASSWORD", "not-it")
    with Replay(ConnectionServer([]).route) as server:
        rest = HorizonRest(broker_api(server.url))
        with pytest.raises(BrokerError) as err:
            rest.pool("sales-pool1")
    assert "LAB\\svc-labctl refused (HTTP 400)" in str(err.value) and "not-it" not in str(err.value)


def test_the_connector_checks_the_pool_before_launching(tmp_path: Path) -> None:
    cs = ConnectionServer([SESSION])
    with Replay(cs.route) as server:
        cfg = ConnectorConfig.model_validate(
            {
                "kind": "horizon",
                "server": "https://cs01.lab.local",
                "pool": "{desktop}",
                "domain": "LAB",
                "broker_api": {
                    "url": server.url,
                    "user": "svc-labctl",
                    "domain": "LAB",
                    "secret": "env:HZ_API_PASSWORD",
                },
            }
        )
        conn = HorizonConnector(cfg, windows=False)
        launch = conn.launch("sales-pool1", "u1", "pw-never-used", "l-1", tmp_path)
        with pytest.raises(BrokerError, match="'closed-pool' is disabled"):
            conn.launch("closed-pool", "u1", "pw", "l-2", tmp_path)
        with pytest.raises(BrokerError, match=r"no desktop pool 'nope' \(it has: closed-pool, sales-pool1\)"):
            conn.launch("nope", "u1", "pw", "l-3", tmp_path)
        conn.launch("sales-pool1", "u2", "pw", "l-4", tmp_path)
    assert launch.argv[:3] == ["vmware-view", "--serverURL=https://cs01.lab.local", "--userName=u1"]
    assert "pw-never-used" not in " ".join(launch.argv) and launch.stdin == ""
    pool_reads = [c for c in cs.calls if c.path == "/rest/inventory/v1/desktop-pools"]
    assert len(pool_reads) == 3  # a checked pool is not asked for again


def test_without_a_broker_api_the_waterfall_says_why() -> None:
    cfg = ConnectorConfig.model_validate({"kind": "horizon", "server": "https://cs01"})
    logon, why = HorizonConnector(cfg).broker_logon("d1", "u1", 0.0, 1.0)
    assert logon is None and "no broker_api" in why
