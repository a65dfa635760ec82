"""Redfish (iDRAC) with the DMTF ``redfish`` library: sessions, limits, timeouts, 503 backoff.

One :class:`RedfishClient` per BMC holds one session (``X-Auth-Token``) for all its calls and
always logs out on :meth:`close`; if the service has no session service, or stays at its session
limit after the bounded retries, it falls back to HTTP basic auth (which holds no session slot).
Every call has a timeout and none is retried by the library (``max_retry=0``: a hung BMC costs
one timeout, not eleven); a 503 is retried here with backoff that honours ``Retry-After``, a
bounded number of times. Concurrent requests and open sessions per BMC are bounded by the
inventory's ``max_sessions`` across every client in the process. Every error names the BMC and
the action.

TLS: the library verifies only when given a CA file, so ``verify`` mode always passes one (the
inventory's ``ca_file``, $REQUESTS_CA_BUNDLE, or certifi's bundle); ``insecure`` passes none.
The library hands that choice to requests explicitly on each request, so the environment
cannot override it, and the session does not read proxies or .netrc from the environment.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import redfish
import requests
from redfish.rest.v1 import HttpClient, JsonDecodingError, RestResponse, RetriesExhaustedError

from labctl.drivers.base import Backoff, KeyedLimits, TlsAdapter, parse_retry_after, requests_verify, tls_fix
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.drivers.readings import Reading
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import BmcEndpoint

_REQUEST_LIMITS = KeyedLimits()
_SESSION_LIMITS = KeyedLimits()
_OK = (200, 201, 202, 204)


class RedfishError(EndpointError):
    def __init__(
        self,
        endpoint: str,
        action: str,
        reason: str,
        fix: str = "",
        status: int | None = None,
        message_id: str = "",
    ):
        super().__init__(endpoint, action, reason, fix)
        self.status = status
        self.message_id = message_id


class RedfishTimeout(EndpointTimeout):
    pass


@dataclass(frozen=True)
class BmcInventory:
    manufacturer: str
    model: str
    serial: str
    service_tag: str
    bios_version: str
    power_state: str
    bmc_model: str
    bmc_firmware: str
    redfish_version: str


# ComputerSystem.PowerState -> what it means
_READINGS = {
    "On": PowerReading.ON,
    "Off": PowerReading.OFF,
    "PoweringOn": PowerReading.POWERING_ON,
    "PoweringOff": PowerReading.POWERING_OFF,
}
# ResetType per verb, most preferred first (graceful where the system offers it)
_RESET_TYPES: dict[PowerVerb, tuple[str, ...]] = {
    PowerVerb.ON: ("On",),
    PowerVerb.GRACEFUL_OFF: ("GracefulShutdown", "ForceOff"),
    PowerVerb.FORCE_OFF: ("ForceOff",),
    PowerVerb.REBOOT: ("GracefulRestart", "ForceRestart", "PowerCycle"),
    PowerVerb.RESET: ("ForceRestart", "PowerCycle"),
}


# ResetType -> the PowerState it leaves the system in, for the ones that are a no-op there
_SETTLED = {"On": "On", "ForceOff": "Off", "GracefulShutdown": "Off"}


def reset_type_for(verb: PowerVerb, allowed: tuple[str, ...]) -> str:
    """The ResetType for ``verb``: the first of its choices the system allows (``allowed`` empty:
    not advertised, so the first choice, and the BMC says if it objects)."""
    choices = _RESET_TYPES[verb]
    for c in choices:
        if not allowed or c in allowed:
            return c
    return choices[0]  # not offered: reset() names the allowed values in its error


def power_reading(power_state: str) -> PowerReading:
    return _READINGS.get(power_state, PowerReading.UNKNOWN)


@dataclass(frozen=True)
class ResetPlan:
    """A reset read and checked ahead of the burst: where to POST and which ResetType."""

    verb: PowerVerb
    reset_type: str
    allowed: tuple[str, tuple[str, ...]]  # (action target, allowable values)


def extended_message(resp: RestResponse) -> tuple[str, str]:
    """(MessageId, Message) of a Redfish error body, as iDRAC and the DMTF schema write it."""
    try:
        body = resp.dict
    except Exception:
        return "", (resp.text or "")[:200]
    if not isinstance(body, dict):
        return "", ""
    err = body.get("error", body)
    info = err.get("@Message.ExtendedInfo") if isinstance(err, dict) else None
    if isinstance(info, list) and info and isinstance(info[0], dict):
        return str(info[0].get("MessageId", "")), str(info[0].get("Message", ""))
    if isinstance(err, dict) and err.get("message"):
        return str(err.get("code", "")), str(err["message"])
    return "", ""


def retry_after_s(resp: RestResponse) -> float | None:
    """Seconds to wait before retrying a 503: its Retry-After header, else the interval of a
    ``Base.x.ServiceTemporarilyUnavailable`` message in the body (an iDRAC whose data sources are
    not up yet puts "Retry in 30 seconds" there, MessageArgs ["30"])."""
    header = parse_retry_after(resp.getheader("retry-after"))
    if header is not None:
        return header
    try:
        body = resp.dict
    except Exception:
        return None
    err = body.get("error", body) if isinstance(body, dict) else None
    infos = err.get("@Message.ExtendedInfo") if isinstance(err, dict) else None
    for info in infos if isinstance(infos, list) else []:
        if isinstance(info, dict) and str(info.get("MessageId", "")).endswith(
            ".ServiceTemporarilyUnavailable"
        ):
            try:
                return max(0.0, float((info.get("MessageArgs") or [])[0]))
            except (IndexError, TypeError, ValueError):
                return None
    return None


def _is_session_limit(message_id: str, message: str) -> bool:
    return "RAC0218" in message_id or "maximum number of user sessions" in message.lower()


class RedfishClient:
    """A session with one BMC. Use as a context manager, or call :meth:`open` and :meth:`close`."""

    def __init__(
        self,
        name: str,
        bmc: BmcEndpoint,
        *,
        timeout_s: float = 15.0,
        backoff: Backoff = Backoff(attempts=4, base_s=0.5, max_s=8.0),
        session_wait_s: float = 60.0,
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.name = name
        self.bmc = bmc
        self.timeout_s = timeout_s
        self.backoff = backoff
        self.session_wait_s = session_wait_s
        self._sleep = sleep
        self.endpoint = f"{name} BMC ({bmc.url})"
        self._requests = _REQUEST_LIMITS.get(bmc.url, bmc.max_sessions)
        self._sessions = _SESSION_LIMITS.get(bmc.url, bmc.max_sessions)
        self._client: HttpClient | None = None
        self._lock = threading.RLock()
        self._holds_slot = False
        self.auth_mode: str = ""  # "session" or "basic (...why...)"
        self.retries_503 = 0  # how many 503s this client backed off from
        self._system_uri: str | None = None
        self._manager_uri: str | None = None
        self._chassis_uri: str | None = None  # where the power draw is read
        self._power_kind = "Power"
        self.root: dict[str, Any] = {}

    # --- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> RedfishClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> RedfishClient:
        with self._lock:
            if self._client is not None:
                return self
            if not self._sessions.acquire(timeout=self.session_wait_s):
                raise RedfishError(
                    self.endpoint,
                    "log in",
                    f"labctl already holds {self.bmc.max_sessions} sessions with this BMC",
                    "raise bmc.max_sessions if the BMC allows more, or close other sessions",
                )
            self._holds_slot = True
            try:
                password = resolve_credential(self.bmc.password, self.endpoint)
                verify = requests_verify(self.bmc.tls)
                client = redfish.redfish_client(
                    base_url=self.bmc.url,
                    username=self.bmc.user,
                    password=password,
                    cafile=verify if isinstance(verify, str) else None,
                    timeout=self.timeout_s,
                    max_retry=0,
                    check_connectivity=False,
                    https_adapter=TlsAdapter(self.bmc.tls, self.endpoint),
                )
                client._session.trust_env = False  # no proxies or .netrc from the environment
                self._client = client
                root = self._call("GET", "/redfish/v1/", action="read the service root", auth=False)
                self.root = self._json_body(root, "read the service root") if root.status == 200 else {}
                self._login(client, password)
            except BaseException:
                self._drop_client()
                raise
            return self

    def _login(self, client: HttpClient, password: str) -> None:
        login_url = (self.root.get("Links", {}).get("Sessions", {}) or {}).get("@odata.id") or (
            "/redfish/v1/SessionService/Sessions"
        )
        action = "log in"
        why_basic = ""
        attempt = 0
        # A service root that names no session service (sushy-tools, some older BMCs) has none:
        # a POST to the usual URI would be refused as unauthenticated (401), not as absent (404).
        advertised = bool(self.root.get("SessionService") or (self.root.get("Links") or {}).get("Sessions"))
        if self.root and not advertised:
            why_basic = "no session service in the service root"
        while not why_basic:
            attempt += 1
            resp = self._raw("POST", login_url, {"UserName": self.bmc.user, "Password": password}, action)
            if resp.status in _OK and resp.getheader("x-auth-token"):
                client.set_session_key(resp.getheader("x-auth-token"))
                loc = resp.getheader("location") or ""
                if not loc:
                    try:
                        loc = resp.dict.get("@odata.id", "")
                    except Exception:
                        loc = ""
                client.set_session_location(loc)
                self.auth_mode = "session"
                return
            mid, msg = extended_message(resp)
            if resp.status == 401:
                raise self._auth_error(action)
            if resp.status == 503:
                if attempt < self.backoff.attempts:
                    self.retries_503 += 1
                    self._sleep(self.backoff.delay(attempt, retry_after_s(resp)))
                    continue
                if _is_session_limit(mid, msg):
                    why_basic = "session limit reached"
                    break
                raise self._busy_error(action, resp, attempt)
            if resp.status in (404, 405, 501):
                why_basic = "no session service"
                break
            raise self._status_error(action, resp)
        # basic auth: every request carries the credentials; nothing to log out from
        key = base64.b64encode(f"{self.bmc.user}:{password}".encode()).decode()
        client.set_authorization_key(f"Basic {key}")
        self.auth_mode = f"basic ({why_basic})"
        self.get("/redfish/v1/Systems", action="log in with basic auth")

    def close(self) -> None:
        """Log out (always attempted) and free the session slot; never raises."""
        with self._lock:
            client = self._client
            if client is None:
                return
            try:
                loc = client.get_session_location()
                if client.get_session_key() and loc:
                    path = urlparse(loc).path or loc
                    try:
                        with self._requests:
                            client.delete(path, timeout=self.timeout_s, max_retry=0)
                    except Exception:
                        pass  # the session times out on the BMC on its own
            finally:
                self._drop_client()

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.set_session_key(None)
            client.set_authorization_key(None)
            client._session.close()
        if self._holds_slot:
            self._holds_slot = False
            self._sessions.release()

    # --- requests ------------------------------------------------------------------------------
    def _raw(self, method: str, path: str, body: Any, action: str) -> RestResponse:
        """One HTTP exchange within the per-BMC request limit; library errors become ours."""
        client = self._client
        if client is None:
            raise RedfishError(self.endpoint, action, "not connected", "call open() first")
        with self._requests:
            try:
                if method == "GET":
                    resp = client.get(path, timeout=self.timeout_s, max_retry=0)
                elif method == "POST":
                    resp = client.post(path, body=body, timeout=self.timeout_s, max_retry=0)
                elif method == "PATCH":
                    resp = client.patch(path, body=body, timeout=self.timeout_s, max_retry=0)
                elif method == "DELETE":
                    resp = client.delete(path, timeout=self.timeout_s, max_retry=0)
                else:
                    raise ValueError(method)
            except RetriesExhaustedError as exc:
                raise self._transport_error(action, exc.__cause__ or exc) from None
            except requests.RequestException as exc:
                raise self._transport_error(action, exc) from None
        return resp

    def _call(
        self, method: str, path: str, body: Any = None, *, action: str, auth: bool = True
    ) -> RestResponse:
        """A request with 503 backoff and one re-login when a session has expired."""
        attempt = 0
        relogged = False
        while True:
            attempt += 1
            resp = self._raw(method, path, body, action)
            if resp.status == 503 and attempt < self.backoff.attempts:
                self.retries_503 += 1
                self._sleep(self.backoff.delay(attempt, retry_after_s(resp)))
                continue
            if resp.status == 503:
                raise self._busy_error(action, resp, attempt)
            if resp.status == 401 and auth and not relogged and self.auth_mode == "session":
                relogged = True
                assert self._client is not None
                self._client.set_session_key(None)
                self._login(self._client, resolve_credential(self.bmc.password, self.endpoint))
                continue
            if resp.status == 401 and auth:
                raise self._auth_error(action)
            return resp

    def get(self, path: str, *, action: str = "") -> dict[str, Any]:
        action = action or f"GET {path}"
        resp = self._call("GET", path, action=action)
        if resp.status != 200:
            raise self._status_error(action, resp)
        return self._json_body(resp, action)

    def _json_body(self, resp: RestResponse, action: str) -> dict[str, Any]:
        """The JSON object of a response; a body that is not JSON (a proxy's page, a BMC
        rebooting its web server) is an error naming the BMC, not the library's traceback."""
        try:
            data = resp.dict
        except JsonDecodingError:
            raise RedfishError(
                self.endpoint,
                action,
                f"HTTP {resp.status} with a body that is not JSON: {(resp.text or '')[:120]!r}",
                "check that the URL points at the BMC's Redfish service and not at a proxy",
                status=resp.status,
            ) from None
        return data if isinstance(data, dict) else {}

    def post(self, path: str, body: dict[str, Any], *, action: str) -> RestResponse:
        return self._call("POST", path, body, action=action)

    def patch(self, path: str, body: dict[str, Any], *, action: str) -> RestResponse:
        return self._call("PATCH", path, body, action=action)

    # --- errors --------------------------------------------------------------------------------
    def _transport_error(self, action: str, exc: BaseException) -> EndpointError:
        if isinstance(exc, requests.exceptions.SSLError):
            return RedfishError(
                self.endpoint,
                action,
                f"TLS verification failed: {_short(exc)}",
                tls_fix(self.bmc.tls, "the BMC"),
            )
        if isinstance(exc, requests.exceptions.ConnectTimeout):
            return RedfishTimeout(
                self.endpoint,
                action,
                f"no connection within {self.timeout_s:g} s",
                "check the BMC address and that its network port is up",
            )
        if isinstance(exc, requests.exceptions.Timeout):
            return RedfishTimeout(
                self.endpoint,
                action,
                f"no answer within {self.timeout_s:g} s (the BMC accepted the connection but did not respond)",
                "the BMC may be hung: reset it (racadm racreset) or check it from its web UI",
            )
        if isinstance(exc, requests.exceptions.ConnectionError):
            return RedfishError(
                self.endpoint,
                action,
                f"cannot connect: {_short(exc)}",
                "check the BMC address and port in the inventory and that the BMC is powered",
            )
        return RedfishError(self.endpoint, action, f"{type(exc).__name__}: {_short(exc)}")

    def _auth_error(self, action: str) -> RedfishError:
        return RedfishError(
            self.endpoint,
            action,
            f"credentials rejected for user {self.bmc.user!r} (401)",
            f"check the user and the credential {self.bmc.password}",
            status=401,
        )

    def _busy_error(self, action: str, resp: RestResponse, attempts: int) -> RedfishError:
        mid, msg = extended_message(resp)
        ra = resp.getheader("retry-after")
        return RedfishError(
            self.endpoint,
            action,
            f"service unavailable (503) after {attempts} attempts"
            + (f", Retry-After {ra}" if ra else "")
            + (f": {msg}" if msg else ""),
            "close other sessions to the BMC (iDRAC allows few), lower concurrency, or retry later",
            status=503,
            message_id=mid,
        )

    def _status_error(self, action: str, resp: RestResponse) -> RedfishError:
        mid, msg = extended_message(resp)
        return RedfishError(
            self.endpoint,
            action,
            f"HTTP {resp.status}" + (f": {msg}" if msg else "") + (f" [{mid}]" if mid else ""),
            status=resp.status,
            message_id=mid,
        )

    # --- resources -----------------------------------------------------------------------------
    def _first_member(self, collection: str, action: str) -> str:
        data = self.get(collection, action=action)
        members = data.get("Members") or []
        if not members:
            raise RedfishError(self.endpoint, action, f"{collection} has no members")
        return str(members[0]["@odata.id"])

    @property
    def system_uri(self) -> str:
        if self._system_uri is None:
            coll = (self.root.get("Systems") or {}).get("@odata.id", "/redfish/v1/Systems")
            self._system_uri = self._first_member(coll, "find the computer system")
        return self._system_uri

    @property
    def manager_uri(self) -> str:
        if self._manager_uri is None:
            coll = (self.root.get("Managers") or {}).get("@odata.id", "/redfish/v1/Managers")
            self._manager_uri = self._first_member(coll, "find the manager")
        return self._manager_uri

    def system(self) -> dict[str, Any]:
        return self.get(self.system_uri, action="read the system")

    def power_state(self) -> str:
        return str(self.system().get("PowerState", "Unknown"))

    def allowed_reset_types(self, system: dict[str, Any] | None = None) -> tuple[str, tuple[str, ...]]:
        """(action target, allowable ResetType values) from the system resource or its ActionInfo."""
        system = system or self.system()
        act = (system.get("Actions") or {}).get("#ComputerSystem.Reset") or {}
        target = act.get("target") or f"{self.system_uri}/Actions/ComputerSystem.Reset"
        allowed = act.get("ResetType@Redfish.AllowableValues")
        if allowed is None and act.get("@Redfish.ActionInfo"):
            info = self.get(act["@Redfish.ActionInfo"], action="read the reset action info")
            for p in info.get("Parameters") or []:
                if p.get("Name") == "ResetType":
                    allowed = p.get("AllowableValues")
        return str(target), tuple(allowed or ())

    def reset(self, reset_type: str, *, allowed: tuple[str, tuple[str, ...]] | None = None) -> str:
        """Send ``ComputerSystem.Reset``; ``"accepted"``, or ``"already"`` when iDRAC says it is already there.

        ``reset_type`` is checked against the system's allowable values first (``allowed``: what
        :meth:`allowed_reset_types` returned, to spare reading the system again), so an unsupported
        value fails here with the list instead of as an HTTP 400 from the BMC.
        """
        action = f"ComputerSystem.Reset {reset_type}"
        target, values = allowed if allowed is not None else self.allowed_reset_types()
        if values and reset_type not in values:
            raise RedfishError(
                self.endpoint,
                action,
                f"ResetType {reset_type!r} is not supported by this system",
                f"use one of: {', '.join(values)}",
            )
        resp = self.post(target, {"ResetType": reset_type}, action=action)
        if resp.status in _OK:
            return "accepted"
        mid, _ = extended_message(resp)
        if resp.status in (400, 409) and ("PSU501" in mid or "PSU502" in mid):
            return "already"
        if resp.status == 409 and reset_type in _SETTLED:
            # iDRAC answers a reset to where the system already is with 409; its message id differs
            # between firmware releases (and for "already off" is not published), so the system's
            # own PowerState decides
            if self.power_state() == _SETTLED[reset_type]:
                return "already"
        raise self._status_error(action, resp)

    def plan_reset(self, verb: PowerVerb) -> ResetPlan:
        """Read the reset action and choose the ResetType for ``verb`` (before a burst)."""
        allowed = self.allowed_reset_types()
        return ResetPlan(verb, reset_type_for(verb, allowed[1]), allowed)

    def fire(self, plan: ResetPlan) -> str:
        """Send a planned reset; one line saying what the BMC did ("GracefulRestart accepted",
        "already on")."""
        if self.reset(plan.reset_type, allowed=plan.allowed) == "accepted":
            return f"{plan.reset_type} accepted"
        return f"already {'on' if plan.verb is PowerVerb.ON else 'off'}"

    def set_boot_once(self, target: str) -> None:
        """One-time boot override (``BootSourceOverrideEnabled: Once``), e.g. ``Pxe``."""
        action = f"set one-time boot to {target}"
        system = self.system()
        allowed = (system.get("Boot") or {}).get("BootSourceOverrideTarget@Redfish.AllowableValues")
        if allowed and target not in allowed:
            raise RedfishError(
                self.endpoint,
                action,
                f"boot target {target!r} is not supported",
                f"use one of: {', '.join(allowed)}",
            )
        resp = self.patch(
            self.system_uri,
            {"Boot": {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}},
            action=action,
        )
        if resp.status not in _OK:
            raise self._status_error(action, resp)

    def boot_override(self) -> tuple[str, str]:
        boot = self.system().get("Boot") or {}
        return str(boot.get("BootSourceOverrideTarget", "")), str(boot.get("BootSourceOverrideEnabled", ""))

    def _power_source(self) -> tuple[str, str]:
        """(resource kind, URI) of the server's power draw: the chassis's ``Power`` (what iDRAC
        serves), or its ``EnvironmentMetrics`` on a service that has only the newer resources
        (Redfish deprecated ``Power`` in 2020.4)."""
        if self._chassis_uri is None:
            system = self.system()
            links = (system.get("Links") or {}).get("Chassis") or []
            chassis = (
                links[0]["@odata.id"]
                if links
                else self._first_member(
                    (self.root.get("Chassis") or {}).get("@odata.id", "/redfish/v1/Chassis"),
                    "find the chassis",
                )
            )
            data = self.get(chassis, action="read the chassis")
            power = (data.get("Power") or {}).get("@odata.id")
            env = (data.get("EnvironmentMetrics") or {}).get("@odata.id")
            if power or not env:
                self._power_kind, self._chassis_uri = "Power", power or f"{chassis}/Power"
            else:
                self._power_kind, self._chassis_uri = "EnvironmentMetrics", env
        return self._power_kind, self._chassis_uri

    def power_watts(self) -> float:
        """The server's power draw in watts: ``PowerControl[0].PowerConsumedWatts`` of the chassis's
        Power resource, or ``PowerWatts.Reading`` of its EnvironmentMetrics (both in watts by the
        schema)."""
        action = "read power consumption"
        kind, uri = self._power_source()
        data = self.get(uri, action=action)
        if kind == "EnvironmentMetrics":
            reading = (data.get("PowerWatts") or {}).get("Reading")
            if reading is None:
                raise RedfishError(
                    self.endpoint, action, "the chassis's EnvironmentMetrics report no PowerWatts"
                )
            return float(reading)
        ctl = data.get("PowerControl") or []
        if not ctl or ctl[0].get("PowerConsumedWatts") is None:
            raise RedfishError(self.endpoint, action, "the chassis reports no PowerConsumedWatts")
        return float(ctl[0]["PowerConsumedWatts"])

    def power_reading(self, now: Callable[[], float]) -> Reading:
        return Reading(self.name, "power_w", "W", now(), self.power_watts())

    def inventory(self) -> BmcInventory:
        system = self.system()
        manager = self.get(self.manager_uri, action="read the manager")
        oem = ((system.get("Oem") or {}).get("Dell") or {}).get("DellSystem") or {}
        return BmcInventory(
            manufacturer=str(system.get("Manufacturer", "")),
            model=str(system.get("Model", "")),
            serial=str(system.get("SerialNumber", "")),
            service_tag=str(system.get("SKU") or oem.get("ChassisServiceTag") or ""),
            bios_version=str(system.get("BiosVersion", "")),
            power_state=str(system.get("PowerState", "")),
            bmc_model=str(manager.get("Model", "")),
            bmc_firmware=str(manager.get("FirmwareVersion", "")),
            redfish_version=str(self.root.get("RedfishVersion", "")),
        )


def _short(exc: BaseException) -> str:
    """A library exception as one line, without the noise of urllib3's nested reprs."""
    text = str(exc)
    for marker in ("Caused by ", "(Caused by "):
        if marker in text:
            text = text.split(marker, 1)[1].rstrip(")")
    if "SSLError(" in text or "SSLCertVerificationError" in text:
        if "CERTIFICATE_VERIFY_FAILED" in text:
            tail = text.split("certificate verify failed:", 1)[-1].split("(")[0].strip(" ')\"")
            return f"certificate verify failed: {tail}" if tail else "certificate verify failed"
    return text[:200]
