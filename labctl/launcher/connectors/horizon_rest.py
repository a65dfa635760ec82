"""The Horizon Server REST API (Connection Server 7.10 and later): the pool a launch asks for and the
session the broker made of it.

From VMware's published API reference (the OpenAPI description of Horizon 2111; the "Horizon
Server REST Pagination and Filter Guide"):

- ``POST /rest/login`` ``{domain, username, password}`` gives ``access_token`` and
  ``refresh_token``; calls carry ``Authorization: Bearer``; a 401 is answered once with
  ``POST /rest/refresh`` ``{refresh_token}``; ``POST /rest/logout`` ends it.
- Paged lists take ``page`` and ``size`` (both or neither; size at most 1,000) and say there is
  more with the response header ``HAS_MORE_RECORDS``; the client reads until it is absent or false.
  Filters are JSON in ``filter`` (``{"type":"And","filters":[{"type":"Equals",...}]}``).
- Times are epoch **milliseconds** (``SessionInfo.start_time``, ``disconnected_time``);
  ``idle_duration`` is in minutes and ``last_session_duration_ms`` in milliseconds.

What Horizon does *not* give over this API is the logon's phases: the Help Desk logon segments
(Brokering, VM Start, Authentication, GPO load, Profile load, Interactive) are served from Horizon
2312 at ``GET /rest/helpdesk/v1/logon-timing/logon-segment?session_id=`` as one string whose format
the reference does not publish ("<logon Segment>"). The client keeps that string (bounded) beside
the waterfall; it maps none of it onto phases until a real Connection Server's answer is recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests

from labctl.launcher.config import BrokerApi
from labctl.launcher.connectors.broker import (
    PHASES,
    BrokerError,
    BrokerLogon,
    epoch_ms,
    require_tls,
    resolve_secret,
    transport_error,
)

BROKER = "horizon-rest"
PAGE_SIZE = 500  # the guide's limit is 1,000
MAX_SEGMENT_CHARS = 8192
NO_PHASES = (
    "Horizon's REST API gives no logon phases: its logon segments (Brokering, VM Start, Authentication, "
    "GPO load, Profile load, Interactive) come as a string of unpublished format from "
    "/rest/helpdesk/v1/logon-timing/logon-segment (Horizon 2312+); kept, not mapped"
)


@dataclass(frozen=True)
class Pool:
    id: str
    name: str
    display_name: str
    enabled: bool


@dataclass(frozen=True)
class HorizonSession:
    id: str
    user_id: str
    desktop_pool_id: str
    machine_id: str
    state: str
    protocol: str
    start_ts: float | None  # epoch seconds (the API gives milliseconds)


def equals(name: str, value: str) -> dict[str, str]:
    return {"type": "Equals", "name": name, "value": value}


class HorizonRest:
    """One API account's conversation with one Connection Server; thread-safe, logs in lazily."""

    def __init__(self, api: BrokerApi, session: requests.Session | None = None):
        require_tls(api.url, api.verify_tls, "connector.broker_api.url")
        self.api = api
        self.base = api.url.rstrip("/")
        if not self.base.endswith("/rest"):
            self.base += "/rest"
        self.http = session or requests.Session()  # verify is given per call (psf/requests#3829)
        self._lock = threading.Lock()
        self._access = ""
        self._refresh = ""
        self._ids: dict[tuple[str, str], str] = {}  # (kind, name) -> id: pools and users do not move in a run

    # --- authentication ---------------------------------------------------------------------------

    def _post_json(self, path: str, body: dict[str, str], what: str) -> requests.Response:
        try:
            return self.http.post(
                f"{self.base}{path}", json=body, timeout=self.api.timeout_s, verify=self.api.verify_tls
            )
        except requests.RequestException as exc:
            raise BrokerError(f"Horizon {self.base}: {what} failed ({transport_error(exc)})") from None

    def login(self) -> None:
        if self.api.auth != "password":
            raise BrokerError("connector.broker_api.auth: the Horizon REST API logs on with password")
        body = {
            "domain": self.api.domain,
            "username": self.api.user,
            "password": resolve_secret(self.api.secret, "connector.broker_api.secret"),
        }
        r = self._post_json("/login", body, "login")
        if r.status_code != 200:
            raise BrokerError(
                f"Horizon {self.base}: login as {self.api.domain}\\{self.api.user} refused (HTTP {r.status_code}); "
                "the account needs a Horizon administrator role (read-only is enough); UPN logon is not supported"
            )
        tokens = _json(r, "login")
        self._access, self._refresh = (
            str(tokens.get("access_token", "")),
            str(tokens.get("refresh_token", "")),
        )
        if not self._access:
            raise BrokerError(f"Horizon {self.base}: login answered no access_token")

    def _renew(self) -> None:
        if self._refresh:
            r = self._post_json("/refresh", {"refresh_token": self._refresh}, "refresh")
            if r.status_code == 200:
                self._access = str(_json(r, "refresh").get("access_token", "")) or self._access
                return
        self.login()

    def logout(self) -> None:
        with self._lock:
            if self._refresh:
                try:
                    self._post_json("/logout", {"refresh_token": self._refresh}, "logout")
                except BrokerError:
                    pass  # the token expires by itself
            self._access = self._refresh = ""
        self.http.close()

    # --- calls ------------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, str] | None, what: str) -> requests.Response:
        with self._lock:
            if not self._access:
                self.login()
            for attempt in range(2):
                try:
                    r = self.http.get(
                        f"{self.base}{path}",
                        params=params,
                        headers={"Authorization": f"Bearer {self._access}"},
                        timeout=self.api.timeout_s,
                        verify=self.api.verify_tls,
                    )
                except requests.RequestException as exc:
                    raise BrokerError(
                        f"Horizon {self.base}: {what} failed ({transport_error(exc)})"
                    ) from None
                if r.status_code == 401 and attempt == 0:
                    self._renew()  # the access token expired: refresh it once, else log on again
                    continue
                break
        if r.status_code == 403:
            raise BrokerError(f"Horizon {self.base}: {what} forbidden; the API account lacks the privilege")
        if r.status_code >= 400:
            raise BrokerError(f"Horizon {self.base}: {what} answered HTTP {r.status_code}")
        return r

    def paged(self, path: str, filters: list[dict[str, str]], what: str) -> Iterator[dict[str, Any]]:
        params: dict[str, str] = {"size": str(PAGE_SIZE)}
        if filters:
            flt = filters[0] if len(filters) == 1 else {"type": "And", "filters": filters}
            params["filter"] = json.dumps(flt, separators=(",", ":"))
        for page in range(1, self.api.max_pages + 1):
            r = self.get(path, {**params, "page": str(page)}, f"{what} (page {page})")
            items = _json_list(r, what)
            yield from items
            if not _more(r) or not items:
                return
        raise BrokerError(
            f"Horizon {self.base}: {what} has more than {self.api.max_pages} pages of {PAGE_SIZE}; "
            "raise broker_api.max_pages"
        )

    # --- what the connector asks ------------------------------------------------------------------

    def pool(self, name: str) -> Pool:
        r = self.get("/inventory/v1/desktop-pools", None, "desktop pools")
        pools = [
            Pool(
                str(p.get("id", "")),
                str(p.get("name", "")),
                str(p.get("display_name", "")),
                bool(p.get("enabled")),
            )
            for p in _json_list(r, "desktop pools")
        ]
        found = [p for p in pools if name in (p.name, p.display_name, p.id)]
        if not found:
            names = ", ".join(sorted(p.name for p in pools)[:10]) or "none"
            raise BrokerError(f"Horizon {self.base} has no desktop pool {name!r} (it has: {names})")
        return found[0]

    def user_sid(self, login_name: str, domain: str) -> str:
        filters = [equals("login_name", login_name)]
        if domain and "." in domain:
            filters.append(equals("domain", domain))  # the filter takes the DNS name, not NetBIOS
        for u in self.paged("/external/v1/ad-users-or-groups", filters, "AD users"):
            if not u.get("group") and str(u.get("login_name", "")).lower() == login_name.lower():
                return str(u.get("id", ""))
        raise BrokerError(f"Horizon {self.base}: no AD user {login_name!r} is known to the Connection Server")

    def sessions(self, user_sid: str, pool_id: str) -> list[HorizonSession]:
        filters = [equals("user_id", user_sid), equals("desktop_pool_id", pool_id)]
        return [session_from(s) for s in self.paged("/inventory/v1/sessions", filters, "sessions")]

    def logon_segment(self, session_id: str) -> str | None:
        """The Help Desk logon segment string (Horizon 2312+), or None where the server has none."""
        try:
            r = self.get(
                "/helpdesk/v1/logon-timing/logon-segment", {"session_id": session_id}, "logon segment"
            )
        except BrokerError as exc:
            if "HTTP 404" in str(exc):
                return None  # older servers have no such endpoint; newer ones 404 an unknown session
            raise
        data = _json(r, "logon segment").get("logon_segment_data")
        return str(data)[:MAX_SEGMENT_CHARS] if data is not None else None

    def _cached(self, kind: str, name: str, find: Callable[[], str]) -> str:
        with self._lock:
            known = self._ids.get((kind, name))
        if known is None:
            known = find()
            with self._lock:
                self._ids[(kind, name)] = known
        return known

    def logon(
        self, user: str, domain: str, pool_name: str, since_ts: float, until_ts: float
    ) -> BrokerLogon | None:
        pool_id = self._cached("pool", pool_name, lambda: self.pool(pool_name).id)
        login = user.split("\\")[-1]
        sid = self._cached("user", f"{domain}\\{login}", lambda: self.user_sid(login, domain))
        mine = [
            s
            for s in self.sessions(sid, pool_id)
            if s.start_ts is not None and since_ts <= s.start_ts <= until_ts
        ]
        if not mine:
            return None
        s = min(mine, key=lambda x: x.start_ts or 0.0)
        extra: dict[str, Any] = {
            "broker_session_start_ts": s.start_ts,
            "protocol": s.protocol,
            "state": s.state,
        }
        segment = self.logon_segment(s.id)
        if segment is not None:
            extra["logon_segment_data"] = segment
        # every phase of the logon itself; the first workload operation is the workload's to time
        unmeasured = {p: NO_PHASES for p in PHASES if p != "first_operation"}
        return BrokerLogon(BROKER, s.id, {}, unmeasured, extra)


