"""Users arriving at a desktop pool: the login storm's broker and launcher pacing, and what the
launchers report while the sessions work and log off.

The plan plays the broker of a pooled-random pool (XenDesktop, Horizon): a user who arrives gets a
booted desktop without a session; when none is left, a desktop still off is powered on for the user
through vCenter (at most ``broker_power_per_min``, XenDesktop's 'max new actions per minute') and
the user waits until it takes the session. A start the launcher reports refused (the desktop's
broker agent has not registered yet, it is busy) is tried again after ``retry_s``. Users arrive at
a fixed interval (``rate``; 0 = all at once) or as the launchers free up (``launchers``: each
launcher starts its next user when its last one is logged on, as Login VSI launchers do).

Every poll of the launchers is recorded in the cell's series (source ``sessions``): sessions
active and logging on, each logon's duration and its phases (:mod:`labctl.scenarios.vdi_logons`),
each timed operation's response by operation group.

A launcher that cannot be read is collected and the others still polled; one that stays
unreadable for longer than ``launcher_unreadable_s`` (lab seconds) breaks the login or steady phase
off (:class:`~labctl.scenarios.breakoff.StaysUnreadable`), and the desktops whose sessions it held
are *not measured* from its first failed read (:meth:`SessionBook.unmeasured`): never counted good.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labctl.errors import LabctlError
from labctl.lab.launchers import Launchers, OperationTime, Refusal, SessionEvent, SessionState
from labctl.lab.launchers.model import LogonWaterfall
from labctl.records import rt_index
from labctl.records.samples import Sample
from labctl.scenarios import vdi_logons
from labctl.scenarios import vdi_metrics as M
from labctl.scenarios.base import CellContext, Progress
from labctl.scenarios.breakoff import Unreadable

if TYPE_CHECKING:
    from labctl.lab.session import LabSession

TERMINAL = (SessionState.ENDED, SessionState.FAILED)
# lab seconds a launcher may fail every read before the phase polling it breaks off: a few polls
# (session_poll_s 10-20 s) ride out a launcher restarting, a lab that went away does not
LAUNCHER_UNREADABLE_S = 120.0


@dataclass(frozen=True)
class Pacing:
    mode: str  # "rate" or "launchers"
    interval_s: float  # rate: lab seconds between users (0: all at once)
    retry_s: float
    first_try_s: float  # a desktop powered on for a user: first start attempt after this long
    broker_power_per_min: int
    poll_s: float
    timeout_s: float
    unreadable_s: float = LAUNCHER_UNREADABLE_S  # a launcher failing every read this long: break off


@dataclass
class SessionBook:
    """Every session of the cell as the launchers reported it, and their timed operations."""

    pool: str
    groups: Mapping[str, str]  # operation -> group (View Planner's A / B)
    latest: dict[str, SessionEvent] = field(default_factory=dict)  # session -> last state seen
    by_desktop: dict[str, str] = field(default_factory=dict)  # desktop -> its session
    operations: list[OperationTime] = field(default_factory=list)
    refusals: int = 0
    poll_errors: dict[str, str] = field(default_factory=dict)
    logged_on: dict[str, float] = field(default_factory=dict)  # session -> when it became active
    login_s: dict[str, float] = field(default_factory=dict)  # session -> its logon's duration
    ended: dict[str, float] = field(default_factory=dict)  # session -> when it logged off / ended
    # sessions the launchers report that this storm did not start (left by an earlier run): never
    # counted as the cell's, logged off when seen
    foreign: dict[str, SessionEvent] = field(default_factory=dict)
    logons: dict[str, LogonWaterfall] = field(default_factory=dict)  # session -> its logon, phase by phase
    unreadable: Unreadable = field(default_factory=lambda: Unreadable("launcher"))  # failing since when

    def spans(self) -> list[rt_index.SessionSpan]:
        """Each session's logged-on span, for counting sessions over time (a session that never
        logged on is failed; one whose launcher stopped answering is counted until then)."""
        lost = self.unmeasured_sessions()
        return [
            rt_index.SessionSpan(
                sid,
                e.desktop,
                self.logged_on.get(sid, e.ts),
                self.ended.get(sid, lost.get(sid)),
                failed=sid not in self.logged_on,
            )
            for sid, e in self.latest.items()
        ]

    def unmeasured_sessions(self) -> dict[str, float]:
        """Session -> lab time from which it could not be read: sessions not ended whose launcher
        was still unreadable at the last poll (what they did after is unknown)."""
        since = self.unreadable.since
        return {
            sid: since[e.launcher]
            for sid, e in self.latest.items()
            if e.state not in TERMINAL and e.launcher in since and sid not in self.ended
        }

    def unmeasured(self) -> dict[str, float]:
        """Desktop -> lab time from which its session could not be read (see
        :meth:`unmeasured_sessions`): neither good, fair nor poor, but not measured."""
        return {self.latest[sid].desktop: ts for sid, ts in self.unmeasured_sessions().items()}

    def count(self, state: SessionState) -> int:
        return sum(1 for e in self.latest.values() if e.state is state)

    def absorb(self, lab: LabSession, ctx: CellContext, launchers: Launchers) -> list[SessionEvent]:
        """Poll every launcher once: new states and operations into the book and the cell's series."""
        p = launchers.poll()
        self.poll_errors.update(p.errors)
        self.unreadable.saw(lab.clock.now(), p.errors, launchers.launchers)
        samples: list[Sample] = []
        changed = []
        for e in p.sessions:
            if e.session not in self.latest:  # not one of this storm's (those are booked at start)
                self.foreign[e.session] = e
                continue
            prev = self.latest.get(e.session)
            if prev is not None and prev.state is e.state:
                continue
            if prev is not None and prev.state in TERMINAL:
                continue
            self.latest[e.session] = e
            self.by_desktop[e.desktop] = e.session
            changed.append(e)
            if e.state is SessionState.ACTIVE:
                self.logged_on.setdefault(e.session, e.ts)
                if e.login_s is not None:
                    self.login_s[e.session] = e.login_s
                    samples.append(Sample(M.SESSIONS_SOURCE, e.desktop, M.LOGIN_S, "s", e.ts, e.login_s))
            if e.state in (SessionState.LOGGING_OFF, *TERMINAL):
                self.ended.setdefault(e.session, e.ts)
            if e.state in TERMINAL:
                launchers.release(e.session)
        for w in p.logons:  # launchers that time logons (vdi_logons: series per phase)
            if w.session in self.latest and w.session not in self.logons:
                self.logons[w.session] = w
                samples += vdi_logons.samples(self.pool, w)
        for op in p.operations:
            if op.session not in self.latest:
                continue
            self.operations.append(op)
            for g in ("all", self.groups.get(op.name)):
                if g:
                    samples.append(
                        Sample(
                            M.SESSIONS_SOURCE, M.op_entity(g), M.RESPONSE_S, "s", op.start_ts, op.response_s
                        )
                    )
        now = lab.clock.now()
        samples.append(
            Sample(
                M.SESSIONS_SOURCE,
                self.pool,
                M.ACTIVE_SESSIONS,
                "sessions",
                now,
                self.count(SessionState.ACTIVE),
            )
        )
        samples.append(
            Sample(
                M.SESSIONS_SOURCE,
                self.pool,
                M.LOGGING_IN,
                "sessions",
                now,
                self.count(SessionState.LOGGING_IN),
            )
        )
        ctx.record(samples)
        return changed


