"""Dell PowerStore REST (``/api/rest``): login session, DELL-EMC-TOKEN, ``metrics/generate`` samples.

Shapes as gopowerstore (``api/api.go``, ``metrics.go``, ``metrics_types.go``) and PyPowerStore
(``metrics.py``: ``get_performance_metrics(entity, entity_id, interval)``) use them:

- login: ``GET /api/rest/login_session`` with basic auth; the session lives in the ``auth_cookie``
  cookie and every answer carries ``DELL-EMC-TOKEN``, sent back on every request. A 403 means the
  session ended: one fresh login and one retry (what gopowerstore does); 401 is a wrong password.
- metrics: ``POST /api/rest/metrics/generate`` ``{"entity": "performance_metrics_by_volume",
  "entity_id": <volume id>, "interval": "Twenty_Sec"}`` answers the array's samples, oldest first,
  each stamped with the end of its period. Units: IOPS per second, ``*_bandwidth`` bytes/s,
  ``avg_*_latency`` microseconds, ``avg_*_size`` bytes; a sample with ``repeat_count`` n stands for n
  identical periods, the first ending at its ``timestamp``. Rolled-up intervals (``Five_Mins``) carry
  the period's averages as ``avg_read_iops`` etc.
- collections (``GET /volume``, ``/node``, ...) answer at most ``limit`` objects (100 when none is
  given): a partial answer is ``206 Partial Content`` with ``Content-Range: first-last/total``, and
  the rest is read with ``offset`` / ``limit`` (at most 2,000), as PyPowerStore's client does
  (``client.py``: ``all_pages``; ``constants.py``: ``OFFSET``, ``MAX_LIMIT``). The driver took 206
  for an error before: an appliance with more than 100 volumes could not be listed at all.
- controllers: nodes (``/node``) and their hardware state (``/hardware?type=eq.Node``:
  ``lifecycle_state`` Healthy / Failed), with ``performance_metrics_by_node`` for their IOPS.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import requests

from labctl.drivers.base import Backoff
from labctl.drivers.storage.base import (
    KB,
    MB,
    ArrayInfo,
    ControllerMetrics,
    MetricBatch,
    VolumeMetrics,
    aware_epoch,
)
from labctl.drivers.storage.rest import RestDriver, RestSession, StorageApiError
from labctl.inventory.model import StorageArray

TOKEN_HEADER = "DELL-EMC-TOKEN"
VOLUME_ENTITY = "performance_metrics_by_volume"
APPLIANCE_ENTITY = "performance_metrics_by_appliance"
NODE_ENTITY = "performance_metrics_by_node"
MAX_LIMIT = 2000  # the most objects one collection request may ask for (limit=)
MAX_PAGES = 1000  # a bound on the requests for one collection
CONTENT_RANGE = re.compile(r"^\s*(\d+)-(\d+)/(\d+)\s*$")
INTERVALS_S = {"Twenty_Sec": 20.0, "Five_Mins": 300.0, "One_Hour": 3600.0, "One_Day": 86400.0}
NEEDED_FIELDS = (
    "read_iops",
    "write_iops",
    "avg_read_latency",
    "avg_write_latency",
    "read_bandwidth",
    "timestamp",
)


class PowerStoreError(StorageApiError):
    pass


def error_message(resp: requests.Response) -> str:
    """The first ``message_l10n`` of PowerStore's error body (``{"messages": [...]}``)."""
    try:
        msgs = resp.json().get("messages") or []
        if msgs and isinstance(msgs[0], dict):
            return str(msgs[0].get("message_l10n") or msgs[0].get("code") or "")
    except Exception:
        pass
    return (resp.text or "")[:160]


def powerstore_time(text: str) -> float:
    """``2020-05-11T07:40:20Z`` (or with an offset / fraction) -> epoch seconds. (refused without a zone)"""
    return aware_epoch(text)


