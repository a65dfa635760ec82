"""Launcher clocks on the controller's timeline: every time a launcher reports (a session's state,
a logon phase, a workload operation) is the launcher machine's clock, and a launcher whose clock is
40 s off would put every logon 40 s off against the arrays' and hosts' samples. So the controller
measures each launcher's clock on the calls it makes anyway, the NTP way, and moves the launcher's
times onto its own clock before they reach the run.

One reading is one call: ``sent_s`` (the controller's clock), the launcher's clock in its answer
(``hello``'s ``clock_ts``, an ``events`` answer's ``cursor`` ``ts``), ``answered_s``. The launcher
read its clock somewhere inside the call, so its offset (launcher minus controller) lies in
``[ts - answered_s, ts - sent_s]``: ``offset_s`` is the middle, ``uncertainty_s`` half the round
trip. Of the readings of the last :data:`WINDOW_S` the one with the shortest round trip is kept
(the least queued, as :mod:`labctl.drivers.hub.clocksync` keeps for the site agents).

The correction applied (``correction_s``) is the smallest shift that reading allows: 0 when the
launcher's time falls inside the call's window, else the distance to its nearer edge. Not the
middle: ``labctl launcher``'s client starts a Python before it asks its daemon the time, so its
reading sits late in a call of a second or two, and the middle would move the events of a launcher
NTP keeps right by half of that (and a simulated lab's, 60x, by several lab seconds). Either way
the corrected times are within the round trip of the controller's clock.

A launcher more than :data:`MAX_OFFSET_S` off is not shifted: it is a lab fault naming it ("clock
412 s ahead of the controller: set up NTP"), as such a clock is a machine nobody set up.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import overload

from labctl.errors import EndpointError
from labctl.lab.launchers.model import LogonWaterfall, OperationTime, Refusal, SessionEvent

MAX_OFFSET_S = 300.0  # beyond this a launcher's clock is a fault, never silently shifted
WINDOW_S = 300.0  # controller seconds: readings older than this give way to newer ones

Report = SessionEvent | Refusal | OperationTime | LogonWaterfall  # what a launcher reports, timed


@dataclass(frozen=True)
class ClockReading:
    """One call's measure of a launcher's clock (controller times in the lab clock's seconds)."""

    sent_s: float
    launcher_ts: float
    answered_s: float

    @property
    def rtt_s(self) -> float:
        return max(0.0, self.answered_s - self.sent_s)

    @property
    def offset_s(self) -> float:
        """The launcher's clock minus the controller's, at the middle of the call."""
        return self.launcher_ts - (self.sent_s + self.answered_s) / 2

    @property
    def uncertainty_s(self) -> float:
        return self.rtt_s / 2

    @property
    def correction_s(self) -> float:
        """The smallest offset this reading allows: 0 when the launcher's time is inside the call."""
        low, high = self.launcher_ts - self.answered_s, self.launcher_ts - self.sent_s
        return min(max(0.0, low), high)


@dataclass(frozen=True)
class LauncherClock:
    """What the cell says about one launcher's clock (summary extras, ``launcher_clock_*``)."""

    launcher: str
    offset_s: float  # launcher minus controller, middle of the best call
    uncertainty_s: float  # half that call's round trip
    correction_s: float  # subtracted from every time the launcher reports
    readings: int  # calls measured


def describe_offset(offset_s: float) -> str:
    side = "ahead of" if offset_s > 0 else "behind"
    return f"clock {abs(offset_s):.0f} s {side} the controller"


@dataclass
class Clocks:
    """The clock readings of a cell's launchers and the correction each gets."""

    window_s: float = WINDOW_S
    max_offset_s: float = MAX_OFFSET_S
    _readings: dict[str, deque[ClockReading]] = field(default_factory=dict, repr=False)
    _count: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # launchers are polled in parallel

    def saw(self, launcher: str, reading: ClockReading) -> None:
        """Keep one reading; an EndpointError naming the launcher when its clock is beyond the bound
        (its answer is then not used: the caller reports the launcher as not read)."""
        if abs(reading.correction_s) > self.max_offset_s:
            raise EndpointError(
                launcher,
                "launcher clock",
                f"{describe_offset(reading.offset_s)} (more than {self.max_offset_s:g} s; "
                f"measured within {reading.uncertainty_s:.1f} s)",
                "set up NTP on the launcher machine (w32tm /resync, chronyc makestep)",
            )
        with self._lock:
            kept = self._readings.setdefault(launcher, deque())
            kept.append(reading)
            while kept and kept[0].answered_s < reading.answered_s - self.window_s:
                kept.popleft()
            self._count[launcher] = self._count.get(launcher, 0) + 1

    def best(self, launcher: str) -> ClockReading | None:
        with self._lock:
            kept = list(self._readings.get(launcher, ()))
        return min(kept, key=lambda r: r.rtt_s) if kept else None

    def correction_s(self, launcher: str) -> float:
        b = self.best(launcher)
        return b.correction_s if b is not None else 0.0

    @overload
    def to_controller(self, item: SessionEvent) -> SessionEvent: ...
    @overload
    def to_controller(self, item: Refusal) -> Refusal: ...
    @overload
    def to_controller(self, item: SessionEvent | Refusal) -> SessionEvent | Refusal: ...
    @overload
    def to_controller(self, item: OperationTime) -> OperationTime: ...
    @overload
    def to_controller(self, item: LogonWaterfall) -> LogonWaterfall: ...
    def to_controller(self, item: Report) -> Report:
        """``item`` (a launcher's report) with its times on the controller's clock."""
        by = self.correction_s(item.launcher)
        if by == 0.0:
            return item
        if isinstance(item, SessionEvent):
            return dataclasses.replace(item, ts=item.ts - by)
        if isinstance(item, Refusal):
            return dataclasses.replace(item, ts=item.ts - by)
        if isinstance(item, OperationTime):
            return dataclasses.replace(item, start_ts=item.start_ts - by)
        phases = tuple(
            dataclasses.replace(p, start_ts=p.start_ts - by) if p.start_ts is not None else p
            for p in item.phases
        )
        return dataclasses.replace(item, launch_ts=item.launch_ts - by, phases=phases)

    def record(self) -> dict[str, LauncherClock]:
        """Per launcher measured, the correction in use and what it rests on."""
        out: dict[str, LauncherClock] = {}
        with self._lock:
            names = sorted(self._readings)
        for name in names:
            b = self.best(name)
            if b is not None:
                out[name] = LauncherClock(
                    name, b.offset_s, b.uncertainty_s, b.correction_s, self._count.get(name, 0)
                )
        return out

    def extra(self) -> dict[str, float | int | str | bool | None]:
        """The record as a cell summary's extras: ``launcher_clock_offset_s.<launcher>`` etc."""
        out: dict[str, float | int | str | bool | None] = {}
        for name, c in self.record().items():
            out[f"launcher_clock_offset_s.{name}"] = round(c.offset_s, 3)
            out[f"launcher_clock_uncertainty_s.{name}"] = round(c.uncertainty_s, 3)
            out[f"launcher_clock_correction_s.{name}"] = round(c.correction_s, 3)
        return out
