"""Citrix's Monitor service (OData v4): one logon's phases, as Director shows them.

The phases live on the ``Connection`` entity (one per connect or reconnect of a ``Session``), not
on the session, as Citrix's data model defines them (citrix/monitoring-api,
docs/api-reference/Monitor.Model.md): ``BrokeringDuration`` and ``AuthenticationDuration`` are
durations in **milliseconds** (the model: "Authentication Duration in milliseconds"; for
``BrokeringDuration`` it states no unit, and milliseconds is how its summaries and independent
Monitor clients read it), every other phase is a pair of times (``VMStartStartDate``/``VMStartEndDate``, ``HdxStartDate``/``HdxEndDate``,
``GpoStartDate``/``GpoEndDate``, ``LogOnScriptsStartDate``/``EndDate``,
``ProfileLoadStartDate``/``EndDate``, ``InteractiveStartDate``/``EndDate``); there are no
``GpoDuration`` or ``ProfileLoadDuration`` fields. ``Session.LogOnDuration`` is the whole logon in
milliseconds. Times are UTC (``...Z``). Collections come in pages: the client follows
``@odata.nextLink`` until there is none, and refuses (never cuts) a collection longer than
``max_pages``.

On premises the service is ``https://<delivery-controller>/Citrix/Monitor/OData/v4/Data`` (Windows
authentication; enable Basic on its IIS site for ``auth: basic``); in Citrix Cloud it is
``https://api.cloud.com/monitorodata`` with ``Authorization: CWSAuth bearer=<token>`` and
``Citrix-CustomerId`` (``auth: bearer``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import requests

from labctl.launcher.config import BrokerApi
from labctl.launcher.connectors.broker import (
    BrokerError,
    BrokerLogon,
    BrokerSpan,
    require_tls,
    resolve_secret,
    transport_error,
    utc_time,
)

BROKER = "citrix-monitor"
# Waterfall phase -> the Connection's (start, end) time fields.
DATE_PAIRS = {
    "machine_ready": ("VMStartStartDate", "VMStartEndDate"),
    "protocol_connect": ("HdxStartDate", "HdxEndDate"),
    "group_policy": ("GpoStartDate", "GpoEndDate"),
    "profile_load": ("ProfileLoadStartDate", "ProfileLoadEndDate"),
    "shell_ready": ("InteractiveStartDate", "InteractiveEndDate"),
}
# Waterfall phase -> the Connection's duration field, in milliseconds.
MS_FIELDS = {"brokering": "BrokeringDuration", "authentication": "AuthenticationDuration"}
WHY_NULL = {
    "machine_ready": "the Monitor recorded no VM start (VMStartStartDate null): the desktop was already on",
    "protocol_connect": "the Monitor recorded no HDX connection times (HdxStartDate null: an older Workspace app)",
    "group_policy": "the Monitor recorded no group policy times (GpoStartDate null: no GPOs applied or none reported)",
    "profile_load": "the Monitor recorded no profile load times (ProfileLoadStartDate null)",
    "shell_ready": "the Monitor recorded no interactive-session times (InteractiveStartDate null)",
    "brokering": "the Monitor recorded no BrokeringDuration for this connection",
    "authentication": "the Monitor recorded no AuthenticationDuration for this connection",
}
SELECT = (
    "Id,IsReconnect,Protocol,LogOnStartDate,LogOnEndDate,BrokeringDuration,BrokeringDate,"
    + ",".join(f for pair in DATE_PAIRS.values() for f in pair)
    + ",AuthenticationDuration,LogOnScriptsStartDate,LogOnScriptsEndDate"
)


class MonitorClient:
    def __init__(self, api: BrokerApi, session: requests.Session | None = None):
        require_tls(api.url, api.verify_tls, "connector.broker_api.url")
        self.api = api
        self.base = api.url.rstrip("/")
        self.http = session or requests.Session()
        self.http.headers["Accept"] = "application/json"
        if api.auth == "bearer":
            token = resolve_secret(api.secret, "connector.broker_api.secret")
            self.http.headers["Authorization"] = f"CWSAuth bearer={token}"
            if api.customer_id:
                self.http.headers["Citrix-CustomerId"] = api.customer_id
        elif api.auth == "basic":
            user = f"{api.domain}\\{api.user}" if api.domain else api.user
            self.http.auth = (user, resolve_secret(api.secret, "connector.broker_api.secret"))
        else:
            raise BrokerError("connector.broker_api.auth: the Citrix Monitor service takes basic or bearer")

    def close(self) -> None:
        self.http.close()

    def get(self, url: str, params: dict[str, str] | None, what: str) -> dict[str, Any]:
        try:
            # verify per call: a Session's verify=False loses to REQUESTS_CA_BUNDLE (psf/requests#3829)
            r = self.http.get(url, params=params, timeout=self.api.timeout_s, verify=self.api.verify_tls)
        except requests.RequestException as exc:
            raise BrokerError(f"Citrix Monitor {self.base}: {what} failed ({transport_error(exc)})") from None
        if r.status_code in (401, 403):
            raise BrokerError(
                f"Citrix Monitor {self.base}: {what} refused (HTTP {r.status_code}); the API account needs "
                "read-only administrator rights on the site"
            )
        if r.status_code >= 400:
            raise BrokerError(f"Citrix Monitor {self.base}: {what} answered HTTP {r.status_code}")
        try:
            body = r.json()
        except ValueError:
            raise BrokerError(f"Citrix Monitor {self.base}: {what} did not answer JSON (OData v4?)") from None
        if not isinstance(body, dict):
            raise BrokerError(f"Citrix Monitor {self.base}: {what} answered no OData object")
        return body

    def collection(self, entity: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Every entity of a query, page after page (``@odata.nextLink``)."""
        url: str | None = f"{self.base}/{entity}"
        query: dict[str, str] | None = params
        for page in range(self.api.max_pages):
            assert url is not None
            body = self.get(url, query, f"{entity} (page {page + 1})")
            for item in body.get("value") or []:
                if isinstance(item, dict):
                    yield item
            url, query = body.get("@odata.nextLink"), None  # the link carries the query
            if not url:
                return
        raise BrokerError(
            f"Citrix Monitor {self.base}: {entity} has more than {self.api.max_pages} pages; "
            "narrow the query or raise broker_api.max_pages"
        )

    def logon(self, user: str, since_ts: float, until_ts: float) -> BrokerLogon | None:
        """The first (non-reconnect) connection of ``user``'s session that started in the window."""
        since = _odata_time(since_ts)
        name = user.split("\\")[-1].replace("'", "''")
        params = {
            "$filter": f"User/UserName eq '{name}' and StartDate ge {since}",
            "$select": "SessionKey,StartDate,LogOnDuration",
            "$expand": f"Connections($select={SELECT})",
            "$orderby": "StartDate asc",
        }
        for s in self.collection("Sessions", params):
            start = utc_time(s.get("StartDate"), "Session.StartDate")
            if start is None or not since_ts <= start <= until_ts:
                continue  # the filter asked for these; a session outside the window is not this logon
            conns = [
                c for c in s.get("Connections") or [] if isinstance(c, dict) and not c.get("IsReconnect")
            ]
            return logon_from(s, conns[0] if conns else None)
        return None