def sample_metrics(volume: str, s: dict[str, Any], interval_s: float) -> list[VolumeMetrics]:
    """One ``performance_metrics_by_volume`` sample as normalised metrics, one per period it stands for."""

    def f(name: str) -> float:
        # rolled-up intervals carry the period's average as avg_<name>
        v = s.get(f"avg_{name}", s.get(name))
        return float(v) if v is not None else 0.0

    r_iops, w_iops = f("read_iops"), f("write_iops")
    ios = r_iops + w_iops
    r_lat = float(s.get("avg_read_latency") or 0.0) / 1000.0
    w_lat = float(s.get("avg_write_latency") or 0.0) / 1000.0
    lat = float(s.get("avg_latency") or 0.0) / 1000.0
    ts0 = powerstore_time(str(s["timestamp"]))
    out = []
    for k in range(max(1, int(s.get("repeat_count") or 1))):
        out.append(
            VolumeMetrics(
                volume=volume,
                ts=ts0 + k * interval_s,
                interval_s=interval_s,
                read_iops=r_iops,
                write_iops=w_iops,
                read_mb_s=f("read_bandwidth") / MB,
                write_mb_s=f("write_bandwidth") / MB,
                read_latency_ms=r_lat if r_iops > 0 else None,
                write_latency_ms=w_lat if w_iops > 0 else None,
                latency_ms=lat if ios > 0 else None,
                io_size_kb=float(s.get("avg_io_size") or 0.0) / KB if ios > 0 else None,
            )
        )
    return out


