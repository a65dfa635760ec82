"""One simulated Dell Storage Manager Data Collector REST API (``/api/rest``) managing one SC array.

The wire protocol follows what OpenStack Cinder's SC driver
(``cinder/volume/drivers/dell_emc/sc/storagecenter_api.py``: ``HttpClient``, ``SCApi``) and the
published monitoring clients (telegraf's ``dellstoragecenter`` input, san_exporter's ``sc8000``
driver) send and read:

- every request carries ``x-dell-api-version``; a version outside the supported range answers 400
  with ``{"result": "Invalid API version specified, the version must be in the range [2.0, 4.1]."}``
  (the text Cinder's ``_check_version_fail`` parses);
- ``POST ApiConnection/Login`` with basic auth answers the ``ApiConnection`` object and sets the
  ``JSESSIONID`` cookie; later requests ride on the cookie; a session that ended (idle, or the fault
  ``storage_token_expiry``) answers 401; ``POST ApiConnection/Logout`` ends it;
- objects carry ``instanceId``, ``instanceName`` and ``objectType`` (``StorageCenter``, ``ScVolume``,
  ``ScController``; shapes as Cinder's unit tests capture them, tests/sim/data/sc/);
- ``POST StorageCenter/ScVolume/{id}/GetHistoricalIoUsage`` with ``{"HistoricalFilter": {...}}``
  answers ``ScVolumeIoUsage`` samples, one per collection period, stamped with the period's end
  (``time``): ``readIops`` / ``writeIops`` / ``totalIops`` per second, ``readKbPerSecond`` etc. in KiB/s,
  ``averageKbPerIo`` KiB, ``readLatency`` / ``writeLatency`` / ``xferLatency`` in microseconds (the
  san_exporter divides them by 1000 for ms; the Checkmk agent's test reads 1000000 as 1 s), all
  integers; ``GetIoUsage`` answers the latest one; ``ScController/{id}/GetHistoricalIoUsage`` the
  controller's (with ``cpuPercentUsage``);
- a failed controller (the twin's ``array_controller_failover``) lists ``status: Down``; its peer
  becomes the leader and serves its volumes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from typing import Any

from labctl.inventory.model import StorageArray
from labctl.sim.arrays.feed import ArrayFeed
from labctl.sim.arrays.history import CounterHistory, Snapshot, VolumeRates, combine, window_rates
from labctl.sim.arrays.sessions import Session, SessionBook, SessionState
from labctl.sim.endpoint import SimContext
from labctl.sim.http import Request, Response, SimHttpsServer, empty_response, json_response, parse_host_port

log = logging.getLogger(__name__)

PREFIX = "/api/rest/"
COOKIE = "JSESSIONID"
API_VERSIONS = (
    "2.0",
    "4.1",
)  # the range this Data Collector speaks (telegraf defaults to 4.1, Cinder starts at 2.0)
PROVIDER_VERSION = "16.3.20.22"  # Dell Storage Manager
SC_VERSION = "7.2.11.4"  # Storage Center OS
IDLE_TIMEOUT_S = 3600.0
DEFAULT_TOKEN_LIFETIME_S = 60.0  # storage_token_expiry with after_s 0
# The Data Collector's IO-usage collection period. A real one collects every 5 minutes by default
# and can be set shorter; a lab measuring six-minute storms runs it at one minute (an assumption:
# named here, and the driver takes the period from the samples' own times).
IO_USAGE_INTERVAL_S = 60.0
RETENTION_S = 86400.0
VOLUME_SIZE_B = 2 * 2**40


def sc_time(lab_s: float) -> str:
    """``2018-05-14T10:05:00+00:00``: ISO 8601 with an offset, as the HistoricalFilter's times."""
    return dt.datetime.fromtimestamp(round(lab_s), tz=dt.UTC).isoformat()


