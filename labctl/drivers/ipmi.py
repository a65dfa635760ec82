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
from typing import Any, TypeVar

from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import IpmiEndpoint

T = TypeVar("T")

# verb -> pyghmi's name for the Chassis Control request (off 0, on 1, reset 3, soft off 5)
_REQUESTS: dict[PowerVerb, str] = {
    PowerVerb.ON: "on",
    PowerVerb.GRACEFUL_OFF: "shutdown",
    PowerVerb.FORCE_OFF: "off",
    PowerVerb.REBOOT: "reset",  # IPMI has no OS restart: the nearest is a hard reset
    PowerVerb.RESET: "reset",
}
_SAID: dict[PowerVerb, str] = {
    PowerVerb.ON: "power up",
    PowerVerb.GRACEFUL_OFF: "soft off (ACPI)",
    PowerVerb.FORCE_OFF: "power down",
    PowerVerb.REBOOT: "hard reset (IPMI has no graceful restart)",
    PowerVerb.RESET: "hard reset",
}


class IpmiError(EndpointError):
    pass


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
        return box["value"]  # type: ignore[no-any-return]

    def _error(self, action: str, exc: BaseException) -> EndpointError:
        if isinstance(exc, EndpointError):
            return exc
        text = str(exc) or type(exc).__name__
        low = text.lower()
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

    def power_reading(self) -> PowerReading:
        cmd = self._command("read chassis power")
        state = self._within("read chassis power", lambda: cmd.get_power())
        return {"on": PowerReading.ON, "off": PowerReading.OFF}.get(
            str(state.get("powerstate")), PowerReading.UNKNOWN
        )

    def act(self, verb: PowerVerb) -> str:
        """Send the Chassis Control request for ``verb``; one line saying what the BMC did."""
        action = f"chassis control: {_SAID[verb]}"
        cmd = self._command(action)
        if verb in (PowerVerb.GRACEFUL_OFF, PowerVerb.FORCE_OFF) and self.power_reading() is PowerReading.OFF:
            return "already off"
        result = self._within(action, lambda: cmd.set_power(_REQUESTS[verb], wait=False))
        if "pendingpowerstate" not in result:
            return f"already {result.get('powerstate', '?')}"
        return f"{_SAID[verb]} accepted"

    def __enter__(self) -> IpmiClient:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