@dataclass
class LoginStorm:
    """One login storm: ``users`` log on to ``desktops`` (the ``booted`` ones up already)."""

    lab: LabSession
    ctx: CellContext
    launchers: Launchers
    book: SessionBook
    pacing: Pacing
    workload: str
    booted: list[str]  # up and free
    off: list[str]  # powered on for users as needed, in this order
    powered_on: list[str] = field(default_factory=list)  # by the broker, in this storm

    def run(self, users: Sequence[str]) -> list[str]:
        """Until every user is logged on or failed (or the timeout); returns why users did not get
        a session (one line each), empty when all did."""
        lab, clock, pc = self.lab, self.lab.clock, self.pacing
        t0 = clock.now()
        deadline = t0 + pc.timeout_s
        free = collections.deque(self.booted)
        retry_at: dict[str, float] = {}  # desktop -> not before
        booting: dict[str, float] = {}  # desktop -> first try
        waiting: collections.deque[str] = collections.deque()  # users arrived, no session yet
        arrived = 0
        in_flight: dict[str, str] = {}  # session -> user, logging on
        done: dict[str, str] = {}  # user -> "" logged on / reason
        power_times: collections.deque[float] = collections.deque()
        n_launchers = len(self.launchers.launchers)
        last_poll = -1e18
        while len(done) < len(users) and not self.ctx.stop.is_set():
            now = clock.now()
            if now > deadline:
                for u in users:
                    done.setdefault(u, f"no session within {pc.timeout_s:g} lab s")
                break
            # arrivals
            if pc.mode == "launchers":
                while arrived < len(users) and len(in_flight) + len(waiting) < n_launchers:
                    waiting.append(users[arrived])
                    arrived += 1
            else:
                due = (
                    len(users) if pc.interval_s <= 0 else min(len(users), int((now - t0) / pc.interval_s) + 1)
                )
                while arrived < due:
                    waiting.append(users[arrived])
                    arrived += 1
            # desktops the broker booted are tried once they may be up
            for d, at in list(booting.items()):
                if now >= at:
                    del booting[d]
                    free.append(d)
            # hand out free desktops
            logons: list[tuple[str, str]] = []
            skipped: list[str] = []
            while waiting and free:
                d = free.popleft()
                if retry_at.get(d, -1e18) > now:
                    skipped.append(d)
                    continue
                logons.append((d, waiting.popleft()))
            free.extend(skipped)
            if logons:
                by_desktop = dict(logons)
                for r in self.launchers.start(logons, self.workload):
                    user = by_desktop.get(r.desktop, r.user)
                    if isinstance(r, Refusal):
                        self.book.refusals += 1
                        retry_at[r.desktop] = now + pc.retry_s
                        free.append(r.desktop)
                        waiting.appendleft(user)
                    else:
                        in_flight[r.session] = user
                        self.book.latest[r.session] = r
                        self.book.by_desktop[r.desktop] = r.session
            # the broker powers desktops on for users no free desktop can serve
            while power_times and power_times[0] <= now - 60.0:
                power_times.popleft()
            short = len(waiting) - len(free) - len(booting)
            wanted: list[str] = []
            while short > 0 and self.off and len(power_times) + len(wanted) < pc.broker_power_per_min:
                wanted.append(self.off.pop(0))
                short -= 1
            if wanted:
                try:
                    lab.power.on(wanted)
                except LabctlError as exc:
                    for u in list(waiting)[: len(wanted)]:
                        done.setdefault(u, f"the broker could not power a desktop on: {exc}")
                for d in wanted:
                    power_times.append(now)
                    booting[d] = now + pc.first_try_s
                    self.powered_on.append(d)
            # what the launchers saw (every poll_s: a poll is one call to every launcher, and the
            # launchers' far side walks its sessions; polling whenever nobody waits kept them busy)
            if now - last_poll >= pc.poll_s:
                last_poll = now
                changed = self.book.absorb(lab, self.ctx, self.launchers)
                self.book.unreadable.check(clock.now(), pc.unreadable_s)  # gone for good: break off
                for e in changed:
                    who = in_flight.get(e.session)
                    if who is None:
                        continue
                    user = who
                    if e.state is SessionState.ACTIVE:
                        del in_flight[e.session]
                        done[user] = ""
                    elif e.state in TERMINAL:
                        del in_flight[e.session]
                        done[user] = f"logon failed on {e.desktop}: {e.reason or e.state.value}"
            logged = sum(1 for v in done.values() if not v)
            self.ctx.progress(
                Progress("login", logged, len(users), note=f"{len(waiting)} waiting, {len(booting)} booting")
            )
            clock.sleep(
                max(0.5, min(pc.poll_s, pc.interval_s if pc.mode == "rate" and pc.interval_s > 0 else 2.0)),
                self.ctx.stop,
            )
        return [f"{u}: {why}" for u, why in done.items() if why]


