"""Dell EMC Unity REST (``/api``): CSRF token lifecycle, re-login, real-time metric queries.

- Every request carries ``X-EMC-REST-CLIENT: true``. Login is a GET with basic auth
  (``/api/types/loginSessionInfo/instances``); the session lives in a cookie and the response
  carries ``EMC-CSRF-TOKEN``, which every POST and DELETE must echo. A 401 (session expired,
  token stale) triggers one fresh login and one retry of the request.
- Metrics: ``POST /api/types/metricRealTimeQuery/instances`` with the raw cumulative LUN counter
  paths and an interval; results are read from ``/api/types/metricQueryResult/instances?filter=
  queryId eq N`` (values per SP per LUN id, as strings); the query is deleted on stop.
  IOPS, MB/s and latency are computed from counter deltas between consecutive timestamps.
- Collections come in pages (``per_page``, at most 2,000; the answer's ``links`` hold ``rel: next``
  ``href: &page=N`` while more follow): every collection read follows them, as storops does. A real
  array's metric catalogue is about 2,400 entries, two pages (storops' recorded ``metric``
  collection): read as one page, the preflight called counters missing that the array has.
- TLS is verified unless the inventory marks the array insecure; ``verify`` is passed on every
  request so $REQUESTS_CA_BUNDLE cannot override it, and the session ignores proxy/.netrc
  settings from the environment. Every call has a timeout; 503 backs off honouring Retry-After.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import requests

from labctl.drivers.base import Backoff
from labctl.drivers.storage.base import (
    ArrayInfo,
    ControllerMetrics,
    LunCounters,
    MetricBatch,
    RateTracker,
    aware_epoch,
)
from labctl.drivers.storage.rest import RestDriver, RestSession, StorageApiError
from labctl.inventory.model import StorageArray

LUN_PREFIX = "sp.*.storage.lun.*."
COUNTER_PATHS = {
    LUN_PREFIX + "reads": "reads",
    LUN_PREFIX + "writes": "writes",
    LUN_PREFIX + "readBlocks": "read_blocks",
    LUN_PREFIX + "writeBlocks": "write_blocks",
    LUN_PREFIX + "totalIoTime": "total_io_time_us",
}
# The unit the driver reads each counter in, as the array's catalogue names it (unitDisplayString;
# storops' recording of a real catalogue: reads/writes "Counts", *Blocks "Blocks" of 512 bytes,
# totalIoTime "uSecs"); missing_metrics reports a counter the array defines in another unit.
COUNTER_UNITS = {
    LUN_PREFIX + "reads": "Counts",
    LUN_PREFIX + "writes": "Counts",
    LUN_PREFIX + "readBlocks": "Blocks",
    LUN_PREFIX + "writeBlocks": "Blocks",
    LUN_PREFIX + "totalIoTime": "uSecs",
}
CSRF_HEADER = "EMC-CSRF-TOKEN"
PER_PAGE = 2000  # Unity's largest page
MAX_PAGES = 1000  # a bound on a collection's pages (2 million entries), against a looping next link


class UnityError(StorageApiError):
    pass


def unity_time(text: str) -> float:
    """``2016-11-15T08:30:00.000Z`` -> epoch seconds. (refused without a zone)"""
    return aware_epoch(text)


def next_page(data: dict[str, Any]) -> int | None:
    """The page number of a collection answer's ``next`` link (``&page=2``), None on the last page."""
    for link in data.get("links") or []:
        if isinstance(link, dict) and link.get("rel") == "next":
            m = re.search(r"[?&]page=(\d+)", str(link.get("href", "")))
            if m:
                return int(m.group(1))
    return None


def error_message(resp: requests.Response) -> str:
    try:
        err = resp.json().get("error", {})
        msgs = err.get("messages") or []
        if msgs and isinstance(msgs[0], dict):
            return str(next(iter(msgs[0].values()), ""))
    except Exception:
        pass
    return (resp.text or "")[:160]


# storageProcessor health.value (Unity's HealthEnum): 5 OK, 7 OK but minor, 10 degraded, 15 minor,
# 20 major, 25 critical, 30 non-recoverable. A rebooting or failed SP reports 20 and above.
SP_FAILED_HEALTH = 20


