"""Dell EMC Unity REST (``/api``): CSRF token lifecycle, re-login, real-time metric queries.

- Every request carries ``X-EMC-REST-CLIENT: true``. Login is a GET with basic auth
  (``/api/types/loginSessionInfo/instances``); the session lives in a cookie and the response
  carries ``EMC-CSRF-TOKEN``, which every POST and DELETE must echo. A 401 (session expired,
  token stale) triggers one fresh login and one retry of the request.
- Metrics: ``POST /api/types/metricRealTimeQuery/instances`` with the raw cumulative LUN counter
  paths and an interval; results are read from ``/api/types/metricQueryResult/instances?filter=
  queryId eq N`` (values per SP per LUN id, as strings); the query is deleted on stop.
  IOPS, MB/s and latency are computed from counter deltas between consecutive timestamps.
- TLS is verified unless the inventory marks the array insecure; ``verify`` is passed on every
  request so $REQUESTS_CA_BUNDLE cannot override it, and the session ignores proxy/.netrc
  settings from the environment. Every call has a timeout; 503 backs off honouring Retry-After.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import requests

from labctl.drivers.base import Backoff, TlsAdapter, parse_retry_after, requests_verify, tls_fix
from labctl.drivers.storage.base import ArrayInfo, LunCounters, StorageDriver
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import StorageArray

LUN_PREFIX = "sp.*.storage.lun.*."
COUNTER_PATHS = {
    LUN_PREFIX + "reads": "reads",
    LUN_PREFIX + "writes": "writes",
    LUN_PREFIX + "readBlocks": "read_blocks",
    LUN_PREFIX + "writeBlocks": "write_blocks",
    LUN_PREFIX + "totalIoTime": "total_io_time_us",
}
CSRF_HEADER = "EMC-CSRF-TOKEN"


class UnityError(EndpointError):
    def __init__(self, endpoint: str, action: str, reason: str, fix: str = "", status: int | None = None):
        super().__init__(endpoint, action, reason, fix)
        self.status = status


def unity_time(text: str) -> float:
    """``2016-11-15T08:30:00.000Z`` -> epoch seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def error_message(resp: requests.Response) -> str:
    try:
        err = resp.json().get("error", {})
        msgs = err.get("messages") or []
        if msgs and isinstance(msgs[0], dict):
            return str(next(iter(msgs[0].values()), ""))
    except Exception:
        pass
    return (resp.text or "")[:160]