def parse_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def result(status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Response:
    return json_response(status, {"result": text}, headers or [])


def io_usage(r: VolumeRates) -> dict[str, int]:
    """One period's figures in the IoUsage object's units (integers, as the API answers them)."""
    ios = r.ios_s
    rkb, wkb = r.read_bytes_s / 1024.0, r.write_bytes_s / 1024.0
    lat = r.latency_s
    return {
        "readIops": round(r.reads_s),
        "writeIops": round(r.writes_s),
        "totalIops": round(ios),
        "readKbPerSecond": round(rkb),
        "writeKbPerSecond": round(wkb),
        "totalKbPerSecond": round(rkb + wkb),
        "averageKbPerIo": round((rkb + wkb) / ios) if ios > 0 else 0,
        "readLatency": round((r.read_latency_s or 0.0) * 1e6),
        "writeLatency": round((r.write_latency_s or 0.0) * 1e6),
        "xferLatency": round((lat or 0.0) * 1e6),
        "ioPending": round(r.queue),
    }


class DataCollector(SimHttpsServer):
    """The Data Collector's REST API, with one Storage Center behind it."""

    server_header = "Apache-Coyote/1.1"

    def __init__(self, ctx: SimContext, array: StorageArray, twin_array: str | None = None):
        host, port = parse_host_port(array.url, default_port=3033)
        super().__init__(ctx, kind="sc", name=array.name, host=host, port=port)
        self.array = array
        self.feed = ArrayFeed(ctx, array, twin_array)
        self.sessions = SessionBook(
            ctx, array, COOKIE, idle_timeout_s=IDLE_TIMEOUT_S, default_lifetime_s=DEFAULT_TOKEN_LIFETIME_S
        )
        self.history = CounterHistory(self.feed, IO_USAGE_INTERVAL_S, RETENTION_S)
        self.ssn = 10000 + int.from_bytes(hashlib.sha256(array.name.encode()).digest()[:4], "big") % 89999
        self.sc_name = f"Storage Center {self.ssn}"
        hw = self.feed.hardware
        self.model = hw.model.replace("Compellent ", "") if hw is not None and hw.model else "SC4020"
        self.volume_ids = {v: f"{self.ssn}.{101 + i}" for i, v in enumerate(array.luns)}
        # controller instanceId -> the twin's controller name
        self.controllers = {
            f"{self.ssn}.{self.ssn + 1 + k}": c for k, c in enumerate(self.feed.controller_names)
        }

    def on_start(self) -> None:
        self.history.start(self.array.name)

    def on_stop(self) -> None:
        self.history.stop()

    def active_sessions(self) -> int:
        return self.sessions.count()

    def internal_error(self, req: Request) -> Response:
        return result(500, "Unhandled Exception in the simulated Data Collector")

    # --- dispatch --------------------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        version = (req.header("x-dell-api-version") or "").strip()
        try:
            ok = float(API_VERSIONS[0]) <= float(version) <= float(API_VERSIONS[1])
        except ValueError:
            ok = False
        if not ok:
            return result(
                400,
                f"Invalid API version specified, the version must be in the range [{API_VERSIONS[0]}, {API_VERSIONS[1]}].",
            )
        if not req.path.startswith(PREFIX):
            return result(404, f"Resource not found: {req.path}")
        path = req.path[len(PREFIX) :].rstrip("/")
        if path == "ApiConnection/Login":
            if req.method != "POST":
                return result(405, "Method not allowed")
            s, outcome = self.sessions.resolve(req, allow_login=True)
            if s is None or outcome is not SessionState.NEW:
                if s is not None:  # a login with a live cookie: a fresh session all the same
                    self.sessions.end(s)
                    return self.handle(req)
                return result(
                    401, "Invalid user name or password", [("WWW-Authenticate", 'Basic realm="DSM"')]
                )
            return json_response(200, self._connection(s, version), [self.sessions.set_cookie(s)])
        s, outcome = self.sessions.resolve(req, allow_login=False)
        if outcome is SessionState.EXPIRED:
            return result(401, "Session expired; log in again", [self.sessions.clear_cookie()])
        if s is None:
            return result(401, "Unauthorized: log in with ApiConnection/Login")
        return self._route(req, path, s, version)

    def _route(self, req: Request, path: str, s: Session, version: str) -> Response:
        parts = path.split("/")
        if path == "ApiConnection/Logout" and req.method == "POST":
            self.sessions.end(s)
            return empty_response(204, [self.sessions.clear_cookie()])
        if req.method == "GET":
            got = self._get(parts, s, version)
            return got if isinstance(got, Response) else json_response(200, got)
        if req.method == "POST":
            return self._post(req, parts)
        return result(405, "Method not allowed")

    def _get(self, parts: list[str], s: Session, version: str) -> Any:
        sc = self._storage_center()
        match parts:
            case ["ApiConnection", "ApiConnection"] | ["ApiConnection", "ApiConnection", "0"]:
                return self._connection(s, version)
            case ["ApiConnection", "ApiConnection", "0", "StorageCenterList"] | [
                "StorageCenter",
                "StorageCenter",
            ]:
                return [sc]
            case ["StorageCenter", "StorageCenter", ssn] if ssn == str(self.ssn):
                return sc
            case ["StorageCenter", "StorageCenter", ssn, "VolumeList"] if ssn == str(self.ssn):
                return self._volumes()
            case ["StorageCenter", "StorageCenter", ssn, "ControllerList"] if ssn == str(self.ssn):
                return self._controllers()
            case ["StorageCenter", "ScVolume", vid]:
                hit = [v for v in self._volumes() if v["instanceId"] == vid]
                return hit[0] if hit else result(404, f"ScVolume {vid} not found")
            case ["StorageCenter", "ScController", cid]:
                hit = [c for c in self._controllers() if c["instanceId"] == cid]
                return hit[0] if hit else result(404, f"ScController {cid} not found")
        return result(404, f"Resource not found: {'/'.join(parts)}")

    def _post(self, req: Request, parts: list[str]) -> Response:
        try:
            body = req.json() if req.body else {}
        except ValueError:
            return result(400, "The request body is not valid JSON")
        if not isinstance(body, dict):
            body = {}
        match parts:
            case ["StorageCenter", "ScVolume", "GetList"]:
                return json_response(200, _filtered(self._volumes(), body))
            case ["StorageCenter", "ScController", "GetList"]:
                return json_response(200, _filtered(self._controllers(), body))
            case ["StorageCenter", "ScVolume", vid, ("GetHistoricalIoUsage" | "GetIoUsage") as op]:
                name = next((n for n, i in self.volume_ids.items() if i == vid), None)
                if name is None:
                    return result(404, f"ScVolume {vid} not found")
                return json_response(200, self._usage(body, op, vid, name, lambda snap: [name]))
            case ["StorageCenter", "ScController", cid, ("GetHistoricalIoUsage" | "GetIoUsage") as op]:
                ctrl = self.controllers.get(cid)
                if ctrl is None:
                    return result(404, f"ScController {cid} not found")
                return json_response(
                    200,
                    self._usage(
                        body,
                        op,
                        cid,
                        f"SN {cid.split('.')[-1]}",
                        lambda snap: [v for v, c in snap.volumes.items() if c.controller == ctrl],
                        controller=True,
                    ),
                )
        return result(404, f"Resource not found: {'/'.join(parts)}")

    # --- objects ---------------------------------------------------------------------------------
    def _ref(self, object_type: str, instance_id: str, name: str) -> dict[str, str]:
        return {"instanceId": instance_id, "instanceName": name, "objectType": object_type}

    def _connection(self, s: Session, version: str) -> dict[str, Any]:
        return {
            "hostName": self.info.host,
            "provider": "EnterpriseManager",
            "providerVersion": PROVIDER_VERSION,
            "apiVersion": API_VERSIONS[1],
            "minApiVersion": "0.1",
            "apiBuild": 651,
            "userName": s.user,
            "userId": 1,
            "connected": True,
            "webServicesPort": self.info.port,
            "sessionKey": int(s.created_lab_s * 1000),
            "source": "REST",
            "locale": "en_US",
            "useHttps": True,
            "commandLine": False,
            **self._ref("ApiConnection", "0", "ApiConnection"),
        }

    def _storage_center(self) -> dict[str, Any]:
        return {
            **self._ref("StorageCenter", str(self.ssn), self.sc_name),
            "scSerialNumber": self.ssn,
            "serialNumber": self.ssn,
            "name": self.sc_name,
            "scName": self.sc_name,
            "hostOrIpAddress": self.info.host,
            "managementIp": self.info.host,
            "version": SC_VERSION,
            "modelSeries": self.model,
            "status": "Up",
            "statusMessage": "",
            "connected": True,
            "userConnected": True,
            "operationMode": "Normal",
            "userName": self.array.user,
            "dataProgressionRunning": False,
            "flashOptimizedConfigured": False,
            "nonFlashOptimizedConfigured": True,
        }

    def _volumes(self) -> list[dict[str, Any]]:
        out = []
        for i, (name, vid) in enumerate(self.volume_ids.items()):
            index = 101 + i
            out.append(
                {
                    **self._ref("ScVolume", vid, name),
                    "scSerialNumber": self.ssn,
                    "scName": self.sc_name,
                    "name": name,
                    "index": index,
                    "vpdId": index + 2,
                    "deviceId": f"6000d31000{self.ssn:06x}{index:016x}"[:32],
                    "serialNumber": f"0000{self.ssn:04x}-{index:08x}",
                    "status": "Up",
                    "statusMessage": "",
                    "active": True,
                    "mapped": True,
                    "inRecycleBin": False,
                    "volumeFolderPath": "",
                    "volumeFolder": self._ref("ScVolumeFolder", f"{self.ssn}.1", "Volumes"),
                    "storageType": self._ref("ScStorageType", f"{self.ssn}.1", "Assigned - Redundant - 2 MB"),
                    "configuredSize": f"{float(VOLUME_SIZE_B):.10E} Bytes".replace("E+", "E"),
                    "replayAllowed": True,
                    "deleteAllowed": True,
                    "flashOptimized": False,
                }
            )
        return out

    def _controllers(self) -> list[dict[str, Any]]:
        states = {c.controller: c.state for c in self.feed.controllers()}
        up = [cid for cid, name in self.controllers.items() if states.get(name) != "failed"]
        out = []
        for k, (cid, name) in enumerate(self.controllers.items()):
            failed = states.get(name) == "failed"
            out.append(
                {
                    **self._ref("ScController", cid, f"SN {cid.split('.')[-1]}"),
                    "scSerialNumber": self.ssn,
                    "scName": self.sc_name,
                    "name": f"SN {cid.split('.')[-1]}",
                    "status": "Down" if failed else "Up",
                    "statusMessage": "Controller is down" if failed else "",
                    "leader": bool(up) and cid == up[0],
                    "model": f"{self.model}",
                    "version": SC_VERSION,
                    "ipAddress": f"{self.info.host}",
                    "availableMemory": f"{int((self.feed.hardware.cache_gb if self.feed.hardware else 16) * 2**30)} Bytes",
                    "index": k + 1,
                }
            )
        return out

    # --- IO usage --------------------------------------------------------------------------------
    def _usage(
        self,
        body: dict[str, Any],
        op: str,
        instance_id: str,
        name: str,
        covers: Any,
        *,
        controller: bool = False,
    ) -> list[dict[str, Any]]:
        flt = body.get("HistoricalFilter") or {}
        since = parse_time(flt["StartTime"]) if flt.get("StartTime") else None
        until = parse_time(flt["EndTime"]) if flt.get("EndTime") and not flt.get("UseCurrent", True) else None
        pairs: list[tuple[Snapshot, Snapshot]] = self.history.samples(
            IO_USAGE_INTERVAL_S, since=since, until=until
        )
        if op == "GetIoUsage":
            pairs = pairs[-1:]
        limit = int(flt.get("MaxCountReturn") or 0)
        if limit > 0:
            pairs = pairs[-limit:]
        object_type = "ScControllerIoUsage" if controller else "ScVolumeIoUsage"
        out = []
        for a, b in pairs:
            per_vol = window_rates(a, b)
            r = combine([per_vol[v] for v in covers(b) if v in per_vol], name)
            sample: dict[str, Any] = {
                **self._ref(object_type, instance_id, name),
                "name": name,
                "scName": self.sc_name,
                "scSerialNumber": self.ssn,
                "startTime": sc_time(a.t),
                "time": sc_time(b.t),
                **io_usage(r),
            }
            if controller:
                busy = next(
                    (c for c in b.controllers if self.controllers.get(instance_id) == c.controller), None
                )
                prev = next(
                    (c for c in a.controllers if self.controllers.get(instance_id) == c.controller), None
                )
                cpu = 100.0 * (busy.busy_s - prev.busy_s) / max(b.t - a.t, 1e-9) if busy and prev else 0.0
                sample["cpuPercentUsage"] = round(min(100.0, max(0.0, cpu)))
                sample["memoryPercentUsage"] = 0
            out.append(sample)
        return out


def _filtered(objects: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``PayloadFilter`` (Cinder: ``{"filter": {"filterType": "AND", "filters": [{"attributeName",
    "attributeValue", "filterType": "Equals"}]}}``), or the legacy one without the ``filter`` level."""
    flt = body.get("filter", body) if isinstance(body, dict) else {}
    terms = flt.get("filters") or [] if isinstance(flt, dict) else []
    out = objects
    for t in terms:
        if not isinstance(t, dict) or t.get("filterType", "Equals") != "Equals":
            continue
        key, want = t.get("attributeName"), t.get("attributeValue")
        out = [o for o in out if str(o.get(str(key))) == str(want)]
    return out
