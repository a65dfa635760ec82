"""The contract every launcher backend implements (a mechanism that starts user sessions).

A backend carries one ``kind`` of the inventory's ``vdi.launchers`` (``ssh``: labctl's launcher
script over OpenSSH on Windows launcher machines). It never raises for one session: a start that
cannot be made is a :class:`~labctl.lab.launchers.model.Refusal`; an unreachable launcher raises
an :class:`~labctl.errors.EndpointError` naming it and the fix.

Adding a backend (WinRM, a vendor's REST API): a module in this package with a class like
:class:`~labctl.lab.launchers.ssh.SshLauncherBackend` and one line in
:mod:`labctl.lab.launchers.registry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from labctl.inventory.vdi import Launcher
from labctl.lab.launchers.model import EventBatch, Refusal, SessionEvent


class LauncherBackend(Protocol):
    kind: ClassVar[str]

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