class UnityDriver(StorageDriver):
    def __init__(
        self,
        array: StorageArray,
        *,
        timeout_s: float = 15.0,
        backoff: Backoff = Backoff(attempts=4, base_s=0.5, max_s=8.0),
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.array = array
        self.timeout_s = timeout_s
        self.backoff = backoff
        self._sleep = sleep
        self.base = array.url.rstrip("/")
        self._session: requests.Session | None = None
        self._csrf: str | None = None
        self._lock = threading.RLock()
        self._query_id: int | None = None
        self._query_paths: tuple[str, ...] = ()
        self._query_interval: int = 5
        self._newest_ts = float("-inf")  # newest complete reading already returned
        self._lun_names: dict[str, str] = {}
        self.logins = 0  # how many times we logged in (re-logins after expiry included)

    # --- session -------------------------------------------------------------------------------
    def open(self) -> UnityDriver:
        with self._lock:
            if self._session is None:
                s = requests.Session()
                s.trust_env = False
                s.mount("https://", TlsAdapter(self.array.tls, self.endpoint))
                s.headers.update(
                    {
                        "X-EMC-REST-CLIENT": "true",
                        "Accept": "application/json",
                        "Content-Type": "application/json",
                    }
                )
                self._session = s
            try:
                self._login()
            except BaseException:
                self._drop()
                raise
            return self

    @property
    def is_open(self) -> bool:
        return self._session is not None and self._csrf is not None

    def _login(self) -> None:
        assert self._session is not None
        password = resolve_credential(self.array.password, self.endpoint)
        self._session.cookies.clear()
        self._csrf = None
        resp = self._send(
            "GET",
            "/api/types/loginSessionInfo/instances",
            "log in",
            auth=(self.array.user, password),
        )
        if resp.status_code == 401:
            raise UnityError(
                self.endpoint,
                "log in",
                f"credentials rejected for user {self.array.user!r} (401)",
                f"check the user and the credential {self.array.password}",
                status=401,
            )
        if resp.status_code != 200:
            raise self._status_error("log in", resp)
        self._csrf = resp.headers.get(CSRF_HEADER)
        self.logins += 1

    def close(self) -> None:
        with self._lock:
            if self._session is None:
                return
            try:
                self.stop_metrics()
            except Exception:
                pass
            try:
                if self._csrf:
                    self._send("POST", "/api/types/loginSessionInfo/action/logout", "log out", json={})
            except Exception:
                pass
            self._drop()

    def _drop(self) -> None:
        s, self._session = self._session, None
        self._csrf = None
        if s is not None:
            s.close()

    # --- requests ------------------------------------------------------------------------------
    def _send(self, method: str, path: str, action: str, **kw: Any) -> requests.Response:
        """One exchange with timeout, explicit TLS verification and 503 backoff."""
        s = self._session
        if s is None:
            raise UnityError(self.endpoint, action, "not connected", "call open() first")
        headers = dict(kw.pop("headers", {}) or {})
        if method in ("POST", "DELETE") and self._csrf:
            headers[CSRF_HEADER] = self._csrf
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = s.request(
                    method,
                    self.base + path,
                    headers=headers,
                    timeout=self.timeout_s,
                    verify=requests_verify(self.array.tls),
                    allow_redirects=False,
                    **kw,
                )
            except requests.exceptions.SSLError as exc:
                raise UnityError(
                    self.endpoint,
                    action,
                    f"TLS verification failed: {_short(exc)}",
                    tls_fix(self.array.tls, "the array"),
                ) from None
            except requests.exceptions.Timeout:
                raise EndpointTimeout(
                    self.endpoint,
                    action,
                    f"no answer within {self.timeout_s:g} s",
                    "check the array's management port",
                ) from None
            except requests.RequestException as exc:
                raise UnityError(
                    self.endpoint,
                    action,
                    f"cannot connect: {_short(exc)}",
                    "check the array URL in the inventory and that its management service is up",
                ) from None
            if resp.status_code == 503 and attempt < self.backoff.attempts:
                self._sleep(self.backoff.delay(attempt, parse_retry_after(resp.headers.get("Retry-After"))))
                continue
            token = resp.headers.get(CSRF_HEADER)
            if token:
                self._csrf = token  # the array may rotate it; the newest wins
            return resp

    def _request(self, method: str, path: str, action: str, **kw: Any) -> requests.Response:
        """A request in the session; a 401 means the session or token expired: log in once more."""
        with self._lock:
            if self._session is None:
                raise UnityError(self.endpoint, action, "not connected", "call open() first")
            resp = self._send(method, path, action, **kw)
            if resp.status_code == 401:
                self._login()
                resp = self._send(method, path, action, **kw)
                if resp.status_code == 401:
                    raise UnityError(
                        self.endpoint,
                        action,
                        "the array rejected a fresh session (401)",
                        f"check the credential {self.array.password}",
                        status=401,
                    )
            if resp.status_code == 503:
                raise UnityError(
                    self.endpoint,
                    action,
                    f"service unavailable (503) after {self.backoff.attempts} attempts",
                    "the array is busy; retry later",
                    status=503,
                )
            return resp

    def _get_json(self, path: str, action: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        resp = self._request("GET", path, action, params=params)
        if resp.status_code != 200:
            raise self._status_error(action, resp)
        return self._json(resp, action)

    def _json(self, resp: requests.Response, action: str) -> dict[str, Any]:
        """The JSON object of a response; a body that is not JSON is an error naming the array."""
        try:
            data = resp.json()
        except ValueError:
            raise UnityError(
                self.endpoint,
                action,
                f"HTTP {resp.status_code} with a body that is not JSON: {(resp.text or '')[:120]!r}",
                "check that the URL points at the array's management REST API",
                status=resp.status_code,
            ) from None
        return data if isinstance(data, dict) else {}

    def _status_error(self, action: str, resp: requests.Response) -> UnityError:
        return UnityError(
            self.endpoint, action, f"HTTP {resp.status_code}: {error_message(resp)}", status=resp.status_code
        )

    # --- what the array is ----------------------------------------------------------------------
    def info(self) -> ArrayInfo:
        data = self._get_json(
            "/api/types/basicSystemInfo/instances",
            "read system info",
            {"fields": "name,model,softwareVersion,apiVersion"},
        )
        entries = data.get("entries") or [{}]
        c = entries[0].get("content", {})
        return ArrayInfo(
            name=str(c.get("name", "")),
            model=str(c.get("model", "")),
            software_version=str(c.get("softwareVersion", "")),
            api_version=str(c.get("apiVersion", "")),
        )

    def metric_catalog(self) -> dict[str, dict[str, Any]]:
        data = self._get_json(
            "/api/types/metric/instances",
            "read the metric catalog",
            {"fields": "id,path,isRealtimeAvailable", "per_page": "2000"},
        )
        return {
            str(e["content"]["path"]): e["content"]
            for e in data.get("entries") or []
            if "path" in e.get("content", {})
        }

    def missing_metrics(self) -> list[str]:
        catalog = self.metric_catalog()
        return [p for p in COUNTER_PATHS if not (catalog.get(p) or {}).get("isRealtimeAvailable")]

    def lun_names(self) -> dict[str, str]:
        """LUN id (``sv_1``) -> name, as metric values are keyed by id."""
        data = self._get_json("/api/types/lun/instances", "list LUNs", {"fields": "id,name"})
        names = {}
        for e in data.get("entries") or []:
            c = e.get("content", {})
            if "id" in c:
                names[str(c["id"])] = str(c.get("name") or c["id"])
        self._lun_names = names
        return names

    # --- real-time metrics ----------------------------------------------------------------------
    def start_metrics(self, interval_s: float) -> None:
        action = "start a real-time metric query"
        if self._query_id is not None:
            return
        try:
            self.lun_names()
        except UnityError:
            self._lun_names = {}
        interval = max(5, round(interval_s))  # Unity's real-time interval is at least 5 s
        resp = self._request(
            "POST",
            "/api/types/metricRealTimeQuery/instances",
            action,
            json={"paths": list(COUNTER_PATHS), "interval": interval},
        )
        if resp.status_code not in (200, 201):
            raise self._status_error(action, resp)
        content = self._json(resp, action).get("content") or {}
        if "id" not in content:
            raise UnityError(
                self.endpoint, action, "the array answered without a query id", status=resp.status_code
            )
        self._query_id = int(content["id"])
        self._query_paths = tuple(COUNTER_PATHS)
        self._query_interval = interval
        self._newest_ts = float("-inf")

    @property
    def query_id(self) -> int | None:
        return self._query_id

    def read_counters(self) -> list[LunCounters]:
        """Readings newer than the last call, one per LUN per timestamp (SPs summed)."""
        if self._query_id is None:
            raise UnityError(
                self.endpoint, "read metrics", "no real-time query running", "call start_metrics()"
            )
        action = f"read metric query {self._query_id}"
        resp = self._request(
            "GET",
            "/api/types/metricQueryResult/instances",
            action,
            params={"filter": f"queryId eq {self._query_id}", "per_page": "2000"},
        )
        if resp.status_code == 404 or (
            resp.status_code in (400, 422) and "query id" in error_message(resp).lower()
        ):
            # the array dropped the query (it expires when not read): start a fresh one
            self._query_id = None
            self.start_metrics(self._query_interval)
            return []
        if resp.status_code != 200:
            raise self._status_error(action, resp)
        return self._parse_results(self._json(resp, action))

    def _parse_results(self, data: dict[str, Any]) -> list[LunCounters]:
        """Complete readings (every counter path present) newer than the newest already returned.

        Results stay on the array for a while, so a timestamp whose paths are not all in yet is
        simply picked up by the next call.
        """
        acc: dict[tuple[str, float], dict[str, float]] = {}  # (lun, ts) -> field -> sum over SPs
        for e in data.get("entries") or []:
            c = e.get("content", {})
            field = COUNTER_PATHS.get(str(c.get("path")))
            if field is None or "timestamp" not in c:
                continue
            ts = unity_time(str(c["timestamp"]))
            if ts <= self._newest_ts:
                continue
            for _sp, per_lun in (c.get("values") or {}).items():
                if not isinstance(per_lun, dict):
                    continue
                for lun_id, raw in per_lun.items():
                    try:
                        v = float(raw)
                    except (TypeError, ValueError):
                        continue
                    lun = self._lun_names.get(str(lun_id), str(lun_id))
                    row = acc.setdefault((lun, ts), {})
                    row[field] = row.get(field, 0.0) + v
        out = []
        for (lun, ts), f in sorted(acc.items(), key=lambda kv: kv[0][1]):
            if len(f) < len(COUNTER_PATHS):
                continue
            out.append(
                LunCounters(
                    lun,
                    ts,
                    f["reads"],
                    f["writes"],
                    f["read_blocks"],
                    f["write_blocks"],
                    f["total_io_time_us"],
                )
            )
        if out:
            self._newest_ts = max(c.ts for c in out)
        return out

    def stop_metrics(self) -> None:
        qid, self._query_id = self._query_id, None
        if qid is None or self._session is None:
            return
        resp = self._request(
            "DELETE", f"/api/instances/metricRealTimeQuery/{qid}", f"delete metric query {qid}"
        )
        if resp.status_code not in (200, 204, 404):
            raise self._status_error(f"delete metric query {qid}", resp)


def _short(exc: BaseException) -> str:
    text = str(exc)
    if "Caused by" in text:
        text = text.split("Caused by", 1)[1].strip(" ()")
    return text[:200]