class UnityDriver(RestDriver):
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
        self.http = RestSession(
            array,
            self.endpoint,
            array.url.rstrip("/"),
            {"X-EMC-REST-CLIENT": "true", "Accept": "application/json", "Content-Type": "application/json"},
            login=self._login,
            error_message=error_message,
            error_cls=UnityError,
            token_header=CSRF_HEADER,
            timeout_s=timeout_s,
            backoff=backoff,
            sleep=sleep,
        )
        self._query_id: int | None = None
        self._query_interval: int = 5
        self._newest_ts = float("-inf")  # newest complete reading already returned
        self._lun_names: dict[str, str] = {}
        self._rates = RateTracker()

    # --- session -------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.http.connected and self.http.token is not None

    def _login(self) -> None:
        self.basic_login("GET", "/api/types/loginSessionInfo/instances")

    def _logout(self) -> None:
        if self.http.token:
            self.http.send("POST", "/api/types/loginSessionInfo/action/logout", "log out", json={})

    def _get_json(self, path: str, action: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        data = self.http.call("GET", path, action, params=params)
        return data if isinstance(data, dict) else {}

    def _get_all(self, path: str, action: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """A collection with the entries of every page (the first page's other keys)."""
        query = {**(params or {}), "per_page": str(PER_PAGE)}
        first = self._get_json(path, action, query)
        entries = list(first.get("entries") or [])
        page, data = 1, first
        for _ in range(MAX_PAGES):
            nxt = next_page(data)
            if nxt is None or nxt <= page:
                break
            page = nxt
            data = self._get_json(path, f"{action} (page {page})", {**query, "page": str(page)})
            entries.extend(data.get("entries") or [])
        return {**first, "entries": entries}

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
        data = self._get_all(
            "/api/types/metric/instances",
            "read the metric catalog",
            {"fields": "id,path,isRealtimeAvailable,unitDisplayString"},
        )
        # A real catalogue lists some paths twice, once historical and once real-time, under two ids
        # (kpi.sp.+.utilization is 1 and 1000): a path is real-time when any of its entries is.
        out: dict[str, dict[str, Any]] = {}
        for e in data.get("entries") or []:
            c = e.get("content", {})
            if "path" not in c:
                continue
            path = str(c["path"])
            seen = out.get(path)
            out[path] = (
                {**c, "isRealtimeAvailable": bool(c.get("isRealtimeAvailable"))}
                if seen is None
                else {
                    **seen,
                    "isRealtimeAvailable": bool(
                        seen.get("isRealtimeAvailable") or c.get("isRealtimeAvailable")
                    ),
                }
            )
        return out

    def missing_metrics(self) -> list[str]:
        """Counters the array does not offer in real time, or defines in another unit than we read."""
        catalog = self.metric_catalog()
        out = []
        for p in COUNTER_PATHS:
            m = catalog.get(p) or {}
            unit = m.get("unitDisplayString")
            if not m.get("isRealtimeAvailable"):
                out.append(p)
            elif unit is not None and unit != COUNTER_UNITS[p]:
                out.append(f"{p} (the array counts {unit}, the driver reads {COUNTER_UNITS[p]})")
        return out

    def volume_names(self) -> dict[str, str]:
        """LUN id (``sv_1``) -> name, as metric values are keyed by id."""
        data = self._get_all("/api/types/lun/instances", "list LUNs", {"fields": "id,name"})
        names = {}
        for e in data.get("entries") or []:
            c = e.get("content", {})
            if "id" in c:
                names[str(c["id"])] = str(c.get("name") or c["id"])
        self._lun_names = names
        return names

    def storage_processors(self) -> list[ControllerMetrics]:
        """Each SP's state from its health (``storageProcessor`` instances), stamped with the array's time."""
        data = self._get_all(
            "/api/types/storageProcessor/instances", "list storage processors", {"fields": "id,name,health"}
        )
        ts = unity_time(str(data["updated"])) if data.get("updated") else time.time()
        out = []
        for e in data.get("entries") or []:
            c = e.get("content", {})
            health = (c.get("health") or {}).get("value", 0)
            state = "failed" if int(health) >= SP_FAILED_HEALTH else "active"
            out.append(ControllerMetrics(str(c.get("id", "")), ts, state))
        return out

    # --- real-time metrics ----------------------------------------------------------------------
    def start_metrics(self, interval_s: float) -> None:
        action = "start a real-time metric query"
        if self._query_id is not None:
            return
        try:
            self.volume_names()
        except UnityError:
            self._lun_names = {}
        interval = max(5, round(interval_s))  # Unity's real-time interval is at least 5 s
        content = (
            self.http.call(
                "POST",
                "/api/types/metricRealTimeQuery/instances",
                action,
                ok=(200, 201),
                json={"paths": list(COUNTER_PATHS), "interval": interval},
            )
            or {}
        ).get("content") or {}
        if "id" not in content:
            raise UnityError(self.endpoint, action, "the array answered without a query id")
        self._query_id = int(content["id"])
        self._query_interval = interval
        self._newest_ts = float("-inf")

    @property
    def query_id(self) -> int | None:
        return self._query_id

    def read_metrics(self) -> MetricBatch:
        """New intervals of every LUN, and the SPs' state (a failed SP's LUNs move to its peer)."""
        volumes = tuple(self._rates.feed(self.read_counters()))
        return MetricBatch(volumes=volumes, controllers=tuple(self.storage_processors()))

    def read_counters(self) -> list[LunCounters]:
        """Readings newer than the last call, one per LUN per timestamp (SPs summed)."""
        if self._query_id is None:
            raise UnityError(
                self.endpoint, "read metrics", "no real-time query running", "call start_metrics()"
            )
        action = f"read metric query {self._query_id}"
        resp = self.http.request(
            "GET",
            "/api/types/metricQueryResult/instances",
            action,
            params={"filter": f"queryId eq {self._query_id}", "per_page": str(PER_PAGE)},
        )
        if resp.status_code == 404 or (
            resp.status_code in (400, 422) and "query id" in error_message(resp).lower()
        ):
            # the array dropped the query (it expires when not read): start a fresh one
            self._query_id = None
            self.start_metrics(self._query_interval)
            return []
        if resp.status_code != 200:
            raise self.http.status_error(action, resp)
        data = self.http.json(resp, action)
        data = data if isinstance(data, dict) else {}
        page, entries = 1, list(data.get("entries") or [])
        for _ in range(MAX_PAGES):  # a long query's results span pages too
            nxt = next_page(data)
            if nxt is None or nxt <= page:
                break
            page = nxt
            data = self._get_json(
                "/api/types/metricQueryResult/instances",
                f"{action} (page {page})",
                {"filter": f"queryId eq {self._query_id}", "per_page": str(PER_PAGE), "page": str(page)},
            )
            entries.extend(data.get("entries") or [])
        return self._parse_results({"entries": entries})

    def _parse_results(self, data: dict[str, Any]) -> list[LunCounters]:
        """Complete readings (every counter path present) newer than the newest already returned.

        Results stay on the array for a while, so a timestamp whose paths are not all in yet is
        simply picked up by the next call. The SP that counted I/O in the interval's reading is
        the LUN's owner (its peer's counters stand still).
        """
        acc: dict[tuple[str, float], dict[str, float]] = {}  # (lun, ts) -> field -> sum over SPs
        owner: dict[tuple[str, float], tuple[float, str]] = {}
        for e in data.get("entries") or []:
            c = e.get("content", {})
            field = COUNTER_PATHS.get(str(c.get("path")))
            if field is None or "timestamp" not in c:
                continue
            ts = unity_time(str(c["timestamp"]))
            if ts <= self._newest_ts:
                continue
            for sp, per_lun in (c.get("values") or {}).items():
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
                    if field == "reads" and v >= owner.get((lun, ts), (-1.0, ""))[0]:
                        owner[(lun, ts)] = (v, str(sp))
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
                    controller=owner.get((lun, ts), (0.0, None))[1],
                )
            )
        if out:
            self._newest_ts = max(c.ts for c in out)
        return out

    def stop_metrics(self) -> None:
        qid, self._query_id = self._query_id, None
        if qid is None or not self.http.connected:
            return
        self.http.call(
            "DELETE",
            f"/api/instances/metricRealTimeQuery/{qid}",
            f"delete metric query {qid}",
            ok=(200, 204, 404),
        )
