"""labctl's launcher protocol, ``labctl-launcher/1``, as the lab side speaks it.

One command per call, run by the launcher machine's shell (cmd.exe under OpenSSH for Windows)::

    powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File <script> <verb> [-Name value ...]

or, where the launcher's ``script`` is not a ``.ps1`` file, that command itself (``labctl launcher``
on a Linux or Windows launcher machine; a POSIX shell)::

    labctl launcher [--config F] <verb> [-Name value ...]

verbs: ``hello``; ``start -Workload W -Desktop d1,d2 -User u1,u2``; ``events -After N``;
``logoff -Session s1,s2``. The answer is JSON, one object per line on stdout (``event``: ``hello``,
``session``, ``refused``, ``operation``, ``cursor``), times in epoch seconds of the launcher's clock
(UTC; on a simulated lab, the lab clock). A usage error is exit status 2 with one line on stderr.
docs/session-launchers.md is the full description; the simulator's far side
(:mod:`labctl.sim.sessions`) implements the same text on its own, so a mistake on one side shows.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from labctl.lab.launchers.model import (
    EventBatch,
    LogonPhase,
    LogonWaterfall,
    OperationTime,
    Refusal,
    SessionEvent,
    SessionState,
)

PROTOCOL = "labctl-launcher/1"
POWERSHELL = ("powershell", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File")


class ProtocolError(ValueError):
    """The launcher answered something that is not the protocol (one line: what and where)."""


def is_powershell(script: str) -> bool:
    """A ``.ps1`` script runs under PowerShell (cmd.exe); anything else is a command line (POSIX)."""
    return script.lower().endswith(".ps1")


def command(script: str, verb: str, **args: str | Sequence[str] | int) -> list[str]:
    argv = [*POWERSHELL, script, verb] if is_powershell(script) else [*shlex.split(script), verb]
    for name, value in args.items():
        text = ",".join(value) if isinstance(value, list | tuple) else str(value)
        if "," in text and not isinstance(value, list | tuple):
            raise ValueError(f"{name}: {text!r} holds a comma, the protocol's list separator")
        argv += [f"-{name[:1].upper()}{name[1:]}", text]
    return argv


def _objects(launcher: str, stdout: str) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(stdout.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise ProtocolError(
                f"launcher {launcher}: line {n} of its answer is not JSON: {line[:80]!r} "
                f"(is the launcher script installed and speaking {PROTOCOL}?)"
            ) from None
        if not isinstance(obj, dict) or "event" not in obj:
            raise ProtocolError(f"launcher {launcher}: line {n} has no `event`: {line[:80]!r}")
        out.append(obj)
    return out


def _session(launcher: str, o: dict[str, Any]) -> SessionEvent:
    try:
        return SessionEvent(
            launcher=launcher,
            session=str(o["session"]),
            desktop=str(o["desktop"]),
            user=str(o.get("user", "")),
            state=SessionState(o["state"]),
            ts=float(o["ts"]),
            login_s=float(o["login_s"]) if o.get("login_s") is not None else None,
            reason=str(o.get("reason") or ""),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise ProtocolError(f"launcher {launcher}: a session event without a valid {exc}: {o}") from None


def hello(launcher: str, stdout: str) -> tuple[float, int]:
    """The launcher's clock and its journal's last sequence number (the cursor to poll from)."""
    objs = [o for o in _objects(launcher, stdout) if o["event"] == "hello"]
    if not objs or objs[0].get("protocol") != PROTOCOL:
        got = objs[0].get("protocol") if objs else "no hello"
        raise ProtocolError(
            f"launcher {launcher}: speaks {got!r}, labctl needs {PROTOCOL!r} (update its script)"
        )
    try:
        return float(objs[0]["clock_ts"]), int(objs[0]["seq"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ProtocolError(f"launcher {launcher}: its hello has no valid {exc}") from None


def started(launcher: str, stdout: str) -> list[SessionEvent | Refusal]:
    out: list[SessionEvent | Refusal] = []
    for o in _objects(launcher, stdout):
        if o["event"] == "session":
            out.append(_session(launcher, o))
        elif o["event"] == "refused":
            reason, ts = str(o.get("reason", "")), float(o.get("ts", 0.0))
            out.append(Refusal(launcher, str(o.get("desktop", "")), str(o.get("user", "")), reason, ts))
    return out


def sessions(launcher: str, stdout: str) -> list[SessionEvent]:
    return [_session(launcher, o) for o in _objects(launcher, stdout) if o["event"] == "session"]


def _logon(launcher: str, o: dict[str, Any]) -> LogonWaterfall:
    try:
        phases = tuple(
            LogonPhase(
                name=str(p["name"]),
                measured=bool(p["measured"]),
                duration_s=float(p["duration_s"]) if p.get("duration_s") is not None else None,
                start_ts=float(p["start_ts"]) if p.get("start_ts") is not None else None,
                why=str(p.get("why") or ""),
            )
            for p in o["phases"]
        )
        return LogonWaterfall(
            launcher,
            str(o["session"]),
            str(o.get("desktop", "")),
            str(o.get("user", "")),
            str(o.get("connector", "")),
            float(o["launch_ts"]),
            float(o["total_s"]),
            phases,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise ProtocolError(f"launcher {launcher}: a logon waterfall without a valid {exc}: {o}") from None


def events(launcher: str, stdout: str, after: int) -> EventBatch:
    ses: list[SessionEvent] = []
    ops: list[OperationTime] = []
    logons: list[LogonWaterfall] = []
    cursor, ts = after, 0.0
    for o in _objects(launcher, stdout):
        kind = o["event"]
        if kind == "session":
            ses.append(_session(launcher, o))
        elif kind == "operation":
            try:
                ops.append(
                    OperationTime(
                        launcher,
                        str(o["session"]),
                        int(o["index"]),
                        str(o["name"]),
                        float(o["start_ts"]),
                        float(o["response_s"]),
                    )
                )
            except (KeyError, ValueError, TypeError) as exc:
                raise ProtocolError(f"launcher {launcher}: an operation without a valid {exc}: {o}") from None
        elif kind == "logon":
            logons.append(_logon(launcher, o))
        elif kind == "cursor":
            cursor, ts = int(o["seq"]), float(o["ts"])
    if ts == 0.0:
        raise ProtocolError(
            f"launcher {launcher}: its events answer ended without a `cursor` line (cut short?)"
        )
    return EventBatch(tuple(ses), tuple(ops), cursor, ts, tuple(logons))