def _odata_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ms(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise BrokerError(f"Citrix Monitor: {what} is {value!r}, not milliseconds")
    return float(value) / 1000.0


def logon_from(session: dict[str, Any], conn: dict[str, Any] | None) -> BrokerLogon:
    """The waterfall phases of one logon: Session (total) and its first Connection (phases)."""
    key = str(session.get("SessionKey", ""))
    extra: dict[str, Any] = {}
    total = _ms(session.get("LogOnDuration"), "Session.LogOnDuration")
    if total is not None:
        extra["logon_total_s"] = round(total, 3)
    if conn is None:
        why = "the Monitor has no connection record for this session yet (it consolidates after the logon)"
        return BrokerLogon(BROKER, key, {}, {p: why for p in [*MS_FIELDS, *DATE_PAIRS]}, extra)
    spans: dict[str, BrokerSpan] = {}
    unmeasured: dict[str, str] = {}
    for phase, fld in MS_FIELDS.items():
        dur = _ms(conn.get(fld), f"Connection.{fld}")
        if dur is None:
            unmeasured[phase] = WHY_NULL[phase]
            continue
        end = (
            utc_time(conn.get("BrokeringDate"), "Connection.BrokeringDate") if phase == "brokering" else None
        )
        spans[phase] = BrokerSpan(
            dur, f"Connection.{fld} (ms)", start_ts=end - dur if end is not None else None, end_ts=end
        )
    for phase, (a, b) in DATE_PAIRS.items():
        start, end = utc_time(conn.get(a), f"Connection.{a}"), utc_time(conn.get(b), f"Connection.{b}")
        if start is None or end is None or end < start:
            unmeasured[phase] = WHY_NULL[phase]
            continue
        spans[phase] = BrokerSpan(end - start, f"Connection.{a}..{b}", start_ts=start, end_ts=end)
    scripts = (
        utc_time(conn.get("LogOnScriptsStartDate"), "Connection.LogOnScriptsStartDate"),
        utc_time(conn.get("LogOnScriptsEndDate"), "Connection.LogOnScriptsEndDate"),
    )
    if scripts[0] is not None and scripts[1] is not None:
        extra["logon_scripts_s"] = round(scripts[1] - scripts[0], 3)  # no waterfall phase of its own
    logon = (
        utc_time(conn.get("LogOnStartDate"), "Connection.LogOnStartDate"),
        utc_time(conn.get("LogOnEndDate"), "Connection.LogOnEndDate"),
    )
    if logon[0] is not None and logon[1] is not None:
        extra["logon_start_ts"], extra["logon_end_ts"] = logon
    extra["protocol"] = conn.get("Protocol")
    return BrokerLogon(BROKER, key, spans, unmeasured, extra)
