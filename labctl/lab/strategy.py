"""Bringing machines to a known power state, in the spirit of labgrid's ``Strategy``.

One place decides how a set of machines reaches *off*, *on* or *ready*, and checks that it did:
the scenarios' prepare and restore, the environment's end-of-session restore and the interrupt path
all call it, so "bring every client to S5 and check it" is written once.

    strategy = session.strategy
    res = strategy.bring(clients, Goal.OFF, timeout_s=300, stop=ctx.stop)   # shut down, check S5
    if not res.ok: ...res.failed                                             # name -> one-line reason
    before = strategy.snapshot(clients)                                      # name -> State
    ...
    strategy.restore(before, timeout_s=300, stop=abort)                      # back to what it was

``bring`` reads the states once, acts only on the machines that are not there yet (one burst per
backend through the power service), then polls until every machine is there, the deadline
(lab time) passes, or ``stop`` is set. A machine the command could not reach is not waited for; one
still not there after a third of the timeout gets the command once more (a shutdown an overloaded
machine never ran). Nothing is raised for a machine that does not make it: it is in ``failed``
with what was last seen. Every call is one ``strategy.bring`` event on the timeline.

:meth:`PowerStrategy.unexpected` compares observed states with what a scenario expects during its
window: a machine that is not in its expected state was powered by someone else (``labctl power``
from another shell, a simulator stopped under the run), and is a ``power.unexpected`` event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from labctl.errors import LabctlError
from labctl.inventory.model import Machine
from labctl.lab.context import LabContext
from labctl.lab.power.facade import Power
from labctl.lab.power.model import MachineState, PowerReport, State
from labctl.lab.ready import ReadyWatch
from labctl.records.run_record import RestoreOutcome

DEFAULT_POLL_LAB_S = 5.0  # how often bring() re-reads the states it waits for, lab seconds
RESEND_AFTER = 1 / 3  # share of the timeout after which machines not there get the command again


class Goal(StrEnum):
    OFF = "off"  # powered off (S5 for a client), checked
    ON = "on"  # powered on (booting or up), checked
    READY = "ready"  # powered on and up (see labctl.lab.ready), checked


_REACHED: dict[Goal, frozenset[State]] = {
    Goal.OFF: frozenset({State.OFF}),
    Goal.ON: frozenset({State.ON, State.BOOTING}),
}


@dataclass(frozen=True)
class StrategyResult:
    """How a :meth:`PowerStrategy.bring` (or restore) went: who got there and who did not, and why."""

    goal: str  # "off", "on", "ready", or "restore"
    reached: tuple[str, ...]
    failed: dict[str, str] = field(default_factory=dict)  # machine -> one line: what was last seen
    report: PowerReport | None = None  # the power burst it sent (None: nothing needed sending)
    started_ts_s: float = 0.0
    ended_ts_s: float = 0.0
    stopped: bool = False  # the wait ended early because ``stop`` was set

    @property
    def ok(self) -> bool:
        return not self.failed

    def describe(self, limit: int = 10) -> str:
        """One line: ``3 of 50 not off after 300 s: optiplex-001 (on: active on pvs-01), ...``."""
        if self.ok:
            return f"{len(self.reached)} machine(s) {self.goal}"
        shown = ", ".join(f"{n} ({why})" for n, why in sorted(self.failed.items())[:limit])
        more = f" and {len(self.failed) - limit} more" if len(self.failed) > limit else ""
        total = len(self.reached) + len(self.failed)
        waited = (
            "wait abandoned" if self.stopped else f"after {self.ended_ts_s - self.started_ts_s:.0f} lab s"
        )
        return f"{len(self.failed)} of {total} not {self.goal} ({waited}): {shown}{more}"

    def restore_outcome(self) -> RestoreOutcome:
        """This result as the cell summary's ``restore``: machines still on that should be off."""
        return RestoreOutcome(
            ok=self.ok,
            started_ts_s=self.started_ts_s,
            ended_ts_s=self.ended_ts_s,
            left_on=sorted(self.failed),
            detail="" if self.ok else self.describe(),
        )

    @staticmethod
    def combine(goal: str, parts: Sequence[StrategyResult], started_ts_s: float) -> StrategyResult:
        failed: dict[str, str] = {}
        for p in parts:
            failed.update(p.failed)
        return StrategyResult(
            goal,
            tuple(n for p in parts for n in p.reached),
            failed,
            None,
            started_ts_s,
            max((p.ended_ts_s for p in parts), default=started_ts_s),
            any(p.stopped for p in parts),
        )


