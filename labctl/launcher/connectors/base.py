"""The connector contract: a client command line for one session, and how to read its progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.broker import BrokerLogon


@dataclass(frozen=True)
class Launch:
    """One client process: its argv (never a password in it), environment and stdin."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: str = ""  # credentials the client reads from standard input
    cleanup: tuple[Path, ...] = ()  # temporary files (an ICA file) removed when the session ends
    brokering_s: float | None = None  # time spent asking a broker for the connection, if any
    # Phases the connector timed itself while launching: waterfall phase -> (start_ts, end_ts).
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """A milestone the client printed: ``marker`` is one of MARKERS, or ``error`` with a reason."""

    marker: str
    detail: str = ""


# The milestones a connector can read off its client, in connection order.
MARKERS = ("connect_start", "security", "active", "error")


class Connector:
    kind: ClassVar[str] = ""
    # What this mechanism cannot time at the launcher, phase -> why (the waterfall says so).
    unmeasured: ClassVar[dict[str, str]] = {}

    def __init__(self, cfg: ConnectorConfig):
        self.cfg = cfg

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        raise NotImplementedError

    def broker_logon(
        self, desktop: str, user: str, launch_ts: float, end_ts: float
    ) -> tuple[BrokerLogon | None, str]:
        """What the broker's API says about this logon, or None and why not (no API, no record yet)."""
        return None, ""

    def progress(self, line: str) -> Progress | None:
        """A milestone in one line of the client's output, if the line is one."""
        return None

    def failure(self, returncode: int, tail: list[str]) -> str:
        """Why the client ended before the session came up, in a lab engineer's words."""
        last = next((t for t in reversed(tail) if t.strip()), "")
        return f"the {self.kind} client exited with status {returncode}" + (
            f": {last[-160:]}" if last else ""
        )

    def fill(self, template: str, **names: str) -> str:
        try:
            return template.format(**names)
        except (KeyError, IndexError) as exc:
            raise ValueError(
                f"connector template {template!r} names {exc}, which is not one of {sorted(names)}"
            ) from None