class PowerStoreDriver(RestDriver):
    def __init__(
        self,
        array: StorageArray,
        *,
        timeout_s: float = 15.0,
        backoff: Backoff = Backoff(attempts=4, base_s=0.5, max_s=8.0),
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.array = array
        base = array.url.rstrip("/")
        self.http = RestSession(
            array,
            self.endpoint,
            base if base.endswith("/api/rest") else base + "/api/rest",
            {"Accept": "application/json", "Content-Type": "application/json"},
            login=self._login,
            error_message=error_message,
            error_cls=PowerStoreError,
            expired_status=(403,),
            token_header=TOKEN_HEADER,
            token_methods=("GET", "POST", "PATCH", "DELETE", "PUT"),
            timeout_s=timeout_s,
            backoff=backoff,
            sleep=sleep,
        )
        self.interval = "Twenty_Sec"
        self._volumes: dict[str, str] = {}  # id -> name
        self._nodes: dict[str, dict[str, Any]] = {}  # id -> node
        self._newest: dict[str, float] = {}  # volume id -> newest sample end already returned
        self._started = False

    # --- session -------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.http.connected and self.http.token is not None

    def _login(self) -> None:
        self.basic_login("GET", "/login_session")

    def _logout(self) -> None:
        if self.http.token:
            self.http.send("POST", "/logout", "log out")

    def _get(self, path: str, action: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Every object of a collection: pages of ``MAX_LIMIT`` while the array answers 206."""
        out: list[dict[str, Any]] = []
        offset = 0
        for _ in range(MAX_PAGES):
            query = {**(params or {}), "limit": str(MAX_LIMIT), "offset": str(offset)}
            step = f"{action} (from {offset})" if offset else action
            resp = self.http.request("GET", path, step, params=query)
            if resp.status_code not in (200, 206):
                raise self.http.status_error(step, resp)
            body = self.http.json(resp, step) if resp.content else []
            if isinstance(body, list):
                out.extend(d for d in body if isinstance(d, dict))
            if resp.status_code != 206:
                break
            m = CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if m is None:
                raise PowerStoreError(
                    self.endpoint,
                    step,
                    f"206 Partial Content without a Content-Range ({resp.headers.get('Content-Range')!r})",
                )
            last, total = int(m.group(2)), int(m.group(3))
            if last + 1 >= total or last + 1 <= offset:
                break
            offset = last + 1
        return out

    def _generate(self, entity: str, entity_id: str, interval: str | None = None) -> list[dict[str, Any]]:
        body = {"entity": entity, "entity_id": entity_id, "interval": interval or self.interval}
        data = self.http.call("POST", "/metrics/generate", f"read {entity} of {entity_id}", json=body)
        return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []

    # --- what the array is ----------------------------------------------------------------------
    def info(self) -> ArrayInfo:
        appliance = (self._get("/appliance", "read the appliance", {"select": "id,name,model"}) or [{}])[0]
        software = (
            self._get("/software_installed", "read the software version", {"select": "release_version"})
            or [{}]
        )[0]
        release = str(software.get("release_version", ""))
        return ArrayInfo(
            name=str(appliance.get("name", "")),
            model=str(appliance.get("model", "")),
            software_version=release,
            api_version=release,  # the REST API is versioned with the release
        )

    def missing_metrics(self) -> list[str]:
        appliance = (self._get("/appliance", "read the appliance", {"select": "id"}) or [{}])[0]
        samples = self._generate(APPLIANCE_ENTITY, str(appliance.get("id", "A1")), "Twenty_Sec")
        if not samples:
            return []  # a new array has no samples yet; the entity exists
        return [f"{APPLIANCE_ENTITY}.{f}" for f in NEEDED_FIELDS if f not in samples[-1]]

    def volume_names(self) -> dict[str, str]:
        vols = self._get("/volume", "list volumes", {"select": "id,name,type"})
        self._volumes = {
            str(v["id"]): str(v.get("name") or v["id"]) for v in vols if v.get("type") != "Snapshot"
        }
        return dict(self._volumes)

    # --- metrics --------------------------------------------------------------------------------
    def start_metrics(self, interval_s: float) -> None:
        """Twenty-second samples for intervals under five minutes, five-minute ones above."""
        self.interval = "Twenty_Sec" if interval_s < 300 else "Five_Mins"
        self.volume_names()
        self._nodes = {str(n["id"]): n for n in self._get("/node", "list nodes", {"select": "id,name,slot"})}
        # only periods that end after collection started: the array keeps an hour of history
        appliance = (self._get("/appliance", "read the appliance", {"select": "id"}) or [{}])[0]
        history = self._generate(APPLIANCE_ENTITY, str(appliance.get("id", "A1")))
        newest = max((powerstore_time(str(s["timestamp"])) for s in history), default=float("-inf"))
        self._newest = dict.fromkeys(self._volumes, newest)
        self._started = True

    def read_metrics(self) -> MetricBatch:
        if not self._started:
            raise PowerStoreError(
                self.endpoint, "read metrics", "metrics not started", "call start_metrics()"
            )
        step = INTERVALS_S[self.interval]
        volumes: list[VolumeMetrics] = []
        for vid, name in self._volumes.items():
            for s in self._generate(VOLUME_ENTITY, vid):
                for vm in sample_metrics(name, s, step):
                    if vm.ts > self._newest.get(vid, float("-inf")):
                        volumes.append(vm)
                        self._newest[vid] = vm.ts
        volumes.sort(key=lambda v: v.ts)
        return MetricBatch(volumes=tuple(volumes), controllers=tuple(self.controllers()))

    def controllers(self) -> list[ControllerMetrics]:
        """Each node's hardware state and its newest IOPS."""
        hw = self._get(
            "/hardware", "read node hardware", {"select": "id,name,slot,lifecycle_state", "type": "eq.Node"}
        )
        state_by_slot = {h.get("slot"): str(h.get("lifecycle_state", "")) for h in hw}
        out = []
        for nid, node in self._nodes.items():
            samples = self._generate(NODE_ENTITY, nid)
            last = samples[-1] if samples else {}
            # a repeated sample stands for repeat_count periods: the newest ends that much later
            repeats = int(last.get("repeat_count") or 1) if last else 1
            step = INTERVALS_S[self.interval]
            ts = powerstore_time(str(last["timestamp"])) + (repeats - 1) * step if last else time.time()
            healthy = state_by_slot.get(node.get("slot"), "Healthy") == "Healthy"
            iops = float(last.get("total_iops", 0.0)) if last else None
            out.append(
                ControllerMetrics(str(node.get("name", nid)), ts, "active" if healthy else "failed", iops)
            )
        return out

    def stop_metrics(self) -> None:
        self._started = False
