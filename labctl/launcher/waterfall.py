"""A session's logon waterfall: each phase from the launch to the first workload operation.

Phases, in order: brokering, machine_ready, protocol_connect (client start to the negotiated
security: TCP, TLS, and NLA's credential check where the server asks for it), authentication (the
server's logon to the shell's start: credentials where NLA did not check them, session creation),
profile_load, group_policy, shell_ready (shell start to the workload's hello), first_operation,
and ``unaccounted`` (the time no measured phase covers, e.g. starting the client process). A phase a mechanism cannot time is ``measured: false`` with the reason, never a guess.
Times are the launcher's clock; the desktop's own (shell start) is shifted by the offset seen at
the workload's hello.

A connector with a broker API (Citrix Monitor, Horizon REST) fills the phases the launcher could
not time from the broker's record of the same logon: such a phase has ``source`` naming the broker
and its field, and counts towards ``unaccounted`` by its duration only (its times are the broker's
clock). The broker's whole answer, and why it has none, is the event's ``broker``.
"""

from __future__ import annotations

from typing import Any

from labctl.launcher.connectors import Connector
from labctl.launcher.connectors.broker import BrokerLogon
from labctl.launcher.session import Session

NOT_HERE = {
    "machine_ready": "the desktop's power-on and readiness are the storm's boot phase (vCenter), not the launcher's",
    "profile_load": "not read on this desktop (Windows: the User Profile Service's logon events, not read yet; Linux has none)",
    "group_policy": "not read on this desktop (Windows: the Group Policy operational log, not read yet; Linux has none)",
}


def phases(
    s: Session, conn: Connector, first_op_end_ts: float, broker: BrokerLogon | None = None
) -> list[dict[str, Any]]:
    def span(name: str, start: float | None, end: float | None, why: str = "") -> dict[str, Any]:
        if start is None or end is None or end < start:
            return {
                "name": name,
                "measured": False,
                "why": why or conn.unmeasured.get(name) or NOT_HERE.get(name, "no milestone"),
            }
        return {
            "name": name,
            "measured": True,
            "start_ts": start,
            "end_ts": end,
            "duration_s": round(end - start, 3),
        }

    hello = s.hello or {}
    brokering_s = s.launch.brokering_s if s.launch is not None else None
    timed = s.launch.spans if s.launch is not None else {}
    client_ts = s.client_ts
    brokered_ts = s.launch_ts + brokering_s if brokering_s is not None else None
    broker_start, brokered_ts = timed.get("brokering", (s.launch_ts, brokered_ts))
    ready = timed.get("machine_ready")
    shell = hello.get("shell_start_ts")
    shell_ts = float(shell) + s.clock_offset_s if shell is not None else None
    why_shell = str((hello.get("unmeasured") or {}).get("shell_ready", ""))
    security = s.marks.get("security")
    out = [
        span("brokering", broker_start, brokered_ts),
        span("machine_ready", ready[0], ready[1]) if ready else span("machine_ready", None, None),
        span("protocol_connect", client_ts, security)
        if "protocol_connect" not in conn.unmeasured
        else span("protocol_connect", None, None),
        _authentication(conn, security, shell_ts, why_shell, span),
        span("profile_load", None, None, str((hello.get("unmeasured") or {}).get("profile_load", ""))),
        span("group_policy", None, None, str((hello.get("unmeasured") or {}).get("group_policy", ""))),
        span("shell_ready", shell_ts, s.hello_ts, why_shell),
        span("first_operation", s.hello_ts, first_op_end_ts),
    ]
    if broker is not None:
        out = [_from_broker(p, broker) for p in out]
    total = first_op_end_ts - s.launch_ts
    covered = _union([(p["start_ts"], p["end_ts"]) for p in out if p["measured"] and "source" not in p])
    covered += sum(p["duration_s"] for p in out if p["measured"] and "source" in p)
    out.append({"name": "unaccounted", "measured": True, "duration_s": round(max(0.0, total - covered), 3)})
    return out


def _from_broker(p: dict[str, Any], broker: BrokerLogon) -> dict[str, Any]:
    """A phase the launcher did not time, from the broker's record when it has one."""
    if p["measured"]:
        return p
    b = broker.spans.get(p["name"])
    if b is None:
        why = broker.unmeasured.get(p["name"])
        return {**p, "why": f"{p['why']}; {broker.broker}: {why}"} if why else p
    return {
        "name": p["name"],
        "measured": True,
        "duration_s": round(b.duration_s, 3),
        "source": f"{broker.broker}: {b.source}",
    }


def _union(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the measured phases (overlaps counted once)."""
    covered, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            covered += b - max(a, end)
            end = b
    return covered


def _authentication(
    conn: Connector, security: float | None, shell_ts: float | None, why_shell: str, span: Any
) -> dict[str, Any]:
    """The server's logon, from the negotiated security to the shell's start: the credential check
    (where NLA did not already make it inside protocol_connect) and the session's creation."""
    if "authentication" in conn.unmeasured:
        return span("authentication", None, None)
    return span("authentication", security, shell_ts, why_shell or "no security milestone from the client")


def event(s: Session, conn: Connector, first_op_end_ts: float) -> dict[str, Any]:
    try:
        broker, why = conn.broker_logon(s.desktop, s.user, s.launch_ts, first_op_end_ts)
    except Exception as exc:  # the broker's answer is extra: its failure never costs the waterfall
        broker, why = None, f"the broker lookup failed: {type(exc).__name__}: {exc}"
    extra: dict[str, Any] = {}
    if broker is not None:
        extra["broker"] = broker.as_dict()
    elif why:
        extra["broker"] = {"why": why}
    return {
        "event": "logon",
        "session": s.id,
        "desktop": s.desktop,
        "user": s.user,
        "connector": conn.kind,
        "security": s.security,
        "launch_ts": s.launch_ts,
        "display_active_ts": s.marks.get("active"),
        "total_s": round(first_op_end_ts - s.launch_ts, 3),
        "phases": phases(s, conn, first_op_end_ts, broker),
        **extra,
    }