def work(
    lab: LabSession,
    ctx: CellContext,
    launchers: Launchers,
    book: SessionBook,
    seconds: float,
    poll_s: float,
    phase: str,
    unreadable_s: float = LAUNCHER_UNREADABLE_S,
) -> None:
    """Let the sessions run for ``seconds``, polling the launchers every ``poll_s``; a launcher
    that fails every read for more than ``unreadable_s`` ends the phase early
    (:class:`~labctl.scenarios.breakoff.StaysUnreadable`, raised for the storm's break-off)."""
    clock = lab.clock
    end = clock.now() + seconds
    while (left := end - clock.now()) > 0 and not ctx.stop.is_set():
        book.absorb(lab, ctx, launchers)
        book.unreadable.check(clock.now(), unreadable_s)
        ctx.progress(Progress(phase, book.count(SessionState.ACTIVE), len(book.latest), window_left_s=left))
        clock.sleep(min(poll_s, left), ctx.stop)
    book.absorb(lab, ctx, launchers)


def log_off(
    lab: LabSession,
    ctx: CellContext,
    launchers: Launchers,
    book: SessionBook,
    timeout_s: float,
    poll_s: float,
) -> list[str]:
    """Every session still on logs off; returns the sessions that did not end in time."""
    clock = lab.clock
    on = [sid for sid, e in book.latest.items() if e.state not in TERMINAL]
    errors = launchers.logoff(on)
    end = clock.now() + timeout_s
    while not ctx.stop.is_set():
        book.absorb(lab, ctx, launchers)
        left = [sid for sid in on if book.latest[sid].state not in TERMINAL]
        ctx.progress(Progress("logoff", len(on) - len(left), len(on)))
        if not left or clock.now() > end:
            return [f"{sid} on {book.latest[sid].desktop} did not log off" for sid in left] + [
                f"launcher {n}: {why}" for n, why in errors.items()
            ]
        clock.sleep(poll_s, ctx.stop)
    return []


