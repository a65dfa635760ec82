"""The contract every launcher backend implements (a mechanism that starts user sessions), and
:class:`ProtocolBackend`, the one implementation of it over ``labctl-launcher/1`` whatever carries
the protocol.

A backend is chosen by a launcher's ``transport`` (:attr:`labctl.inventory.vdi.Launcher.transport`):
``ssh`` (labctl's launcher script or ``labctl launcher`` over OpenSSH), or ``agent`` (through the
site agent the inventory places the launcher at, over NATS). It never raises for one session: a
start that cannot be made is a :class:`~labctl.lab.launchers.model.Refusal`; an unreachable
launcher raises an :class:`~labctl.errors.EndpointError` naming it (and its agent) and the fix.

Adding a carrier (WinRM): a module in this package with a :class:`ProtocolBackend` subclass whose
:meth:`~ProtocolBackend.call` returns the launcher's answer, and one line in
:mod:`labctl.lab.launchers.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Protocol, TypeVar

from labctl.errors import EndpointError
from labctl.inventory.vdi import Launcher
from labctl.lab.launchers import wire
from labctl.lab.launchers.model import EventBatch, Refusal, SessionEvent

Args = Mapping[str, str | Sequence[str] | int]
T = TypeVar("T")


class LauncherBackend(Protocol):
    kind: ClassVar[str]

    def call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float | None = None) -> str:
        """One protocol call: the launcher's answer text (``labctl check`` greets with it)."""

    def hello(self, launcher: Launcher) -> tuple[float, int]:
        """Check the launcher answers and speaks the protocol: its clock now (lab epoch seconds)
        and the cursor of its journal now (poll events after it)."""

    def start(
        self, launcher: Launcher, logons: Sequence[tuple[str, str]], workload: str
    ) -> list[SessionEvent | Refusal]:
        """Start one session per ``(desktop, user)``, in one call where the mechanism allows."""

    def events(self, launcher: Launcher, after: int) -> EventBatch:
        """Every session state change and timed operation after ``after`` (a cursor it returned)."""

    def logoff(self, launcher: Launcher, sessions: Sequence[str]) -> list[SessionEvent]:
        """Log these sessions off (each reports ``logging_off``, then ``ended`` in later events)."""


class ProtocolBackend:
    """``labctl-launcher/1`` over a carrier: a subclass gives :meth:`call`, the launcher's answer as
    the protocol's text (JSON lines); this class words the calls and parses the answers
    (:mod:`.wire`), so every carrier speaks one protocol and the code above it is one."""

    kind: ClassVar[str]

    def call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float | None = None) -> str:
        """Run ``verb`` with ``args`` on ``launcher``; its stdout. EndpointError when no answer came
        within ``timeout_s`` (default: the carrier's limit for one call)."""
        raise NotImplementedError

    @staticmethod
    def _parsed(launcher: Launcher, fn: Callable[..., T], *args: object) -> T:
        try:
            return fn(*args)
        except wire.ProtocolError as exc:
            raise EndpointError(
                launcher.name, "launcher", str(exc), "install the launcher script this labctl ships"
            ) from None

    def hello(self, launcher: Launcher) -> tuple[float, int]:
        out = self.call(launcher, "hello", {})
        clock_ts, seq = self._parsed(launcher, wire.hello, launcher.name, out)
        return float(clock_ts), int(seq)

    def start(
        self, launcher: Launcher, logons: Sequence[tuple[str, str]], workload: str
    ) -> list[SessionEvent | Refusal]:
        args = {"workload": workload, "desktop": [d for d, _ in logons], "user": [u for _, u in logons]}
        return list(self._parsed(launcher, wire.started, launcher.name, self.call(launcher, "start", args)))

    def events(self, launcher: Launcher, after: int) -> EventBatch:
        out = self.call(launcher, "events", {"after": after})
        return self._parsed(launcher, wire.events, launcher.name, out, after)

    def logoff(self, launcher: Launcher, sessions: Sequence[str]) -> list[SessionEvent]:
        out = self.call(launcher, "logoff", {"session": list(sessions)})
        return list(self._parsed(launcher, wire.sessions, launcher.name, out))
