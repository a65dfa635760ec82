"""One simulated launcher's journal: what its sessions did, numbered, as the protocol hands it out.

A real launcher script appends an event each time one of its sessions changes state or finishes a
timed operation; here the journal is brought up to date from the twin when asked (``events``),
which gives the same sequence: states in order, each operation once, numbered from 1, and each
session's ``logon`` waterfall once its first operation is in (:mod:`.waterfall`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from labctl.sim.sessions import waterfall
from labctl.sim.twin.interface import SessionInfo, SessionRefused, SessionState, VdiTwin

TERMINAL = (SessionState.ENDED, SessionState.FAILED)


@dataclass
class _Tracked:
    info: SessionInfo
    next_op: int = 0  # the next operation index not journalled yet
    first_op_end: float | None = None  # when its first operation finished (lab s)
    logon_sent: bool = False


@dataclass
class Journal:
    launcher: str
    twin: VdiTwin
    seq: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    sessions: dict[str, _Tracked] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _add(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        obj = {"event": obj.pop("event"), "seq": self.seq, **obj}
        self.events.append(obj)
        return obj

    def _session_event(self, info: SessionInfo, now: float) -> dict[str, Any]:
        ts = now
        if info.state is SessionState.ACTIVE and info.logged_in_lab_s is not None:
            ts = info.logged_in_lab_s
        elif info.state in TERMINAL and info.ended_lab_s is not None:
            ts = info.ended_lab_s
        elif info.state is SessionState.LOGGING_IN:
            ts = info.requested_lab_s
        return self._add(
            {
                "event": "session",
                "session": info.session_id,
                "desktop": info.desktop,
                "user": info.user,
                "state": info.state.value,
                "ts": ts,
                "login_s": info.login_duration_s,
                "reason": info.failed or "",
            }
        )

    def live(self) -> int:
        """Sessions not ended or failed, as last journalled."""
        with self.lock:
            return sum(1 for t in self.sessions.values() if t.info.state not in TERMINAL)

    def start(self, desktop: str, user: str, now: float) -> dict[str, Any]:
        with self.lock:
            try:
                info = self.twin.start_session(desktop, user)
            except SessionRefused as exc:
                return {"event": "refused", "desktop": desktop, "user": user, "reason": str(exc), "ts": now}
            except KeyError as exc:
                return {"event": "refused", "desktop": desktop, "user": user, "reason": str(exc), "ts": now}
            self.sessions[info.session_id] = _Tracked(info)
            return self._session_event(info, now)

    def refresh(self, now: float) -> None:
        """Bring the journal up to date with the twin: new states, new operations."""
        with self.lock:
            for sid, tr in self.sessions.items():
                if tr.info.state in TERMINAL:
                    continue
                info = self.twin.session(sid)
                for op in self.twin.session_operations(sid, tr.next_op):
                    self._add(
                        {
                            "event": "operation",
                            "session": sid,
                            "index": op.index,
                            "name": op.name,
                            "start_ts": op.started_lab_s,
                            "response_s": op.response_s,
                        }
                    )
                    tr.next_op = op.index + 1
                    if tr.first_op_end is None:
                        tr.first_op_end = op.started_lab_s + op.response_s
                if info.state is not tr.info.state:
                    tr.info = info
                    self._session_event(info, now)
                if not tr.logon_sent and tr.first_op_end is not None and info.logged_in_lab_s is not None:
                    tr.logon_sent = True  # the waterfall, once the first operation is in
                    self._add(
                        waterfall.event(
                            sid,
                            info.desktop,
                            info.user,
                            info.requested_lab_s,
                            info.logged_in_lab_s,
                            tr.first_op_end,
                        )
                    )

    def after(self, cursor: int) -> list[dict[str, Any]]:
        with self.lock:
            # seq k is events[k - 1]: the journal only grows
            return list(self.events[max(cursor, 0) :])

    def logoff(self, sid: str, now: float) -> dict[str, Any] | None:
        with self.lock:
            tr = self.sessions.get(sid)
            if tr is None:
                return None
            if tr.info.state not in TERMINAL:
                tr.info = self.twin.logoff(sid)
            return self._session_event(tr.info, now)
