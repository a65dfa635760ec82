"""The launchers of one cell: who starts which session, and everything they report since.

    ls = open_launchers(lab_session, pool="task-pool")   # hello to each: reachable, protocol, cursor
    ls.start([("xd-0001", "vsi-0001")], workload="task")  # spread over launchers with free slots
    batch = ls.poll()                                      # new session states and timed operations
    ls.logoff(["s-17"])

Each launcher takes at most its inventory ``sessions``; a start goes to the launcher with the most
free slots. Calls to different launchers run in parallel (bounded), as launchers are independent
machines; the same launcher is called once at a time. Whether a launcher is reached over SSH or
through the site agent it is placed at (its ``transport``) is the backend's business alone: the
scenarios above speak to :class:`Launchers` either way. A launcher that cannot be read names the
sessions it held, so they are reported, never silently replaced.

Every time a launcher reports is moved onto the controller's clock here (:mod:`.clock`): each
``hello`` and ``events`` call measures the launcher's clock against its round trip, and the
scenarios only ever see controller times; :meth:`Launchers.clock_record` says what was applied. A
launcher whose clock is more than :data:`~labctl.lab.launchers.clock.MAX_OFFSET_S` off fails its
greeting (and its polls) with a line naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from labctl.errors import BadInputError, EndpointError
from labctl.inventory.vdi import Launcher
from labctl.lab.context import HasContext, LabContext, context_of
from labctl.lab.launchers.agent import LauncherRelay
from labctl.lab.launchers.backend import LauncherBackend
from labctl.lab.launchers.clock import ClockReading, Clocks, LauncherClock
from labctl.lab.launchers.model import LogonWaterfall, OperationTime, Refusal, SessionEvent
from labctl.lab.launchers.registry import backend_for

MAX_PARALLEL = 16  # launcher machines called at once


@dataclass
class Poll:
    """What one poll of every launcher brought."""

    sessions: list[SessionEvent] = field(default_factory=list)
    operations: list[OperationTime] = field(default_factory=list)
    logons: list[LogonWaterfall] = field(default_factory=list)  # from launchers that time logons
    errors: dict[str, str] = field(default_factory=dict)  # launcher -> why it could not be read


class Launchers:
    def __init__(self, ctx: LabContext, launchers: Sequence[Launcher], relay: LauncherRelay | None = None):
        if not launchers:
            raise BadInputError(
                f"lab {ctx.lab.name}: no session launchers for this pool "
                "(add vdi.launchers to the inventory, see docs/session-launchers.md)"
            )
        self.ctx = ctx
        self.relay = relay  # the link to the site agents, for launchers placed at one
        self.launchers = {ln.name: ln for ln in launchers}
        self._backends: dict[str, LauncherBackend] = {}
        self.cursor: dict[str, int] = {}
        self.used: dict[str, int] = {ln.name: 0 for ln in launchers}
        self.owner: dict[str, str] = {}  # session -> launcher
        self.held: dict[str, set[str]] = {ln.name: set() for ln in launchers}  # launcher -> live sessions
        self._locks = {ln.name: threading.Lock() for ln in launchers}
        self.clocks = Clocks()  # each launcher's clock against the controller's (lab clock)
        self._pool = ThreadPoolExecutor(
            max_workers=min(MAX_PARALLEL, len(launchers)), thread_name_prefix="launch"
        )

    def backend(self, launcher: Launcher) -> LauncherBackend:
        """The backend of the launcher's transport (``ssh``, or ``agent`` when placed at one)."""
        how = launcher.transport
        if how not in self._backends:
            self._backends[how] = backend_for(how, self.ctx, self.relay)
        return self._backends[how]

    @property
    def capacity(self) -> int:
        return sum(ln.sessions for ln in self.launchers.values())

    def hello(self) -> dict[str, str]:
        """Greet every launcher; the cursor of each is taken now. Returns launcher -> error."""
        errors: dict[str, str] = {}

        def one(ln: Launcher) -> None:
            try:
                with self._locks[ln.name]:
                    sent = self.ctx.clock.now()
                    clock_ts, seq = self.backend(ln).hello(ln)
                    self.clocks.saw(ln.name, ClockReading(sent, clock_ts, self.ctx.clock.now()))
                self.cursor[ln.name] = seq
            except EndpointError as exc:
                errors[ln.name] = str(exc)

        list(self._pool.map(one, self.launchers.values()))
        return errors

    def _assign(self, logons: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for logon in logons:
            free = {n: self.launchers[n].sessions - self.used[n] for n in self.launchers}
            name = max(free, key=lambda n: free[n])
            if free[name] <= 0:
                raise BadInputError(
                    f"the launchers have {self.capacity} session slots, the cell needs more "
                    "(raise vdi.launchers[].sessions or add launchers)"
                )
            self.used[name] += 1
            out.setdefault(name, []).append(logon)
        return out

    def start(self, logons: Sequence[tuple[str, str]], workload: str) -> list[SessionEvent | Refusal]:
        """Start a session per ``(desktop, user)``; a launcher that cannot be reached refuses its
        share with the reason (the cell decides whether to try again)."""
        plan = self._assign(logons)
        results: list[SessionEvent | Refusal] = []
        lock = threading.Lock()

        def one(item: tuple[str, list[tuple[str, str]]]) -> None:
            name, mine = item
            ln = self.launchers[name]
            try:
                with self._locks[name]:
                    got = [self.clocks.to_controller(r) for r in self.backend(ln).start(ln, mine, workload)]
            except EndpointError as exc:
                now = self.ctx.clock.now()
                got = [Refusal(name, d, u, str(exc), now) for d, u in mine]
            with lock:
                for r in got:
                    if isinstance(r, SessionEvent):
                        self.owner[r.session] = name
                        self.held[name].add(r.session)
                    else:
                        self.used[name] -= 1  # the slot is free again
                results.extend(got)

        list(self._pool.map(one, plan.items()))
        return results

    def poll(self) -> Poll:
        out = Poll()
        lock = threading.Lock()

        def one(ln: Launcher) -> None:
            try:
                with self._locks[ln.name]:
                    sent = self.ctx.clock.now()
                    batch = self.backend(ln).events(ln, self.cursor.get(ln.name, 0))
                    self.clocks.saw(ln.name, ClockReading(sent, batch.ts, self.ctx.clock.now()))
            except EndpointError as exc:
                with lock:
                    out.errors[ln.name] = str(exc) + self._unaccounted(ln.name)
                return
            with lock:
                self.cursor[ln.name] = batch.cursor
                out.sessions.extend(map(self.clocks.to_controller, batch.sessions))
                out.operations.extend(map(self.clocks.to_controller, batch.operations))
                out.logons.extend(map(self.clocks.to_controller, batch.logons))

        list(self._pool.map(one, self.launchers.values()))
        out.sessions.sort(key=lambda e: e.ts)
        out.operations.sort(key=lambda o: o.start_ts)
        return out

    def logoff(self, sessions: Sequence[str]) -> dict[str, str]:
        """Log sessions off; returns launcher -> error for launchers that could not be told."""
        by: dict[str, list[str]] = {}
        for sid in sessions:
            if sid in self.owner:
                by.setdefault(self.owner[sid], []).append(sid)
        errors: dict[str, str] = {}

        def one(item: tuple[str, list[str]]) -> None:
            name, ids = item
            ln = self.launchers[name]
            try:
                with self._locks[name]:
                    self.backend(ln).logoff(ln, ids)
            except EndpointError as exc:
                errors[name] = str(exc)

        list(self._pool.map(one, by.items()))
        return errors

    def release(self, session: str) -> None:
        """A session ended or failed: its launcher's slot is free for another."""
        name = self.owner.get(session)
        if name is not None and self.used[name] > 0:
            self.used[name] -= 1
        if name is not None:
            self.held[name].discard(session)

    def _unaccounted(self, name: str) -> str:
        """``; its sessions s1, s2 are unaccounted for`` for a launcher that cannot be read."""
        ids = sorted(self.held.get(name, ()))
        if not ids:
            return ""
        more = f" and {len(ids) - 6} more" if len(ids) > 6 else ""
        return f"; its {len(ids)} session(s) {', '.join(ids[:6])}{more} are unaccounted for"

    def clock_record(self) -> dict[str, LauncherClock]:
        """Per launcher: its clock's offset, the uncertainty and the correction applied to its times."""
        return self.clocks.record()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def open_launchers(
    lab: LabContext | HasContext, pool: str | None = None, relay: LauncherRelay | None = None
) -> Launchers:
    """The lab's launchers (of ``pool`` when given: those whose users log on to it), over the lab
    context (or the one a session carries). Launchers placed at a site agent go through ``relay``,
    by default the session's link to its agents (``session.sites``)."""
    ctx = context_of(lab)
    vdi = ctx.lab.vdi
    launchers = [ln for ln in (vdi.launchers if vdi is not None else ()) if pool is None or ln.pool == pool]
    if relay is None:
        sites = getattr(lab, "sites", None)  # a LabSession's Sites; a bare context has none
        relay = sites if isinstance(sites, LauncherRelay) else None
    return Launchers(ctx, launchers, relay)
