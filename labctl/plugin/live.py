"""What a person watching a storm sees: which cell, how many clients are up, how much of the window
is left, and the streaming server's latest CPU, NIC and disk queue.

On a terminal it is a live display (rich) redrawn in place; in CI (``CI`` set) or a log (not a
terminal) it prints a plain line when the phase changes and every quarter of the window, so a
six-minute storm shows progress without flooding the log.

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
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from labctl.scenarios.base import Progress

Latest = Callable[[], dict[str, float]]  # "cpu_pct" -> latest value, from the recorder


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

    def __init__(self, terminal: Terminal, cell: str, latest: Latest | None = None):
        self.t = terminal
        self.cell = cell
        self.latest = latest or dict
        self.window_s: float | None = None
        self._lock = threading.Lock()
        self._p = Progress("start")
        self._last_phase = ""
        self._last_quarter = -1
        self._live: Any = None
        if terminal.interactive:
            self._start_live()

    # --- rich -------------------------------------------------------------------------------
    def _start_live(self) -> None:
        from rich.console import Console  # only for a person at a terminal
        from rich.live import Live

        console = Console(file=self.t.stream, force_terminal=True)
        self.t.line("")  # pytest's progress dots share the current line
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
        figures = _metrics_text(self._latest())
        if not (window_s and p.window_left_s is not None):
            return Group(head, Text(figures)) if figures else head
        done = window_s - p.window_left_s
        line = Table.grid(padding=(0, 2))
        line.add_row(
            ProgressBar(total=window_s, completed=done, width=24),
            Text(f"{done:.0f} of {window_s:.0f} s" + (f" · {figures}" if figures else "")),
        )
        return Group(head, line)

    # --- both -------------------------------------------------------------------------------
    def _latest(self) -> dict[str, float]:
        try:
            return self.latest()
        except Exception:  # a display never breaks a cell
            return {}

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
            self.t.line(line)
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
        metrics = _metrics_text(self._latest()) if p.phase in ("wake", "window", "copy+reboot") else ""
        first = "" if self._last_phase else "\n"  # the first line of a cell leaves pytest's dots alone
        return first + " · ".join(parts + ([metrics] if metrics else []))

    def note(self, text: str) -> None:
        """A message that must be seen (an interrupt, a restore left unfinished), above the display."""
        if self._live is not None:
            with contextlib.suppress(OSError, ValueError):
                self._live.console.print(text, markup=False, highlight=False)
        else:
            self.t.line(text)

    def close(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            with contextlib.suppress(OSError, ValueError), self.t.writing():
                live.refresh()  # the last state, then the display clears (transient)
                live.stop()
