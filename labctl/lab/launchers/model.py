"""What the session launchers report, in labctl's words (whatever mechanism carried it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SessionState(StrEnum):
    LOGGING_IN = "logging_in"
    ACTIVE = "active"  # logged on, running its workload
    LOGGING_OFF = "logging_off"
    ENDED = "ended"
    FAILED = "failed"  # the logon failed (or the session broke): ``reason`` says why


@dataclass(frozen=True)
class SessionEvent:
    """A session's state as its launcher last reported it (lab epoch seconds)."""

    launcher: str
    session: str
    desktop: str
    user: str
    state: SessionState
    ts: float  # when the launcher saw this state
    login_s: float | None = None  # request to desktop ready, once active
    reason: str = ""  # failed: why


@dataclass(frozen=True)
class Refusal:
    """A start the launcher could not make (the desktop is not registered yet, busy, off)."""

    launcher: str
    desktop: str
    user: str
    reason: str
    ts: float


@dataclass(frozen=True)
class OperationTime:
    """One timed operation of a session's workload, as the launcher measured it."""

    launcher: str
    session: str
    index: int
    name: str
    start_ts: float
    response_s: float


@dataclass(frozen=True)
class LogonPhase:
    """One phase of a logon (brokering ... first_operation, unaccounted); unmeasured says why."""

    name: str
    measured: bool
    duration_s: float | None = None
    start_ts: float | None = None
    why: str = ""


@dataclass(frozen=True)
class LogonWaterfall:
    """A session's logon, phase by phase, from its launch to its first workload operation."""

    launcher: str
    session: str
    desktop: str
    user: str
    connector: str
    launch_ts: float
    total_s: float
    phases: tuple[LogonPhase, ...]


@dataclass(frozen=True)
class EventBatch:
    """What one poll of one launcher returned: everything after the cursor, and the new cursor."""

    sessions: tuple[SessionEvent, ...]
    operations: tuple[OperationTime, ...]
    cursor: int
    ts: float  # the launcher's clock when it answered
    logons: tuple[LogonWaterfall, ...] = ()  # launchers that time logons (labctl launcher) report these
