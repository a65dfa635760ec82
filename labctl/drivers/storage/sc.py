"""Dell SC / Compellent through the Data Collector REST API (``/api/rest``): session, IoUsage samples.

Shapes as OpenStack Cinder's SC driver (``cinder/volume/drivers/dell_emc/sc/storagecenter_api.py``)
and the published monitoring clients (telegraf ``dellstoragecenter``, san_exporter ``sc8000``) use
them:

- every request carries ``x-dell-api-version`` (``API_VERSION``; an array that wants another answers
  400 "Invalid API version specified, the version must be in the range [a, b]" and we retry with
  its lowest, as Cinder does);
- ``POST ApiConnection/Login`` with basic auth answers the ``ApiConnection`` (``apiVersion``,
  ``providerVersion``) and a ``JSESSIONID`` cookie; a 401 later means the session ended: one fresh
  login and one retry;
- the Storage Center: ``ApiConnection/ApiConnection/{id}/StorageCenterList``; volumes:
  ``POST StorageCenter/ScVolume/GetList`` with a ``PayloadFilter`` on ``scSerialNumber`` (what
  Cinder's ``storagecenter_api.py`` and telegraf's ``dellstoragecenter`` call; the driver used
  ``GET .../StorageCenter/{ssn}/VolumeList`` before, which no published client or recording shows);
  controllers: ``.../ControllerList`` (``status`` Up / Down, ``leader``; unverified, see
  docs/conformance.md);
- metrics: ``POST StorageCenter/ScVolume/{id}/GetHistoricalIoUsage`` with a ``HistoricalFilter``
  (``StartTime``, ``UseCurrent``) answers ``ScVolumeIoUsage`` samples: ``readIops`` / ``writeIops``
  per second, ``readKbPerSecond`` / ``writeKbPerSecond`` in KiB/s, ``averageKbPerIo`` KiB,
  ``readLatency`` / ``writeLatency`` / ``xferLatency`` in microseconds (san_exporter: ``/ 1000`` for ms),
  each sample covering ``startTime`` to ``time``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
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

API_VERSION = "4.1"
VERSION_RANGE = re.compile(r"range \[([\d.]+),\s*([\d.]+)\]")
NEEDED_FIELDS = (
    "readIops",
    "writeIops",
    "readKbPerSecond",
    "writeKbPerSecond",
    "readLatency",
    "writeLatency",
)


class ScError(StorageApiError):
    pass


def error_message(resp: requests.Response) -> str:
    try:
        body = resp.json()
        if isinstance(body, dict) and body.get("result"):
            return str(body["result"])
    except Exception:
        pass
    return (resp.text or "")[:160]


def sc_time(text: str) -> float:
    """``2018-05-14T10:05:00-05:00`` (or ``Z``) -> epoch seconds. (refused without a zone)"""
    return aware_epoch(text)


def usage_metrics(volume: str, u: dict[str, Any], default_interval_s: float) -> VolumeMetrics:
    """One ``ScVolumeIoUsage`` sample as normalised metrics."""

    def f(name: str) -> float:
        v = u.get(name)
        return float(v) if v is not None else 0.0

    end = sc_time(str(u["time"]))
    start = sc_time(str(u["startTime"])) if u.get("startTime") else end - default_interval_s
    r, w = f("readIops"), f("writeIops")
    ios = r + w
    return VolumeMetrics(
        volume=volume,
        ts=end,
        interval_s=max(end - start, 1e-9),
        read_iops=r,
        write_iops=w,
        read_mb_s=f("readKbPerSecond") * KB / MB,
        write_mb_s=f("writeKbPerSecond") * KB / MB,
        read_latency_ms=f("readLatency") / 1000.0 if r > 0 else None,
        write_latency_ms=f("writeLatency") / 1000.0 if w > 0 else None,
        latency_ms=f("xferLatency") / 1000.0 if ios > 0 else None,
        # from the KiB/s totals: averageKbPerIo is a rounded integer, too coarse for small I/O
        io_size_kb=(f("readKbPerSecond") + f("writeKbPerSecond")) / ios if ios > 0 else None,
    )


class ScDriver(RestDriver):
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
        self.api_version = API_VERSION
        self.http = RestSession(
            array,
            self.endpoint,
            base if base.endswith("/api/rest") else base + "/api/rest",
            {
                "Accept": "application/json",
                "Content-Type": "application/json; charset=utf-8",
                "x-dell-api-version": self.api_version,
            },
            login=self._login,
            error_message=error_message,
            error_cls=ScError,
            expired_status=(401,),
            timeout_s=timeout_s,
            backoff=backoff,
            sleep=sleep,
        )
        self.connection: dict[str, Any] = {}
        self._sc: dict[str, Any] = {}
        self._volumes: dict[str, str] = {}  # instanceId -> name
        self._newest: dict[str, float] = {}
        self._interval_s = 60.0
        self._started = False

    # --- session -------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.http.connected and bool(self.connection)

    def _login(self) -> None:
        payload = {"Application": "labctl", "ApplicationVersion": "1.0"}
        try:
            resp = self.basic_login("POST", "/ApiConnection/Login", json=payload)
        except ScError as exc:
            m = VERSION_RANGE.search(str(exc)) if exc.status == 400 else None
            if m is None:
                raise
            # the Data Collector wants another API version: take its lowest and log in again
            self.api_version = m.group(1)
            self.http.headers["x-dell-api-version"] = self.api_version
            self.http.drop()
            self.http.connect()
            resp = self.basic_login("POST", "/ApiConnection/Login", json=payload)
        data = self.http.json(resp, "log in")
        self.connection = data if isinstance(data, dict) else {}

    def _logout(self) -> None:
        self.http.send("POST", "/ApiConnection/Logout", "log out", json={})
        self.connection = {}

    def _get(self, path: str, action: str) -> Any:
        return self.http.call("GET", path, action)

    def storage_center(self) -> dict[str, Any]:
        if not self._sc:
            cid = self.connection.get("instanceId", "0")
            scs = self._get(f"/ApiConnection/ApiConnection/{cid}/StorageCenterList", "list Storage Centers")
            if not isinstance(scs, list) or not scs:
                raise ScError(
                    self.endpoint,
                    "list Storage Centers",
                    "the Data Collector manages no Storage Center",
                    "add the array to the Data Collector, or check the user's rights",
                )
            self._sc = scs[0]
        return self._sc

    # --- what the array is ----------------------------------------------------------------------
    def info(self) -> ArrayInfo:
        sc = self.storage_center()
        ctrls = self.controller_list()
        model = str(ctrls[0].get("model", "")) if ctrls else str(sc.get("modelSeries", ""))
        return ArrayInfo(
            name=str(sc.get("name", "")),
            model=model,
            software_version=str(sc.get("version", "")),
            api_version=str(self.connection.get("apiVersion", self.api_version)),
        )

    def missing_metrics(self) -> list[str]:
        vols = self.volume_names()
        if not vols:
            return []
        got = self._usage(next(iter(vols)), None, "GetIoUsage")
        return [f for f in NEEDED_FIELDS if got and f not in got[-1]]

    def volume_names(self) -> dict[str, str]:
        ssn = self.storage_center().get("scSerialNumber", self.storage_center().get("instanceId"))
        flt = {
            "filterType": "AND",
            "filters": [{"attributeName": "scSerialNumber", "attributeValue": ssn, "filterType": "Equals"}],
        }
        vols = (
            self.http.call("POST", "/StorageCenter/ScVolume/GetList", "list volumes", json={"filter": flt})
            or []
        )
        self._volumes = {
            str(v["instanceId"]): str(v.get("name") or v["instanceId"]) for v in vols if isinstance(v, dict)
        }
        return dict(self._volumes)

    def controller_list(self) -> list[dict[str, Any]]:
        ssn = self.storage_center().get("instanceId")
        got = self._get(f"/StorageCenter/StorageCenter/{ssn}/ControllerList", "list controllers") or []
        return [c for c in got if isinstance(c, dict)]

    # --- metrics --------------------------------------------------------------------------------
    def _usage(self, vid: str, since: float | None, op: str = "GetHistoricalIoUsage") -> list[dict[str, Any]]:
        flt: dict[str, Any] = {"UseCurrent": True}
        if since is not None:
            flt["FilterTime"] = "Other"
            flt["StartTime"] = datetime.fromtimestamp(since, tz=UTC).isoformat()
        data = self.http.call(
            "POST",
            f"/StorageCenter/ScVolume/{vid}/{op}",
            f"read IO usage of volume {vid}",
            json={"HistoricalFilter": flt},
        )
        return [u for u in data if isinstance(u, dict)] if isinstance(data, list) else []

    def start_metrics(self, interval_s: float) -> None:
        """From the newest sample on: each read returns the periods the Data Collector closed since."""
        self._interval_s = interval_s
        self.volume_names()
        self._newest = {}
        for vid in self._volumes:
            latest = self._usage(vid, None, "GetIoUsage")
            self._newest[vid] = sc_time(str(latest[-1]["time"])) if latest else float("-inf")
        self._started = True

    def read_metrics(self) -> MetricBatch:
        if not self._started:
            raise ScError(self.endpoint, "read metrics", "metrics not started", "call start_metrics()")
        volumes = []
        for vid, name in self._volumes.items():
            newest = self._newest.get(vid, float("-inf"))
            for u in self._usage(vid, newest if newest > float("-inf") else None):
                vm = usage_metrics(name, u, self._interval_s)
                if vm.ts > self._newest.get(vid, float("-inf")):
                    volumes.append(vm)
                    self._newest[vid] = vm.ts
        volumes.sort(key=lambda v: v.ts)
        return MetricBatch(volumes=tuple(volumes), controllers=tuple(self.controllers()))

    def controllers(self) -> list[ControllerMetrics]:
        out = []
        for c in self.controller_list():
            usage = self.http.call(
                "POST",
                f"/StorageCenter/ScController/{c['instanceId']}/GetIoUsage",
                f"read IO usage of controller {c.get('name')}",
                json={"HistoricalFilter": {"UseCurrent": True}},
            )
            last = usage[-1] if isinstance(usage, list) and usage else {}
            ts = sc_time(str(last["time"])) if last.get("time") else time.time()
            state = "failed" if str(c.get("status")) != "Up" else "active"
            out.append(
                ControllerMetrics(
                    str(c.get("name", c["instanceId"])),
                    ts,
                    state,
                    float(last["totalIops"]) if "totalIops" in last else None,
                )
            )
        return out

    def stop_metrics(self) -> None:
        self._started = False
