"""What a person watching a storm sees: where the run is (cell n of N, elapsed, ETA), which cell,
its phase and how many clients are up or users on, how much of the window is left, the streaming
server's latest CPU, NIC and disk queue, the peak so far of the criteria's figures, and each
cell's verdict and reason the moment it ends.

On a terminal it is a live display (rich) redrawn in place; in CI (``CI`` set) or a log (not a
terminal) it prints a plain line when the phase changes and every quarter of the window, and a
heartbeat line whenever nothing was printed for ``HEARTBEAT_S`` wall seconds (a VDI login phase
of ten lab minutes is a few wall minutes without a phase change), so a log shows progress without
flooding.

It writes to the real terminal past pytest's output capture: pytest redirects file descriptors 1
and 2 during a test, so the terminal is a duplicate of the standard output taken before (when
pytest configures plugins) -- checking ``isatty()`` during a test would always say "no".
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from labctl.criteria.evaluate import fmt
from labctl.records.run_record import Outcome
from labctl.scenarios.base import Progress

Latest = Callable[[], dict[str, float]]  # "cpu_pct" -> latest value, from the recorder
Peaks = Callable[[], list[tuple[str, float, str]]]  # (figure, peak so far, unit), from the recorder
HEARTBEAT_S = 15.0  # wall seconds without a line before a log gets one anyway


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


class Terminal:
    """Where live output goes: the terminal the session started on, whatever pytest captures."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interactive: bool,
        suspend: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
        owned: bool = False,
    ):
        self.stream = stream
        self.interactive = interactive
        self._suspend = suspend
        self._owned = owned
        self._lock = threading.RLock()

    @classmethod
    def for_session(cls, capture_manager: Any = None) -> Terminal:
        """A duplicate of the standard output as it is now (call it while pytest does not capture:
        at configure time). Falls back to writing through pytest's capture manager when the standard
        output has no file descriptor (an in-process pytest)."""
        try:
            fd = os.dup(sys.stdout.fileno())
        except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
            suspend = getattr(capture_manager, "global_and_fixture_disabled", None) or contextlib.nullcontext
            return cls(sys.stdout, interactive=False, suspend=suspend)
        stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="replace")
        interactive = stream.isatty() and not in_ci() and os.environ.get("TERM") != "dumb"
        return cls(stream, interactive=interactive, owned=True)

    @contextlib.contextmanager
    def writing(self) -> Iterator[TextIO]:
        with self._lock, self._suspend():
            yield self.stream

    def line(self, text: str) -> None:
        """One line, now; a terminal that went away (SIGHUP) is not an error of the run."""
        with contextlib.suppress(OSError, ValueError), self.writing() as out:
            out.write(text + "\n")
            out.flush()

    def close(self) -> None:
        if self._owned:
            with contextlib.suppress(OSError, ValueError):
                self.stream.close()