def session_from(raw: dict[str, Any]) -> HorizonSession:
    return HorizonSession(
        id=str(raw.get("id", "")),
        user_id=str(raw.get("user_id", "")),
        desktop_pool_id=str(raw.get("desktop_pool_id", "")),
        machine_id=str(raw.get("machine_id", "")),
        state=str(raw.get("session_state", "")),
        protocol=str(raw.get("session_protocol", "")),
        start_ts=epoch_ms(raw.get("start_time"), "SessionInfo.start_time"),
    )


def _more(r: requests.Response) -> bool:
    return str(r.headers.get("HAS_MORE_RECORDS", "")).strip().lower() == "true"


def _json(r: requests.Response, what: str) -> dict[str, Any]:
    try:
        body = r.json()
    except ValueError:
        raise BrokerError(f"Horizon: {what} did not answer JSON") from None
    if not isinstance(body, dict):
        raise BrokerError(f"Horizon: {what} answered no JSON object")
    return body


def _json_list(r: requests.Response, what: str) -> list[dict[str, Any]]:
    try:
        body = r.json()
    except ValueError:
        raise BrokerError(f"Horizon: {what} did not answer JSON") from None
    if not isinstance(body, list):
        raise BrokerError(f"Horizon: {what} answered no JSON list")
    return [x for x in body if isinstance(x, dict)]