def leave_no_session(
    lab: LabSession,
    ctx: CellContext,
    launchers: Launchers,
    book: SessionBook,
    timeout_s: float = 300.0,
    poll_s: float = 5.0,
) -> list[str]:
    """An interrupted storm logs every session it started off, waiting (lab time) until they end
    unless a second interrupt (``ctx.abort``) says not to wait: the next storm must not find them.
    Returns what is left behind, one line each (empty when every session ended)."""
    clock = lab.clock
    on = [sid for sid, e in book.latest.items() if e.state not in TERMINAL]
    if not on:
        return []
    ctx.progress(Progress("restore", 0, len(on), note=f"logging {len(on)} sessions off"))
    errors = [f"launcher {n}: {why}" for n, why in launchers.logoff(on).items()]
    lab.timeline.append("sessions.logoff", book.pool, sessions=len(on), reason="interrupted")
    end = clock.now() + timeout_s
    left = on
    while not ctx.abort.is_set():
        try:
            book.absorb(lab, ctx, launchers)
        except (LabctlError, OSError) as exc:
            return [*errors, f"the launchers could not be read: {exc}"]
        left = [sid for sid in on if book.latest[sid].state not in TERMINAL]
        if not left or clock.now() > end:
            break
        clock.sleep(poll_s, ctx.abort)
    if left and ctx.abort.is_set():
        return [*errors, f"{len(left)} sessions told to log off, not waited for (second interrupt)"]
    return [*errors, *(f"{sid} on {book.latest[sid].desktop} did not log off" for sid in left)]


def clean_leftover_sessions(
    lab: LabSession, ctx: CellContext, launchers: Launchers, timeout_s: float = 300.0, poll_s: float = 5.0
) -> tuple[list[SessionEvent], str]:
    """Before a storm: sessions the launchers still run that this storm did not start (an earlier
    run killed before it could log them off) are logged off, so they are neither counted as the
    cell's nor load its desktops. Returns ``(the leftovers, why they could not all be ended)``;
    the second is '' when none is left."""
    clock = lab.clock
    found: dict[str, SessionEvent] = {}
    for ln in launchers.launchers.values():
        batch = launchers.backend(ln).events(ln, 0)  # the launcher's whole journal: every session
        for e in batch.sessions:
            found[e.session] = e
    left = {sid: e for sid, e in found.items() if e.state not in TERMINAL}
    if not left:
        return [], ""
    leftovers = list(left.values())
    by: dict[str, list[str]] = {}
    for e in leftovers:
        by.setdefault(e.launcher, []).append(e.session)
    lab.timeline.append("sessions.leftover", "launchers", sessions=len(leftovers), launchers=sorted(by))
    for name, ids in by.items():
        owner = launchers.launchers.get(name)
        if owner is not None:
            launchers.backend(owner).logoff(owner, ids)
    end = clock.now() + timeout_s
    while not ctx.stop.is_set():
        states: dict[str, SessionEvent] = {}
        for name in by:
            owner = launchers.launchers[name]
            for e in launchers.backend(owner).events(owner, 0).sessions:
                states[e.session] = e
        still = [sid for sid in left if sid in states and states[sid].state not in TERMINAL]
        if not still:
            return leftovers, ""
        if clock.now() > end:
            return (
                leftovers,
                f"{len(still)} of them did not log off within {timeout_s:g} lab s ({', '.join(still[:5])})",
            )
        clock.sleep(poll_s, ctx.stop)
    return leftovers, "interrupted while they logged off"


def describe_leftovers(leftovers: Sequence[SessionEvent]) -> str:
    """``5 sessions this storm did not start (vsi-01: 3, vsi-02: 2; desktops d-0001, ...)``."""
    per: dict[str, int] = collections.Counter(e.launcher for e in leftovers)
    desks = sorted({e.desktop for e in leftovers})
    more = " ..." if len(desks) > 5 else ""
    return (
        f"{len(leftovers)} sessions this storm did not start ("
        + ", ".join(f"{n}: {k}" for n, k in sorted(per.items()))
        + f"; desktops {', '.join(desks[:5])}{more})"
    )