def duration_text(seconds: float) -> str:
    """``42 s``, ``3:05``, ``1:02:05`` (wall time, as a person reads a clock)."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass
class RunProgress:
    """Where the session is: cells started of those selected, wall time, and an estimate of the
    time left from the cells that ended (their mean wall time, for the cells not run yet and the
    rest of the current one). ``total`` counts the selected tests that run cells; a test that ran
    none (a cell reused from an earlier plan of the run) is taken off it (:meth:`skipped`)."""

    total: int = 0
    clock: Callable[[], float] = time.monotonic
    started: int = 0
    durations_s: list[float] = field(default_factory=list)
    _t0: float | None = None
    _cell_t0: float | None = None

    def cell_started(self) -> None:
        now = self.clock()
        self._t0 = now if self._t0 is None else self._t0
        self._cell_t0 = now
        self.started += 1
        self.total = max(self.total, self.started)

    def cell_finished(self) -> None:
        if self._cell_t0 is not None:
            self.durations_s.append(self.clock() - self._cell_t0)
            self._cell_t0 = None

    def skipped(self) -> None:
        self.total = max(self.started, self.total - 1)

    @property
    def elapsed_s(self) -> float:
        return 0.0 if self._t0 is None else self.clock() - self._t0

    @property
    def eta_s(self) -> float | None:
        """Wall seconds left, from the mean of the cells that ended; None before the first ends."""
        if not self.durations_s:
            return None
        mean = sum(self.durations_s) / len(self.durations_s)
        current = 0.0
        if self._cell_t0 is not None:
            current = max(0.0, mean - (self.clock() - self._cell_t0))
        return mean * max(0, self.total - self.started) + current

    def text(self) -> str:
        """``cell 3 of 7 · 2:10 elapsed · ETA 5:00`` (no ETA before the first cell ends)."""
        parts = [
            f"cell {max(self.started, 1)} of {max(self.total, 1)}",
            f"{duration_text(self.elapsed_s)} elapsed",
        ]
        eta = self.eta_s
        parts.append(f"ETA {duration_text(eta)}" if eta is not None else "ETA after the first cell")
        return " · ".join(parts)


def verdict_line(cell: str, outcome: Outcome, reason: str, progress: RunProgress | None = None) -> str:
    """What a cell came to, the moment it ends: ``boot_storm-standalone-050: MARGINAL: queue: ...``
    (the outcome's word, as in every other output), then where the run is."""
    word = outcome.value.replace("_", " ").upper()
    first = reason.splitlines()[0] if reason else ""
    where = f"  [{progress.text()}]" if progress is not None else ""
    return f"{cell}: {word}" + (f": {first}" if first else "") + where


def _peaks_text(peaks: list[tuple[str, float, str]], limit: int = 4) -> str:
    if not peaks:
        return ""
    shown = [f"{name} {fmt(v)}{(' ' + unit) if unit else ''}" for name, v, unit in peaks[:limit]]
    return "peak so far: " + ", ".join(shown)


def _metrics_text(latest: dict[str, float]) -> str:
    parts = []
    if "cpu_pct" in latest:
        parts.append(f"CPU {latest['cpu_pct']:.0f} %")
    if "nic_sent_util_pct" in latest:
        parts.append(f"NIC {latest['nic_sent_util_pct']:.0f} %")
    if "disk_queue_len" in latest:
        parts.append(f"queue {latest['disk_queue_len']:.1f}")
    return " · ".join(parts)


class CellDisplay:
    """The live view of one cell; ``update(progress)`` from any thread, ``close()`` at its end."""

    def __init__(
        self,
        terminal: Terminal,
        cell: str,
        latest: Latest | None = None,
        *,
        run: RunProgress | None = None,
        peaks: Peaks | None = None,
        heartbeat_s: float | None = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.t = terminal
        self.cell = cell
        self.latest = latest or dict
        self.run = run
        self.peaks = peaks or list
        self.heartbeat_s = heartbeat_s
        self.clock = clock
        self.window_s: float | None = None
        self._lock = threading.Lock()
        self._p = Progress("start")
        self._last_phase = ""
        self._last_quarter = -1
        self._last_line = clock()
        self.lines = 0  # printed for this cell (none yet: pytest's own line is still open)
        self._live: Any = None
        self._closed = threading.Event()
        if terminal.interactive:
            self._start_live()
        elif heartbeat_s:
            threading.Thread(target=self._heartbeats, name=f"heartbeat {cell}", daemon=True).start()

    # --- rich -------------------------------------------------------------------------------
    def _start_live(self) -> None:
        from rich.console import Console  # only for a person at a terminal
        from rich.live import Live

        console = Console(file=self.t.stream, force_terminal=True)
        self._say("")  # pytest's progress dots share the current line
        self._live = Live(get_renderable=self._render, console=console, refresh_per_second=4, transient=True)
        with self.t.writing():
            self._live.start()

    def _render(self) -> Any:
        from rich.console import Group  # rich: only for a person at a terminal
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            p, window_s = self._p, self.window_s
        head = Text.assemble((self.cell, "bold"), "  ", p.phase)
        for part in (self._counts(p), p.note):
            if part:
                head.append(f"  {part}")
        rows: list[Any] = [Text(self.run.text(), style="dim")] if self.run is not None else []
        rows.append(head)
        figures = _metrics_text(self._latest())
        peaks = _peaks_text(self._peaks())
        if not (window_s and p.window_left_s is not None):
            rows += [Text(x) for x in (figures, peaks) if x]
            return Group(*rows)
        done = window_s - p.window_left_s
        line = Table.grid(padding=(0, 2))
        line.add_row(
            ProgressBar(total=window_s, completed=done, width=24),
            Text(f"{done:.0f} of {window_s:.0f} s" + (f" · {figures}" if figures else "")),
        )
        rows.append(line)
        if peaks:
            rows.append(Text(peaks))
        return Group(*rows)

    # --- both -------------------------------------------------------------------------------
    def _latest(self) -> dict[str, float]:
        try:
            return self.latest()
        except Exception:  # a display never breaks a cell
            return {}

    def _peaks(self) -> list[tuple[str, float, str]]:
        try:
            return self.peaks()
        except Exception:  # a display never breaks a cell
            return []

    @staticmethod
    def _counts(p: Progress) -> str:
        if not p.total:
            return ""
        return f"{p.done}/{p.total} up" if p.phase in ("wake", "window") else f"{p.done}/{p.total}"

    def update(self, p: Progress) -> None:
        with self._lock:
            redraw = p.phase != self._last_phase  # at once; otherwise the display's own 4 Hz
            self._p = p
            if p.window_left_s is not None and (self.window_s is None or p.window_left_s > self.window_s):
                self.window_s = p.window_left_s
            line = None if self._live is not None else self._plain(p)
            self._last_phase = p.phase
        if line is not None:
            self._say(line)
        elif redraw and self._live is not None:
            with contextlib.suppress(OSError, ValueError):
                self._live.refresh()

    def _plain(self, p: Progress) -> str | None:
        """A line when the phase changes or a quarter of the window passed, else None."""
        quarter = -1
        if self.window_s and p.window_left_s is not None:
            quarter = int(4 * (1 - p.window_left_s / self.window_s))
        if p.phase == self._last_phase and quarter <= self._last_quarter:
            return None
        self._last_quarter = quarter
        parts = [f"[{self.cell}] {p.phase}"]
        if p.total:
            parts.append(self._counts(p))
        if p.window_left_s is not None and self.window_s:
            parts.append(f"window {self.window_s - p.window_left_s:.0f}/{self.window_s:.0f} s")
        if p.note:
            parts.append(p.note)
        measuring = p.phase not in ("start", "prepare", "restore")
        metrics = _metrics_text(self._latest()) if p.phase in ("wake", "window", "copy+reboot") else ""
        peaks = _peaks_text(self._peaks(), limit=3) if measuring else ""
        first = "" if self._last_phase else "\n"  # the first line of a cell leaves pytest's dots alone
        if first and self.run is not None:
            parts.append(self.run.text())
        return first + " · ".join(parts + [x for x in (metrics, peaks) if x])

    def _say(self, line: str) -> None:
        self._last_line = self.clock()
        self.lines += 1
        self.t.line(line)

    def beat(self) -> None:
        """In a log: a line with where the cell and the run are when nothing was printed for
        ``heartbeat_s`` (the thread calls it; a test may too)."""
        if self._live is not None or not self.heartbeat_s or self._closed.is_set():
            return
        if self.clock() - self._last_line < self.heartbeat_s:
            return
        with self._lock:
            p, window_s = self._p, self.window_s
        parts = [f"[{self.cell}] {p.phase}"]
        if p.total:
            parts.append(self._counts(p))
        if p.window_left_s is not None and window_s:
            parts.append(f"window {window_s - p.window_left_s:.0f}/{window_s:.0f} s")
        if p.note:
            parts.append(p.note)
        if self.run is not None:
            parts.append(self.run.text())
        peaks = _peaks_text(self._peaks())
        self._say(" · ".join(parts + ([peaks] if peaks else [])))

    def _heartbeats(self) -> None:
        assert self.heartbeat_s
        while not self._closed.wait(min(5.0, self.heartbeat_s / 3)):
            with contextlib.suppress(Exception):  # a display never breaks a cell
                self.beat()

    def note(self, text: str) -> None:
        """A message that must be seen (an interrupt, a restore left unfinished), above the display."""
        if self._live is not None:
            with contextlib.suppress(OSError, ValueError):
                self._live.console.print(text, markup=False, highlight=False)
        else:
            self._say(text)

    def close(self) -> None:
        self._closed.set()
        live, self._live = self._live, None
        if live is not None:
            with contextlib.suppress(OSError, ValueError), self.t.writing():
                live.refresh()  # the last state, then the display clears (transient)
                live.stop()
