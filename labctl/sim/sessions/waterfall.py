"""A simulated session's logon waterfall, from what the twin knows of the logon.

The twin models a logon as one guest phase (connection, profile, shell: the logon's I/O and CPU
under the host's and array's contention) from the start request to the desktop ready, then the
workload's first operation. Those two are measured (``logon``, ``first_operation``); the phases a
real launcher splits the logon into are reported unmeasured with that reason, so a storm on the
simulated lab shows the same waterfall event as one on a real pool (labctl/launcher/waterfall.py).
"""

from __future__ import annotations

from typing import Any

ONE_PHASE = "the twin models the logon as one phase (see logon): not split"
UNMEASURED = {
    "brokering": "the simulated launcher starts the session on the desktop the storm chose (no broker)",
    "machine_ready": "the desktop's power-on and readiness are the storm's boot phase (vCenter), not the launcher's",
    "protocol_connect": ONE_PHASE,
    "authentication": ONE_PHASE,
    "profile_load": ONE_PHASE,
    "group_policy": ONE_PHASE,
    "shell_ready": ONE_PHASE,
}


def event(
    session: str, desktop: str, user: str, requested_ts: float, logged_in_ts: float, first_op_end_ts: float
) -> dict[str, Any]:
    """The ``logon`` journal event of one session (lab seconds)."""

    def span(name: str, a: float, b: float) -> dict[str, Any]:
        return {"name": name, "measured": True, "start_ts": a, "end_ts": b, "duration_s": round(b - a, 3)}

    phases = [{"name": n, "measured": False, "why": why} for n, why in UNMEASURED.items()]
    phases.append(span("logon", requested_ts, logged_in_ts))
    phases.append(span("first_operation", logged_in_ts, max(logged_in_ts, first_op_end_ts)))
    total = max(first_op_end_ts, logged_in_ts) - requested_ts
    phases.append({"name": "unaccounted", "measured": True, "duration_s": 0.0})  # the two phases tile it
    return {
        "event": "logon",
        "session": session,
        "desktop": desktop,
        "user": user,
        "connector": "twin",
        "launch_ts": requested_ts,
        "total_s": round(total, 3),
        "phases": phases,
    }
