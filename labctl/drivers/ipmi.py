"""IPMI 2.0 over LAN (RMCP+, UDP 623) with ``pyghmi``: chassis power control and status.

Chassis Control (IPMI 2.0 section 28.3) has no graceful restart: ``reboot`` is a hard reset here,
and ``graceful_off`` is the soft-off request (ACPI power button: the OS shuts down). Chassis
Status bit 0 ("power is on") is all IPMI says about power, so there is no powering-on/off state.

pyghmi runs its own I/O thread and retransmits on its own schedule; each call here also has a
deadline of its own (``timeout_s``): a BMC that never answers costs that long, then an
:class:`IpmiTimeout` naming it. A BMC session is opened once per client and logged out on
:meth:`IpmiClient.close`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import IpmiEndpoint

T = TypeVar("T")

# verb -> Chassis Control request code (IPMI 2.0 table 28-4)
_CONTROL: dict[PowerVerb, int] = {
    PowerVerb.ON: 1,  # power up
    PowerVerb.GRACEFUL_OFF: 5,  # soft shutdown (ACPI overtemperature emulation: the OS shuts down)
    PowerVerb.FORCE_OFF: 0,  # power down
    PowerVerb.REBOOT: 3,  # hard reset: IPMI has no OS restart
    PowerVerb.RESET: 3,  # hard reset
}
CHASSIS_NETFN = 0x00
GET_CHASSIS_STATUS = 0x01
CHASSIS_CONTROL = 0x02
APP_NETFN = 0x06
GET_DEVICE_ID = 0x01
_SAID: dict[PowerVerb, str] = {
    PowerVerb.ON: "power up",
    PowerVerb.GRACEFUL_OFF: "soft off (ACPI)",
    PowerVerb.FORCE_OFF: "power down",
    PowerVerb.REBOOT: "hard reset (IPMI has no graceful restart)",
    PowerVerb.RESET: "hard reset",
}


class IpmiError(EndpointError):
    pass


@dataclass(frozen=True)
class DeviceId:
    """Get Device ID (IPMI 2.0 section 20.1): what the BMC says it is."""

    device_id: int
    device_revision: int
    firmware: str  # "4.40": major (binary) . minor (two BCD digits), as ipmitool prints it
    ipmi_version: str  # "2.0"
    manufacturer_id: int  # IANA enterprise number: 674 is Dell
    product_id: int


def _bcd(byte: int) -> str:
    return f"{byte >> 4}{byte & 0x0F}"


def parse_device_id(data: bytes | bytearray | list[int]) -> DeviceId:
    """The Get Device ID response body (without the completion code).

    The firmware's minor revision and the IPMI version are BCD (table 20-2): 0x40 is "40", not 64.
    """
    b = bytes(data)
    if len(b) < 11:
        raise ValueError(f"Get Device ID answered {len(b)} bytes, expected at least 11")
    return DeviceId(
        device_id=b[0],
        device_revision=b[1] & 0x0F,
        firmware=f"{b[2] & 0x7F}.{_bcd(b[3])}",
        ipmi_version=f"{b[4] & 0x0F}.{b[4] >> 4}",
        manufacturer_id=int.from_bytes(b[6:9], "little") & 0x0FFFFF,
        product_id=int.from_bytes(b[9:11], "little"),
    )


class IpmiTimeout(EndpointTimeout):
    pass


class IpmiClient:
    """One BMC over IPMI. :meth:`open` logs in; every call raises :class:`IpmiError` naming the BMC."""

    def __init__(self, name: str, endpoint: IpmiEndpoint, *, timeout_s: float = 15.0):
        self.name = name
        self.ep = endpoint
        self.timeout_s = timeout_s
        self.endpoint = f"{name} IPMI BMC ({endpoint.host}:{endpoint.port})"
        self._cmd: Any = None
        self._lock = threading.Lock()

    def _within(self, action: str, fn: Callable[[], T]) -> T:
        """``fn()`` with a deadline: pyghmi's own retries are not bounded by a caller's timeout."""
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed to the caller's thread below
                box["error"] = exc

        worker = threading.Thread(target=run, name=f"ipmi-{self.name}", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            raise IpmiTimeout(
                self.endpoint,
                action,
                f"no answer within {self.timeout_s:g} s",
                "check the BMC address and port (UDP 623), and that IPMI over LAN is enabled on it",
            )
        if "error" in box:
            raise self._error(action, box["error"])
        return box["value"]

    def _error(self, action: str, exc: BaseException) -> EndpointError:
        if isinstance(exc, EndpointError):
            return exc
        text = str(exc) or type(exc).__name__
        low = text.lower()
        if action == "log in" and isinstance(exc, AttributeError) and "errormsg" in text:
            # pyghmi marks a refused session broken (in logout) a moment before it stores the
            # reason, and its constructor can read the reason in between: an answered login that
            # failed, whose words were lost
            text = "the BMC refused the login (pyghmi lost its reason)"
            low = "unauthorized"
        if "unauthorized" in low or "incorrect password" in low or "invalid user" in low:
            return IpmiError(
                self.endpoint,
                action,
                f"credentials rejected for user {self.ep.user!r}: {text}",
                f"check the user and the credential {self.ep.password}",
            )
        if "timeout" in low or "timed out" in low:
            return IpmiTimeout(
                self.endpoint,
                action,
                f"no answer: {text}",
                "check the BMC address and port (UDP 623), and that IPMI over LAN is enabled on it",
            )
        return IpmiError(self.endpoint, action, text)

    def open(self) -> IpmiClient:
        with self._lock:
            if self._cmd is not None:
                return self
            password = resolve_credential(self.ep.password, self.endpoint)

            def login() -> Any:
                # pyghmi starts an I/O thread and sockets on import and first use: loaded only
                # when a lab has an IPMI machine
                from pyghmi.ipmi import command
                from pyghmi.ipmi.private import session

                # pyghmi keeps every session it ever started logging in under (bmc, user, ...)
                # and hands a logged-out one back to the next login, which then fails on it
                for key, old in list(session.Session.initting_sessions.items()):
                    if getattr(old, "broken", False):
                        session.Session.initting_sessions.pop(key, None)
                return command.Command(
                    bmc=self.ep.host, userid=self.ep.user, password=password, port=self.ep.port
                )

            self._cmd = self._within("log in", login)
        return self

    def close(self) -> None:
        """Log out of the BMC; never raises."""
        with self._lock:
            cmd, self._cmd = self._cmd, None
        if cmd is not None:
            try:
                self._within("log out", lambda: cmd.ipmi_session.logout())
            except EndpointError:
                pass  # the BMC drops an idle session on its own

    def _command(self, action: str) -> Any:
        if self._cmd is None:
            raise IpmiError(self.endpoint, action, "not connected", "call open() first")
        return self._cmd

    def _raw(
        self, action: str, command: int, data: tuple[int, ...] = (), *, netfn: int = CHASSIS_NETFN
    ) -> dict[str, Any]:
        cmd = self._command(action)
        response = self._within(action, lambda: cmd.raw_command(netfn=netfn, command=command, data=data))
        if "error" in response:
            raise IpmiError(
                self.endpoint,
                action,
                f"the BMC answered: {response['error']} (completion code {response.get('code', '?')})",
                "check that the user has operator privilege on the BMC",
            )
        return dict(response)

    def power_reading(self) -> PowerReading:
        """Chassis Status bit 0: power is on."""
        response = self._raw("read chassis power", GET_CHASSIS_STATUS)
        data = response.get("data") or []
        if not data:
            return PowerReading.UNKNOWN
        return PowerReading.ON if data[0] & 1 else PowerReading.OFF

    def device_id(self) -> DeviceId:
        """Get Device ID: the BMC's firmware revision, IPMI version, manufacturer and product."""
        action = "read the BMC's device id"
        response = self._raw(action, GET_DEVICE_ID, netfn=APP_NETFN)
        try:
            return parse_device_id(response.get("data") or b"")
        except ValueError as exc:
            raise IpmiError(self.endpoint, action, str(exc)) from None

    def act(self, verb: PowerVerb) -> str:
        """One Chassis Control request for ``verb`` (a single round trip); what the BMC did."""
        action = f"chassis control: {_SAID[verb]}"
        self._raw(action, CHASSIS_CONTROL, (_CONTROL[verb],))
        return f"{_SAID[verb]} accepted"

    def __enter__(self) -> IpmiClient:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
