"""One simulated iDRAC9: the Redfish service of one server's BMC, over HTTPS.

What it reports comes from the lab twin (power state, power draw, boots); what it refuses comes
from the fault book (``bmc_503``, ``bmc_hang``) and from its own session table, which has iDRAC's
small limit (``BmcEndpoint.max_sessions``). A reset starts the twin's power action and answers 204
at once; the state changes when the twin says the action has completed, whether or not anyone asks.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from labctl.errors import MissingCredentialError
from labctl.inventory.faults import FaultKind
from labctl.inventory.model import BmcEndpoint, Machine
from labctl.sim.catchup import boundaries, fraction
from labctl.sim.endpoint import SimContext
from labctl.sim.http import (
    Request,
    Response,
    SimHttpsServer,
    credentials_match,
    empty_response,
    json_response,
    parse_host_port,
)
from labctl.sim.redfish import messages as msg
from labctl.sim.redfish.metadata import metadata_xml, odata_context, odata_service_document, odata_type
from labctl.sim.twin.interface import PowerAction, PowerState

log = logging.getLogger(__name__)

ROOT = "/redfish/v1"
SYSTEM = f"{ROOT}/Systems/System.Embedded.1"
RESET = f"{SYSTEM}/Actions/ComputerSystem.Reset"
MANAGER = f"{ROOT}/Managers/iDRAC.Embedded.1"
CHASSIS = f"{ROOT}/Chassis/System.Embedded.1"
POWER = f"{CHASSIS}/Power"
THERMAL = f"{CHASSIS}/Thermal"
SESSION_SERVICE = f"{ROOT}/SessionService"
SESSIONS = f"{SESSION_SERVICE}/Sessions"

RESET_TYPES = (
    "On",
    "ForceOff",
    "ForceRestart",
    "GracefulRestart",
    "GracefulShutdown",
    "PushPowerButton",
    "Nmi",
    "PowerCycle",
)
BOOT_TARGETS = (
    "None",
    "Pxe",
    "Floppy",
    "Cd",
    "Hdd",
    "BiosSetup",
    "Utilities",
    "UefiTarget",
    "SDCard",
    "UefiHttp",
)
BOOT_ENABLED = ("Disabled", "Once", "Continuous")
BOOT_MODES = ("UEFI", "Legacy")

IDRAC_MODEL = "14G Monolithic"
IDRAC_FIRMWARE = "4.40.00.00"
BIOS_VERSION = "2.12.2"
REDFISH_VERSION = "1.11.0"
SESSION_TIMEOUT_S = 1800  # iDRAC default; PATCHable within 30..10800 as on iDRAC
SESSION_TIMEOUT_RANGE = (30, 10800)
RETRY_AFTER_S = 2
PSU_CAPACITY_W = 750.0
POWER_METRICS_WINDOW_S = 60.0  # IntervalInMin = 1, lab seconds
POWER_SAMPLE_LAB_S = 5.0

JSON_TYPE = "application/json;odata.metadata=minimal;charset=utf-8"
SCHEMA_BASE = "http://redfish.dmtf.org/schemas/v1"
ALLOW = {
    ROOT: "GET",
    SYSTEM: "GET,HEAD,PATCH",
    RESET: "POST",
    SESSION_SERVICE: "GET,HEAD,PATCH",
    SESSIONS: "GET,HEAD,POST",
}

_RESET_ACTIONS = {
    "On": PowerAction.ON,
    "ForceOff": PowerAction.FORCE_OFF,
    "GracefulShutdown": PowerAction.SHUTDOWN,
    "GracefulRestart": PowerAction.RESTART,
    "ForceRestart": PowerAction.FORCE_RESTART,
    "PowerCycle": PowerAction.POWER_CYCLE,
}


def service_tag(name: str) -> str:
    """A stable 7-character Dell service tag for a machine name."""
    digits = "0123456789BCDFGHJKLMNPQRSTVWXYZ"
    n = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    out = []
    for _ in range(7):
        n, r = divmod(n, len(digits))
        out.append(digits[r])
    return "".join(out)


def _ref(uri: str) -> dict[str, str]:
    return {"@odata.id": uri}


def _status(state: str = "Enabled", health: str | None = "OK") -> dict[str, Any]:
    out: dict[str, Any] = {"State": state, "Health": health}
    if health is not None:
        out["HealthRollup"] = health
    return out


def _json_object(req: Request) -> dict[str, Any] | None:
    """The request body as a JSON object; None when it is not one (iDRAC answers MalformedJSON)."""
    try:
        body = req.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


@dataclass
class _Session:
    id: str
    token: str
    user: str
    created_lab_s: float
    last_used_lab_s: float


class IdracService(SimHttpsServer):
    """The Redfish service of one server's iDRAC."""

    server_header = "Apache"

    def __init__(self, ctx: SimContext, machine: Machine, bmc: BmcEndpoint):
        host, port = parse_host_port(bmc.url)
        super().__init__(ctx, kind="redfish", name=machine.name, host=host, port=port)
        self.machine = machine
        self.bmc = bmc
        password = ctx.credential(bmc.password)
        if password is None:
            raise MissingCredentialError(
                bmc.password, f"simulated BMC of {machine.name}", "the simulator has no value for it"
            )
        self._user = bmc.user
        self._password = password
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._next_session = 1
        self.session_timeout_s = SESSION_TIMEOUT_S
        self.tag = service_tag(machine.name)
        self.uuid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.tag}.system.labctl"))
        self.manager_uuid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.tag}.idrac.labctl"))
        self._boot_enabled = "Disabled"
        self._boot_target = "None"
        self._boot_mode = "UEFI"
        self._once_baseline: int | None = None
        self._power_samples: deque[tuple[float, float]] = deque()
        self._sampler: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------
    def on_start(self) -> None:
        self._sample_power()
        self._sampler = threading.Thread(
            target=self._sample_loop, name=f"sim-redfish-power-{self.machine.name}", daemon=True
        )
        self._sampler.start()

    def on_stop(self) -> None:
        if self._sampler is not None:
            self._sampler.join(timeout=2)
            self._sampler = None

    def _sample_loop(self) -> None:
        interval = min(1.0, max(0.05, self.ctx.clock.to_wall_s(POWER_SAMPLE_LAB_S)))
        while self.wait(interval):
            try:
                self._sample_power()
            except Exception:  # the twin failing must not kill the BMC
                log.exception("redfish %s: power sample failed", self.machine.name)

    def _sample_power(self) -> float:
        now = self.ctx.clock.now()
        watts = float(self.ctx.twin.power_consumed_watts(self.machine.name))
        with self._lock:
            if self._power_samples:
                # a starved sampler still has a sample every POWER_SAMPLE_LAB_S for the window's
                # min/avg/max: the ones it missed, interpolated between its two readings
                t0, w0 = self._power_samples[-1]
                for t in boundaries(t0, POWER_SAMPLE_LAB_S, t0, now - POWER_SAMPLE_LAB_S):
                    self._power_samples.append((t, w0 + (watts - w0) * fraction(t0, now, t)))
            self._power_samples.append((now, watts))
            while self._power_samples and self._power_samples[0][0] < now - POWER_METRICS_WINDOW_S:
                self._power_samples.popleft()
        return watts

    # --- plumbing --------------------------------------------------------------------------------
    def _json(self, status: int, payload: Any, headers: list[tuple[str, str]] | None = None) -> Response:
        h = [("OData-Version", "4.0"), ("Cache-Control", "no-cache")]
        h.extend(headers or [])
        return json_response(status, payload, h, content_type=JSON_TYPE)

    def _resource(self, payload: dict[str, Any], allow: str = "GET,HEAD") -> Response:
        headers = [("Allow", allow)]
        odata_t = payload.get("@odata.type", "")
        if odata_t.startswith("#"):
            # "#ComputerSystem.v1_12_0.ComputerSystem" -> ComputerSystem.v1_12_0.json
            schema = odata_t[1:].rsplit(".", 1)[0]
            headers.append(("Link", f"<{SCHEMA_BASE}/{schema}.json>; rel=describedby"))
        return self._json(200, payload, headers)

    def internal_error(self, req: Request) -> Response:
        return self._json(500, msg.internal_error())

    def _now_lab(self) -> float:
        return self.ctx.clock.now()

    # --- authentication --------------------------------------------------------------------------
    def _check_password(self, user: str, password: str) -> bool:
        return credentials_match(user, password, self._user, self._password)

    def _expire_sessions(self, now: float) -> None:
        for sid in [
            s.id for s in self._sessions.values() if now - s.last_used_lab_s > self.session_timeout_s
        ]:
            del self._sessions[sid]

    def _authenticate(self, req: Request) -> _Session | bool:
        """The session of an ``X-Auth-Token``, True for valid basic auth, False otherwise."""
        token = req.header("X-Auth-Token")
        if token:
            now = self._now_lab()
            with self._lock:
                self._expire_sessions(now)
                for s in self._sessions.values():
                    if hmac.compare_digest(s.token.encode(), token.encode()):
                        s.last_used_lab_s = now
                        return s
            return False
        basic = req.basic_auth()
        return basic is not None and self._check_password(*basic)

    def _unauthorized(self, req: Request) -> Response:
        body = (
            msg.bad_credentials()
            if (req.header("Authorization") or req.header("X-Auth-Token"))
            else (msg.no_valid_session())
        )
        return self._json(401, body, [("WWW-Authenticate", 'Basic realm="RedfishService"')])

    # --- dispatch --------------------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        name = self.machine.name
        if self.ctx.faults.active(FaultKind.BMC_HANG, name):
            self.hang()
        if self.ctx.faults.active(FaultKind.BMC_503, name):
            return self._json(
                503, msg.service_unavailable(RETRY_AFTER_S), [("Retry-After", str(RETRY_AFTER_S))]
            )
        path = req.path.rstrip("/") or "/"
        method = "GET" if req.method == "HEAD" else req.method
        odata_version = req.header("OData-Version")
        if odata_version is not None and odata_version.strip() != "4.0":
            return self._json(412, msg.precondition_failed("OData-Version", odata_version))
        unsupported = [q for q in req.query if q.startswith("$")]
        if unsupported:
            return self._json(501, msg.query_not_supported(unsupported[0]))
        if path == f"{SESSIONS}/Members":  # a collection's Members URI accepts the same POST
            path = SESSIONS

        # public: the service root, the OData documents, and session creation
        if path in ("/redfish",) and method == "GET":
            return self._json(200, {"v1": "/redfish/v1/"})
        if path == ROOT and method == "GET":
            return self._resource(self._root(), "GET,HEAD")
        if path == f"{ROOT}/odata" and method == "GET":
            return self._json(200, odata_service_document())
        if path == f"{ROOT}/$metadata" and method == "GET":
            return Response(
                200,
                metadata_xml().encode(),
                [("OData-Version", "4.0"), ("Cache-Control", "no-cache")],
                "application/xml;charset=utf-8",
            )
        if path == SESSIONS and method == "POST":
            return self._create_session(req)

        auth = self._authenticate(req)
        if auth is False:
            return self._unauthorized(req)

        if method == "GET":
            return self._get(path)
        if method == "POST" and path == RESET:
            return self._reset(req)
        if method == "PATCH" and path == SYSTEM:
            return self._patch_system(req)
        if method == "PATCH" and path == SESSION_SERVICE:
            return self._patch_session_service(req)
        if method == "DELETE" and path.startswith(SESSIONS + "/"):
            return self._delete_session(path.rsplit("/", 1)[1])
        if self._exists(path):
            return self._json(
                405, msg.operation_not_allowed(req.method, path), [("Allow", ALLOW.get(path, "GET,HEAD"))]
            )
        return self._json(404, msg.resource_missing(req.path))

    def _exists(self, path: str) -> bool:
        if path in self._routes():
            return True
        with self._lock:
            return path.startswith(SESSIONS + "/") and path.rsplit("/", 1)[1] in self._sessions

    def _routes(self) -> dict[str, Any]:
        return {
            ROOT: self._root,
            f"{ROOT}/Systems": self._systems,
            SYSTEM: self._system,
            f"{ROOT}/Managers": self._managers,
            MANAGER: self._manager,
            f"{ROOT}/Chassis": self._chassis_collection,
            CHASSIS: self._chassis,
            POWER: self._power,
            THERMAL: self._thermal,
            SESSION_SERVICE: self._session_service,
            SESSIONS: self._sessions_collection,
        }

    def _get(self, path: str) -> Response:
        fn = self._routes().get(path)
        if fn is not None:
            return self._resource(fn(), ALLOW.get(path, "GET,HEAD"))
        if path.startswith(SESSIONS + "/"):
            sid = path.rsplit("/", 1)[1]
            with self._lock:
                s = self._sessions.get(sid)
            if s is not None:
                return self._resource(self._session(s), "GET,HEAD,DELETE")
        return self._json(404, msg.resource_missing(path))

    # --- resources -------------------------------------------------------------------------------
    def _base(
        self, namespace: str, uri: str, id_: str, name: str, description: str | None = None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "@odata.context": odata_context(namespace),
            "@odata.id": uri,
            "@odata.type": odata_type(namespace),
            "Id": id_,
            "Name": name,
        }
        if description is not None:
            out["Description"] = description
        return out

    def _collection(
        self, namespace: str, uri: str, name: str, description: str, members: list[str]
    ) -> dict[str, Any]:
        return {
            "@odata.context": odata_context(namespace),
            "@odata.id": uri,
            "@odata.type": odata_type(namespace),
            "Description": description,
            "Members": [_ref(m) for m in members],
            "Members@odata.count": len(members),
            "Name": name,
        }

    def _root(self) -> dict[str, Any]:
        out = self._base("ServiceRoot", ROOT, "RootService", "Root Service", "Root Service")
        out.update(
            {
                "Chassis": _ref(f"{ROOT}/Chassis"),
                "Links": {"Sessions": _ref(SESSIONS)},
                "Managers": _ref(f"{ROOT}/Managers"),
                "Product": "Integrated Dell Remote Access Controller",
                "ProtocolFeaturesSupported": {
                    "ExcerptQuery": False,
                    "ExpandQuery": {"ExpandAll": False, "Levels": False, "Links": False, "NoLinks": False},
                    "FilterQuery": False,
                    "OnlyMemberQuery": False,
                    "SelectQuery": False,
                },
                "RedfishVersion": REDFISH_VERSION,
                "SessionService": _ref(SESSION_SERVICE),
                "Systems": _ref(f"{ROOT}/Systems"),
                "UUID": self.manager_uuid,
                "Vendor": "Dell",
            }
        )
        return out

    def _systems(self) -> dict[str, Any]:
        return self._collection(
            "ComputerSystemCollection",
            f"{ROOT}/Systems",
            "Computer System Collection",
            "Collection of Computer Systems",
            [SYSTEM],
        )

    def _power_state(self) -> PowerState:
        return PowerState(self.ctx.twin.power_state(self.machine.name))

    def _apply_once(self) -> None:
        """``Once`` reverts to ``Disabled`` after the next boot the twin reports."""
        with self._lock:
            if self._boot_enabled != "Once" or self._once_baseline is None:
                return
            if self.ctx.twin.boot_count(self.machine.name) > self._once_baseline:
                self._boot_enabled, self._boot_target, self._once_baseline = "Disabled", "None", None

    def _system(self) -> dict[str, Any]:
        m = self.machine
        hw = m.server_hardware
        self._apply_once()
        out = self._base(
            "ComputerSystem",
            SYSTEM,
            "System.Embedded.1",
            "System",
            "Computer System which represents a machine (physical or virtual) and the local resources "
            "such as memory, cpu and other devices that can be accessed from that machine.",
        )
        cpu = hw.cpu if hw else None
        with self._lock:
            boot = {
                "BootOrder": ["HardDisk.List.1-1", "NIC.Integrated.1-1-1"],
                "BootOrder@odata.count": 2,
                "BootSourceOverrideEnabled": self._boot_enabled,
                "BootSourceOverrideMode": self._boot_mode,
                "BootSourceOverrideTarget": self._boot_target,
                "BootSourceOverrideTarget@Redfish.AllowableValues": list(BOOT_TARGETS),
                "UefiTargetBootSourceOverride": None,
            }
        out.update(
            {
                "Actions": {
                    "#ComputerSystem.Reset": {
                        "target": RESET,
                        "ResetType@Redfish.AllowableValues": list(RESET_TYPES),
                    }
                },
                "AssetTag": "",
                "BiosVersion": BIOS_VERSION,
                "Boot": boot,
                "HostName": m.name,
                "IndicatorLED": "Lit",
                "Links": {
                    "Chassis": [_ref(CHASSIS)],
                    "Chassis@odata.count": 1,
                    "ManagedBy": [_ref(MANAGER)],
                    "ManagedBy@odata.count": 1,
                },
                "Manufacturer": "Dell Inc.",
                "MemorySummary": {
                    "MemoryMirroring": "System",
                    "Status": _status(),
                    "TotalSystemMemoryGiB": float(hw.ram_gb) if hw else 0.0,
                },
                "Model": m.model or "PowerEdge",
                "PartNumber": "0" + self.tag[:5] + "A00",
                "PowerState": str(self._power_state()),
                "ProcessorSummary": {
                    "Count": cpu.sockets if cpu else 1,
                    "LogicalProcessorCount": (cpu.sockets * cpu.cores) if cpu else 1,
                    "Model": f"Intel(R) Xeon(R) CPU {cpu.model.removeprefix('Xeon ').strip()} @ {cpu.ghz:.2f}GHz"
                    if cpu and cpu.model.startswith("Xeon")
                    else (cpu.model if cpu else ""),
                    "Status": _status(),
                },
                "SKU": self.tag,
                "SerialNumber": "CN7016" + self.tag + "0",
                "Status": _status(),
                "SystemType": "Physical",
                "UUID": self.uuid,
            }
        )
        return out

    def _managers(self) -> dict[str, Any]:
        return self._collection(
            "ManagerCollection", f"{ROOT}/Managers", "Manager Collection", "BMC", [MANAGER]
        )

    def _manager(self) -> dict[str, Any]:
        now = self.ctx.clock.now_dt()
        out = self._base("Manager", MANAGER, "iDRAC.Embedded.1", "Manager", "BMC")
        out.update(
            {
                "DateTime": now.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                "DateTimeLocalOffset": "+00:00",
                "FirmwareVersion": IDRAC_FIRMWARE,
                "Links": {
                    "ManagerForChassis": [_ref(CHASSIS)],
                    "ManagerForChassis@odata.count": 1,
                    "ManagerForServers": [_ref(SYSTEM)],
                    "ManagerForServers@odata.count": 1,
                },
                "ManagerType": "BMC",
                "Model": IDRAC_MODEL,
                "PowerState": "On",
                "Status": _status(),
                "UUID": self.manager_uuid,
            }
        )
        return out

    def _chassis_collection(self) -> dict[str, Any]:
        return self._collection(
            "ChassisCollection", f"{ROOT}/Chassis", "Chassis Collection", "Collection of Chassis", [CHASSIS]
        )

    def _chassis(self) -> dict[str, Any]:
        out = self._base(
            "Chassis",
            CHASSIS,
            "System.Embedded.1",
            "Computer System Chassis",
            "It represents the properties for physical components for any system.",
        )
        out.update(
            {
                "ChassisType": "RackMount",
                "IndicatorLED": "Lit",
                "Links": {
                    "ComputerSystems": [_ref(SYSTEM)],
                    "ComputerSystems@odata.count": 1,
                    "ManagedBy": [_ref(MANAGER)],
                    "ManagedBy@odata.count": 1,
                },
                "Manufacturer": "Dell Inc.",
                "Model": self.machine.model or "PowerEdge",
                "PartNumber": "0" + self.tag[:5] + "A00",
                "Power": _ref(POWER),
                "PowerState": str(self._power_state()),
                "SKU": self.tag,
                "SerialNumber": "CN7016" + self.tag + "0",
                "Status": _status(),
                "Thermal": _ref(THERMAL),
            }
        )
        return out

    def _load_fraction(self, watts: float) -> float:
        return max(0.0, min(1.0, watts / PSU_CAPACITY_W))

    def _power(self) -> dict[str, Any]:
        watts = self._sample_power()
        with self._lock:
            window = [w for _, w in self._power_samples] or [watts]
        on = self._power_state() is not PowerState.OFF
        out = self._base("Power", POWER, "Power", "Power", "Power")
        psu_state = _status() if on else _status("StandbyOffline", "OK")
        supplies = []
        for i in range(2):
            supplies.append(
                {
                    "@odata.id": f"{POWER}#/PowerSupplies/{i}",
                    "FirmwareVersion": "00.1B.53",
                    "LastPowerOutputWatts": round(watts / 2),
                    "LineInputVoltage": 230,
                    "Manufacturer": "Dell",
                    "MemberId": f"PSU.Slot.{i + 1}",
                    "Model": "PWR SPLY,750W,RDNT,DELTA",
                    "Name": f"PS{i + 1} Status",
                    "PartNumber": "0D1VXDA00",
                    "PowerCapacityWatts": PSU_CAPACITY_W,
                    "PowerSupplyType": "AC",
                    "SerialNumber": f"CNDED00{self.tag}{i + 1}",
                    "Status": psu_state,
                }
            )
        out.update(
            {
                "PowerControl": [
                    {
                        "@odata.id": f"{POWER}#/PowerControl/0",
                        "MemberId": "PowerControl",
                        "Name": "System Power Control",
                        "PowerAllocatedWatts": PSU_CAPACITY_W,
                        "PowerAvailableWatts": 0,
                        "PowerCapacityWatts": PSU_CAPACITY_W,
                        "PowerConsumedWatts": round(watts),
                        "PowerLimit": {"LimitException": "HardPowerOff", "LimitInWatts": None},
                        "PowerMetrics": {
                            "AverageConsumedWatts": round(sum(window) / len(window)),
                            "IntervalInMin": int(POWER_METRICS_WINDOW_S // 60),
                            "MaxConsumedWatts": round(max(window)),
                            "MinConsumedWatts": round(min(window)),
                        },
                        "PowerRequestedWatts": PSU_CAPACITY_W,
                        "RelatedItem": [_ref(CHASSIS), _ref(SYSTEM)],
                        "RelatedItem@odata.count": 2,
                    }
                ],
                "PowerControl@odata.count": 1,
                "PowerSupplies": supplies,
                "PowerSupplies@odata.count": len(supplies),
            }
        )
        return out

    def _thermal(self) -> dict[str, Any]:
        watts = float(self.ctx.twin.power_consumed_watts(self.machine.name))
        on = self._power_state() is not PowerState.OFF
        load = self._load_fraction(watts) if on else 0.0
        inlet = 22.0
        fans = []
        for i, fan in enumerate(("1A", "1B", "2A", "2B", "3A", "3B")):
            rpm = int(round((2880 + 9000 * load + 120 * (i % 2)) / 120) * 120) if on else 0
            fans.append(
                {
                    "@odata.id": f"{THERMAL}#/Fans/{i}",
                    "LowerThresholdCritical": 600,
                    "LowerThresholdFatal": 600,
                    "MemberId": f"0x17||Fan.Embedded.{fan}",
                    "Name": f"System Board Fan{fan}",
                    "PhysicalContext": "SystemBoard",
                    "Reading": rpm,
                    "ReadingUnits": "RPM",
                    "Status": _status() if on else _status("StandbyOffline", "OK"),
                }
            )
        temps = [
            ("SystemBoardInletTemp", "System Board Inlet Temp", inlet, "Intake", 42, 38, 4),
            (
                "SystemBoardExhaustTemp",
                "System Board Exhaust Temp",
                inlet + (6 + 22 * load if on else 0),
                "Exhaust",
                75,
                70,
                1,
            ),
            ("CPU1Temp", "CPU1 Temp", inlet + (12 + 50 * load if on else 0), "CPU", 95, 90, 14),
        ]
        temperatures = [
            {
                "@odata.id": f"{THERMAL}#/Temperatures/{i}",
                "LowerThresholdCritical": -7 if ctx_ == "Intake" else 3,
                "MemberId": f"iDRAC.Embedded.1#{member}",
                "Name": label,
                "PhysicalContext": ctx_,
                "ReadingCelsius": round(reading),
                "SensorNumber": number,
                "Status": _status(),
                "UpperThresholdCritical": crit,
                "UpperThresholdNonCritical": warn,
            }
            for i, (member, label, reading, ctx_, crit, warn, number) in enumerate(temps)
        ]
        out = self._base(
            "Thermal", THERMAL, "Thermal", "Thermal", "Represents the properties for Temperature and Cooling"
        )
        out.update(
            {
                "Fans": fans,
                "Fans@odata.count": len(fans),
                "Temperatures": temperatures,
                "Temperatures@odata.count": len(temperatures),
            }
        )
        return out

    def _session_service(self) -> dict[str, Any]:
        out = self._base(
            "SessionService", SESSION_SERVICE, "SessionService", "Session Service", "Session Service"
        )
        out.update(
            {
                "ServiceEnabled": True,
                "SessionTimeout": self.session_timeout_s,
                "Sessions": _ref(SESSIONS),
                "Status": _status(),
            }
        )
        return out

    def _sessions_collection(self) -> dict[str, Any]:
        with self._lock:
            self._expire_sessions(self._now_lab())
            ids = list(self._sessions)
        return self._collection(
            "SessionCollection",
            SESSIONS,
            "Session Collection",
            "Session Collection",
            [f"{SESSIONS}/{i}" for i in ids],
        )

    def _session(self, s: _Session) -> dict[str, Any]:
        out = self._base("Session", f"{SESSIONS}/{s.id}", s.id, "User Session", "User Session")
        out.update({"Password": None, "UserName": s.user})
        return out

    # --- sessions --------------------------------------------------------------------------------
    def _create_session(self, req: Request) -> Response:
        body = _json_object(req)
        if body is None:
            return self._json(400, msg.malformed_json())
        for prop in ("UserName", "Password"):
            if prop not in body:
                return self._json(400, msg.property_missing(prop))
            if not isinstance(body[prop], str):
                return self._json(400, msg.property_value_type_error(prop, body[prop]))
        if not self._check_password(body["UserName"], body["Password"]):
            return self._json(401, msg.bad_credentials())
        now = self._now_lab()
        with self._lock:
            self._expire_sessions(now)
            if len(self._sessions) >= self.bmc.max_sessions:
                return self._json(503, msg.session_limit())
            sid = str(self._next_session)
            self._next_session += 1
            s = _Session(sid, secrets.token_hex(16), body["UserName"], now, now)
            self._sessions[sid] = s
        location = f"{SESSIONS}/{sid}"
        return self._json(201, self._session(s), [("X-Auth-Token", s.token), ("Location", location)])

    def _delete_session(self, sid: str) -> Response:
        with self._lock:
            s = self._sessions.pop(sid, None)
        if s is None:
            return self._json(404, msg.resource_missing(f"{SESSIONS}/{sid}"))
        return self._json(200, msg.success_body())

    def active_sessions(self) -> int:
        with self._lock:
            self._expire_sessions(self._now_lab())
            return len(self._sessions)

    # --- actions ---------------------------------------------------------------------------------
    def _reset(self, req: Request) -> Response:
        body = _json_object(req)
        if body is None:
            return self._json(400, msg.malformed_json())
        reset_type = body.get("ResetType")
        if reset_type is None:
            return self._json(400, msg.property_missing("ResetType"))
        if reset_type not in RESET_TYPES:
            return self._json(400, msg.value_not_in_list("ResetType", reset_type))
        name = self.machine.name
        state = self._power_state()
        if reset_type == "Nmi":
            return empty_response(204, [("OData-Version", "4.0")])
        if reset_type == "PushPowerButton":
            action = (
                PowerAction.ON if state in (PowerState.OFF, PowerState.POWERING_OFF) else PowerAction.SHUTDOWN
            )
        else:
            action = _RESET_ACTIONS[reset_type]
            if action is PowerAction.ON and state is not PowerState.OFF:
                return self._json(409, msg.already_on())
            if action is not PowerAction.ON and state is PowerState.OFF:
                return self._json(409, msg.already_off())
        log.debug("redfish %s: %s -> twin %s", name, reset_type, action)
        self.ctx.twin.power(name, action)
        return empty_response(204, [("OData-Version", "4.0")])

    def _patch_system(self, req: Request) -> Response:
        body = _json_object(req)
        if body is None:
            return self._json(400, msg.malformed_json())
        for key in body:
            if key != "Boot":
                return self._json(400, msg.property_unknown(key))
        boot = body.get("Boot")
        if not isinstance(boot, dict):
            return self._json(400, msg.property_value_type_error("Boot", boot))
        allowed = {
            "BootSourceOverrideEnabled": BOOT_ENABLED,
            "BootSourceOverrideTarget": BOOT_TARGETS,
            "BootSourceOverrideMode": BOOT_MODES,
        }
        for key, value in boot.items():
            if key not in allowed:
                return self._json(400, msg.property_unknown(f"Boot/{key}"))
            if value not in allowed[key]:
                return self._json(400, msg.value_not_in_list(key, value))
        self._apply_once()
        with self._lock:
            if "BootSourceOverrideTarget" in boot:
                self._boot_target = boot["BootSourceOverrideTarget"]
            if "BootSourceOverrideMode" in boot:
                self._boot_mode = boot["BootSourceOverrideMode"]
            if "BootSourceOverrideEnabled" in boot:
                self._boot_enabled = boot["BootSourceOverrideEnabled"]
                self._once_baseline = (
                    self.ctx.twin.boot_count(self.machine.name) if self._boot_enabled == "Once" else None
                )
        return self._json(200, msg.success_body())

    def _patch_session_service(self, req: Request) -> Response:
        body = _json_object(req)
        if body is None:
            return self._json(400, msg.malformed_json())
        for key in body:
            if key != "SessionTimeout":
                return self._json(400, msg.property_unknown(key))
        value = body.get("SessionTimeout")
        lo, hi = SESSION_TIMEOUT_RANGE
        if not isinstance(value, int) or isinstance(value, bool):
            return self._json(400, msg.property_value_type_error("SessionTimeout", value))
        if not lo <= value <= hi:
            return self._json(400, msg.value_not_in_list("SessionTimeout", value))
        with self._lock:
            self.session_timeout_s = value
        return self._json(200, msg.success_body())
