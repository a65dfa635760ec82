"""The Citrix Monitor (OData v4) client: Citrix's recorded examples (Citrix Cloud's Sessions and a
Connection, developer-docs.citrix.com) and Connections made from Citrix's data model
(citrix/monitoring-api Monitor.Model.md: names, units), replayed on loopback in pages."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from labctl.launcher.config import BrokerApi
from labctl.launcher.connectors.broker import BrokerError, utc_time
from labctl.launcher.connectors.citrix_monitor import MonitorClient, logon_from
from tests.conformance.brokers.replay import Answer, Call, Replay, recorded_json

TOKEN = "tok-3f1c9e"  # a bearer token the tests hand over by reference (env:), never in an error


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# Made from the model (Monitor.Model.md, Connection): every phase field, values ours, units the
# model's (durations in ms, times UTC).
MADE_CONNECTION: dict[str, Any] = {
    "Id": 900001,
    "IsReconnect": False,
    "Protocol": "HDX",
    "LogOnStartDate": "2026-11-28T08:00:00Z",
    "LogOnEndDate": "2026-11-28T08:00:41.5Z",
    "BrokeringDuration": 1500,
    "BrokeringDate": "2026-11-28T08:00:01.5Z",
    "VMStartStartDate": "2026-11-28T08:00:02Z",
    "VMStartEndDate": "2026-11-28T08:00:20Z",
    "HdxStartDate": "2026-11-28T08:00:20.5Z",
    "HdxEndDate": "2026-11-28T08:00:23Z",
    "AuthenticationDuration": 2340,
    "GpoStartDate": "2026-11-28T08:00:26Z",
    "GpoEndDate": "2026-11-28T08:00:29.25Z",
    "LogOnScriptsStartDate": "2026-11-28T08:00:29.25Z",
    "LogOnScriptsEndDate": "2026-11-28T08:00:30Z",
    "ProfileLoadStartDate": "2026-11-28T08:00:30Z",
    "ProfileLoadEndDate": "2026-11-28T08:00:36Z",
    "InteractiveStartDate": "2026-11-28T08:00:36Z",
    "InteractiveEndDate": "2026-11-28T08:00:41.5Z",
}


def made_session(key: str, user: str, start: str, conn: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "SessionKey": key,
        "StartDate": start,
        "LogOnDuration": 41500,
        "UserName": user,  # only for the replay's filter; the real filter is User/UserName
        "Connections": [conn] if conn else [],
    }


def api(url: str, **kw: Any) -> BrokerApi:
    return BrokerApi.model_validate({"url": url, "auth": "bearer", "secret": "env:CTX_MONITOR_TOKEN", **kw})


def odata_pages(items: list[dict[str, Any]], per_page: int) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(items), per_page):
        yield items[i : i + per_page]


class Monitor:
    """Sessions in pages of ``per_page``, linked by @odata.nextLink as OData v4 does; the filter's
    ``User/UserName eq '...'`` is applied (the rest of it is the client's business)."""

    def __init__(self, sessions: list[dict[str, Any]], per_page: int = 2):
        self.sessions = sessions
        self.per_page = per_page
        self.queries: list[dict[str, str]] = []

    def route(self, call: Call) -> Answer:
        if call.headers.get("authorization") != f"CWSAuth bearer={TOKEN}":
            return Answer(401)
        if call.path != "/monitorodata/Sessions":
            return Answer(404)
        self.queries.append(call.query)
        user = call.query.get("user") or _user(call.query.get("$filter", ""))
        chosen = [x for x in self.sessions if not user or x["UserName"] == user]
        pages = list(odata_pages(chosen, self.per_page)) or [[]]
        page = int(call.query.get("page", "0"))
        body: dict[str, Any] = {
            "@odata.context": "https://api.cloud.com/monitorodata/$metadata#Sessions",
            "value": pages[page],
        }
        if page + 1 < len(pages):
            body["@odata.nextLink"] = f"{call.base_url}/monitorodata/Sessions?page={page + 1}&user={user}"
        return Answer.json(body)


def _user(flt: str) -> str:
    m = re.search(r"User/UserName eq '([^']*)'", flt)
    return m.group(1) if m else ""


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_MONITOR_TOKEN", TOKEN)


def test_the_recorded_sessions_times_are_utc_and_a_null_duration_stays_unmeasured() -> None:
    s = recorded_json("citrix_monitor/sessions_cloud_example.json")["value"][0]
    assert utc_time(s["StartDate"], "StartDate") == ts("2024-07-31T11:22:37.473")
    logon = logon_from(s, None)
    assert "logon_total_s" not in logon.extra  # LogOnDuration null: no total is made up
    assert set(logon.unmeasured) == {
        "brokering",
        "authentication",
        "machine_ready",
        "protocol_connect",
        "group_policy",
        "profile_load",
        "shell_ready",
    }


def test_the_recorded_connection_two_digit_fractions_and_null_brokering() -> None:
    """Citrix's recorded Connection: '07:50:00.33Z' (two fraction digits) and BrokeringDuration null."""
    conn = recorded_json("citrix_monitor/connection_cloud_example_cut.json")
    logon = logon_from({"SessionKey": "k", "LogOnDuration": None}, conn)
    assert logon.extra["logon_end_ts"] - logon.extra["logon_start_ts"] == pytest.approx(13.023)
    assert "brokering" not in logon.spans
    assert logon.unmeasured["brokering"] == "the Monitor recorded no BrokeringDuration for this connection"
    assert logon.extra["protocol"] == "HDX"


def test_durations_are_milliseconds_and_phases_are_date_pairs() -> None:
    """The model: BrokeringDuration and AuthenticationDuration in ms, the rest start/end pairs."""
    logon = logon_from(made_session("k", "u1", "2026-11-28T08:00:00Z", None), MADE_CONNECTION)
    d = {k: round(v.duration_s, 3) for k, v in logon.spans.items()}
    assert d == {
        "brokering": 1.5,  # 1500 read as seconds would be 25 minutes
        "authentication": 2.34,
        "machine_ready": 18.0,
        "protocol_connect": 2.5,
        "group_policy": 3.25,
        "profile_load": 6.0,
        "shell_ready": 5.5,
    }
    assert logon.spans["brokering"].end_ts == ts("2026-11-28T08:00:01.5")
    assert logon.spans["profile_load"].source == "Connection.ProfileLoadStartDate..ProfileLoadEndDate"
    assert logon.extra["logon_total_s"] == 41.5 and logon.extra["logon_scripts_s"] == 0.75
    assert logon.unmeasured == {}


def test_a_time_without_zone_is_utc_not_the_launchers_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Older Monitor endpoints print times without a zone; Citrix defines them as UTC. On a launcher
    not on UTC, reading them as local time moves every phase by the zone's offset."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        naive = datetime.fromisoformat("2024-07-31T11:22:37.473").timestamp()  # the local reading
        assert utc_time("2024-07-31T11:22:37.473", "StartDate") == ts("2024-07-31T11:22:37.473")
        assert utc_time("2024-07-31T11:22:37.473", "StartDate") != naive
        assert utc_time("2024-07-31T13:22:37.473+02:00", "StartDate") == ts("2024-07-31T11:22:37.473")
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_the_logon_is_found_on_a_later_page(token: None) -> None:
    """Three pages of sessions; the user's is on the third. Reading only the first page would say
    the Monitor has no record of the logon."""
    launch = ts("2026-11-28T08:00:00")
    earlier = [
        made_session(f"e{i}", "u1", "2026-11-28T07:00:00Z", None) for i in range(4)
    ]  # before the window
    others = [made_session(f"o{i}", "other", "2026-11-28T08:00:00Z", None) for i in range(2)]
    mine = made_session("mine", "u1", "2026-11-28T08:00:00Z", MADE_CONNECTION)
    monitor = Monitor([*earlier, *others, mine], per_page=2)
    with Replay(monitor.route) as server:
        client = MonitorClient(api(server.url + "/monitorodata", customer_id="cust1"))
        found = [s["SessionKey"] for s in client.collection("Sessions", {"$filter": "x"})]
        logon = client.logon("LAB\\u1", launch - 120, launch + 300)
        client.close()
    assert found == ["e0", "e1", "e2", "e3", "o0", "o1", "mine"]
    assert logon is not None and logon.session == "mine"
    assert logon.spans["machine_ready"].duration_s == 18.0
    first = monitor.queries[4]  # the logon's first request (after the four pages of the listing)
    assert first["$filter"] == "User/UserName eq 'u1' and StartDate ge 2026-11-28T07:58:00Z"
    assert first["$expand"].startswith("Connections($select=Id,IsReconnect,")


def test_more_pages_than_allowed_is_refused_not_cut(token: None) -> None:
    monitor = Monitor(
        [made_session(f"o{i}", "x", "2026-11-28T07:59:00Z", None) for i in range(6)], per_page=2
    )
    with Replay(monitor.route) as server:
        client = MonitorClient(api(server.url + "/monitorodata", max_pages=2))
        with pytest.raises(BrokerError, match="more than 2 pages"):
            list(client.collection("Sessions", {}))
        client.close()


def test_a_refused_token_is_reported_without_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_MONITOR_TOKEN", "wrong-token")
    with Replay(Monitor([]).route) as server:
        client = MonitorClient(api(server.url + "/monitorodata"))
        with pytest.raises(BrokerError) as err:
            client.logon("u1", 0.0, 1.0)
        client.close()
    assert "HTTP 401" in str(err.value) and "wrong-token" not in str(err.value)


def test_a_secret_must_be_a_reference() -> None:
    with pytest.raises(ValueError, match="secret"):
        BrokerApi.model_validate({"url": "https://ddc", "auth": "basic", "secret": "Passw0rd"})
