"""Greeting one launcher (``labctl check``): the protocol's ``hello`` through the launcher's own
transport (SSH, or the site agent it is placed at), with a deadline, read into a :class:`Hello`.

``hello`` is the one verb every ``labctl-launcher/1`` speaker answers and it changes nothing on the
launcher. Beyond the clock and the journal's cursor the protocol needs, ``labctl launcher`` says
its labctl version, its connector, its live sessions and its ``max_sessions``; a launcher script of
the lab's own may leave them out, and the check then says "not given" rather than guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labctl.errors import EndpointError
from labctl.inventory.vdi import Launcher
from labctl.lab.launchers import wire
from labctl.lab.launchers.backend import LauncherBackend

# One greeting's deadline once connected (the connection has the check's --timeout): `labctl
# launcher hello` is a Python start (about 2 s on an idle 2-core machine, several under load), as
# every SSH command of the check gets 30 s.
GREETING_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Hello:
    """What a launcher said about itself in its ``hello``."""

    launcher: str
    protocol: str
    clock_ts: float  # the launcher's clock (epoch s; on a simulated lab the lab clock)
    seq: int  # its journal's cursor now
    labctl_version: str = ""  # '' when it does not say (a launcher script of the lab's own)
    connectors: tuple[str, ...] = ()
    sessions: int | None = None  # live sessions now
    max_sessions: int | None = None  # the most it holds at once

    @property
    def version_text(self) -> str:
        return f"labctl {self.labctl_version or '(not given)'}, {self.protocol}"

    @property
    def load_text(self) -> str:
        """``connector rdp; sessions 3/30`` with what the launcher gave."""
        conn = ",".join(self.connectors) or "(not given)"
        if self.sessions is None and self.max_sessions is None:
            load = "sessions (not given)"
        else:
            now = "?" if self.sessions is None else str(self.sessions)
            cap = "?" if self.max_sessions is None else str(self.max_sessions)
            load = f"sessions {now}/{cap}"
        return f"connector {conn}; {load}"


CLOCK_TOLERANCE_S = 2.0  # beyond the call's own round trip; NTP keeps machines far closer


def clock_offset_s(clock_ts: float, sent_s: float, answered_s: float) -> float:
    """How far the launcher's clock is outside the window of the call (sent .. answered, this
    controller's clock): 0 inside it, else the signed distance to its nearer edge. The launcher's
    times place its sessions and logons on the run's timeline, so an offset moves them."""
    if clock_ts < sent_s:
        return clock_ts - sent_s
    if clock_ts > answered_s:
        return clock_ts - answered_s
    return 0.0


def address(ln: Launcher) -> str:
    """Where the greeting goes: ``ip:port`` over SSH, ``agent <name>`` through a site agent."""
    if ln.transport == "agent":
        return f"agent {ln.agent}" + (f" -> {ln.ip}" if ln.ip else "")
    port = f":{ln.access.port}" if ln.access is not None else ""
    return f"{ln.ip or '(no ip)'}{port}"


def _int(o: dict[str, Any], key: str) -> int | None:
    v = o.get(key)
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def parse(launcher: str, stdout: str) -> Hello:
    """The launcher's ``hello`` answer; :class:`wire.ProtocolError` when it is not the protocol."""
    clock_ts, seq = wire.hello(launcher, stdout)  # checks the protocol, the clock and the cursor
    o = next(
        obj
        for line in stdout.splitlines()
        if line.strip() and (obj := json.loads(line)).get("event") == "hello"
    )
    many = o.get("connectors")
    one = o.get("connector")
    connectors = tuple(str(c) for c in many) if isinstance(many, list) else ((str(one),) if one else ())
    return Hello(
        launcher=launcher,
        protocol=str(o["protocol"]),
        clock_ts=clock_ts,
        seq=seq,
        labctl_version=str(o.get("labctl_version") or ""),
        connectors=connectors,
        sessions=_int(o, "sessions"),
        max_sessions=_int(o, "max_sessions"),
    )


def greet(backend: LauncherBackend, ln: Launcher, timeout_s: float = GREETING_TIMEOUT_S) -> Hello:
    """``hello`` to ``ln`` through ``backend`` within ``timeout_s``; an EndpointError naming the
    launcher (and its agent) when no answer, or no protocol answer, came."""
    try:
        out = backend.call(ln, "hello", {}, timeout_s=timeout_s)
    except EndpointError as exc:
        if exc.reason.startswith("exit status"):  # it ran, and said why in its one line
            raise EndpointError(
                exc.endpoint,
                exc.action,
                exc.reason,
                "do what the launcher's line says (is `labctl launcher serve` running?); "
                "set-up: docs/session-launchers.md",
            ) from None
        raise
    try:
        return parse(ln.name, out)
    except wire.ProtocolError as exc:
        raise EndpointError(
            ln.name,
            "launcher hello",
            str(exc),
            "install the labctl launcher (or script) this labctl ships on it",
        ) from None