def _names(machines: Iterable[Machine | str]) -> list[str]:
    return [m.name if isinstance(m, Machine) else str(m) for m in machines]


def _seen(st: MachineState | None) -> str:
    if st is None:
        return "not read"
    return f"{st.state.value}: {st.detail}" if st.detail else st.state.value


class PowerStrategy:
    """Brings machines of one lab to a goal state; see the module docstring. Built with the lab
    context and the two services it drives: power (to act and read states) and readiness."""

    def __init__(
        self, ctx: LabContext, power: Power, ready: ReadyWatch, *, poll_lab_s: float = DEFAULT_POLL_LAB_S
    ):
        self.ctx = ctx
        self.power = power
        self.ready = ready
        self.poll_lab_s = poll_lab_s

    # --- reading -----------------------------------------------------------------------------
    def snapshot(self, machines: Iterable[Machine | str]) -> dict[str, State]:
        """Each machine's power state now (``unknown`` when it could not be read)."""
        names = _names(machines)
        if not names:
            return {}
        return {n: st.state for n, st in self.power.state(names).items()}

    # --- bringing ----------------------------------------------------------------------------
    def bring(
        self,
        machines: Iterable[Machine | str],
        goal: Goal | str,
        *,
        timeout_s: float,
        stop: threading.Event | None = None,
        answering: bool = False,
    ) -> StrategyResult:
        """Bring every machine to ``goal`` within ``timeout_s`` lab seconds, acting only on those not
        there yet; ``stop`` ends the wait (not the sending) early. ``answering`` (goal ready): booted
        clients must also answer over SSH, for cells that command them over SSH next."""
        goal = Goal(goal)
        names = _names(machines)
        clock = self.ctx.clock
        started = clock.now()
        if not names:
            return StrategyResult(goal.value, (), {}, None, started, started)
        deadline = started + timeout_s
        stop = stop or threading.Event()
        states = self.power.state(names)
        if goal is Goal.OFF:
            todo = [n for n in names if states[n].state is not State.OFF]
            report = self.power.off(todo) if todo else None
        else:
            todo = [n for n in names if states[n].state in (State.OFF, State.UNKNOWN)]
            report = self.power.on(todo) if todo else None
        sent = report.action if report is not None else ""
        send_failed = {n: f"{sent} failed: {o.detail}" for n, o in (report.failed if report else {}).items()}

        # a machine the command did not reach will not get there by waiting: the others are waited for
        waiting = [n for n in names if n not in send_failed]
        if goal is Goal.READY:
            readiness = (
                self.ready.wait(waiting, deadline=deadline, stop=stop, answering=answering) if waiting else {}
            )
            failed = {n: r.detail or r.state for n, r in readiness.items() if not r.ready}
            stopped = stop.is_set()
        else:
            act = self.power.off if goal is Goal.OFF else self.power.on
            resend_at = started + timeout_s * RESEND_AFTER
            failed, stopped = self._wait_states(
                waiting, _REACHED[goal], states, deadline, stop, act, resend_at
            )
        failed.update(send_failed)
        result = StrategyResult(
            goal.value,
            tuple(n for n in names if n not in failed),
            failed,
            report,
            started,
            clock.now(),
            stopped,
        )
        self.ctx.timeline.append(
            "strategy.bring",
            f"{len(names)} machine(s)",
            goal=goal.value,
            acted=len(todo),
            reached=len(result.reached),
            failed=len(failed),
            stopped=stopped,
            **({"detail": result.describe()} if failed else {}),
        )
        return result

    def _wait_states(
        self,
        names: list[str],
        wanted: frozenset[State],
        first: Mapping[str, MachineState],
        deadline: float,
        stop: threading.Event,
        act: Callable[[list[str]], PowerReport],
        resend_at: float,
    ) -> tuple[dict[str, str], bool]:
        """Poll until every machine is in ``wanted``; returns (not there -> last seen, stopped).
        Machines still not there at ``resend_at`` get the command once more (``act``): a shutdown
        that an overloaded machine never ran, a magic packet that was lost."""
        clock = self.ctx.clock
        last: dict[str, MachineState] = dict(first)
        pending = [n for n in names if last[n].state not in wanted]
        resent = False
        while pending:
            now = clock.now()
            if now >= deadline or stop.is_set():
                break
            if not resent and now >= resend_at:
                resent = True
                self.ctx.timeline.append(
                    "strategy.resend", f"{len(pending)} machine(s)", machines=pending[:50]
                )
                act(pending)
            if not clock.sleep(min(self.poll_lab_s, deadline - now), stop):
                break
            try:
                last.update(self.power.state(pending))
            except LabctlError as exc:  # keep polling until the deadline: the lab may come back
                for n in pending:
                    last[n] = MachineState(n, "", State.UNKNOWN, str(exc))
            pending = [n for n in pending if last[n].state not in wanted]
        return {n: _seen(last.get(n)) for n in pending}, stop.is_set()

    def restore(
        self,
        snapshot: Mapping[str, State],
        *,
        timeout_s: float,
        stop: threading.Event | None = None,
    ) -> StrategyResult:
        """Back to the states of ``snapshot``: machines that were off go off, those that were on
        are powered on (not waited for until ready). Unknown states are left alone."""
        started = self.ctx.clock.now()
        self.ctx.timeline.append("restore.start", f"{len(snapshot)} machine(s)")
        off = [n for n, st in snapshot.items() if st is State.OFF]
        on = [n for n, st in snapshot.items() if st in (State.ON, State.BOOTING)]
        parts = [self.bring(off, Goal.OFF, timeout_s=timeout_s, stop=stop)]
        if on:
            left = max(0.0, started + timeout_s - self.ctx.clock.now())
            parts.append(self.bring(on, Goal.ON, timeout_s=left, stop=stop))
        result = StrategyResult.combine("restored", parts, started)
        self.ctx.timeline.append(
            "restore.end",
            f"{len(snapshot)} machine(s)",
            ok=result.ok,
            off=len(off),
            on=len(on),
            stopped=result.stopped,
            **({"left": sorted(result.failed)[:50], "detail": result.describe()} if not result.ok else {}),
        )
        return result

    # --- watching ----------------------------------------------------------------------------
    def unexpected(self, expected: Mapping[str, Goal], reported: set[str] | None = None) -> dict[str, str]:
        """Read the states once; machines not in their expected state (``Goal.ON`` accepts booting
        too; unknown states are not judged), as name -> one line. Each is a ``power.unexpected``
        event (a power change this run did not make), once per machine while the caller keeps
        passing the same ``reported`` set."""
        if not expected:
            return {}
        states = self.power.state(list(expected))
        out: dict[str, str] = {}
        for n, goal in expected.items():
            st = states[n]
            if st.state is State.UNKNOWN or goal is Goal.READY:
                continue
            if st.state not in _REACHED[goal]:
                out[n] = f"expected {goal.value}, seen {_seen(st)}"
        reported = reported if reported is not None else set()
        new = {n: why for n, why in out.items() if n not in reported}
        reported.update(new)
        for n, why in new.items():
            self.ctx.timeline.append("power.unexpected", n, detail=why)
        return out
