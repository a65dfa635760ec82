"""A live line for a storm: which cell, how many clients are up, how much of the window is left.

On a terminal it rewrites one line in place; in a log (CI, nightly) it prints a plain line when
the phase changes and every quarter of the window, so a six-minute storm shows progress without
flooding the log. It writes to the real stderr, past pytest's output capture.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from labctl.scenarios.base import Progress


class CellProgress:
    def __init__(
        self,
        cell: str,
        window_s: float | None = None,
        stream: TextIO | None = None,
        suspend_capture: Callable[[], Any] | None = None,
    ):
        """``suspend_capture``: pytest's ``capturemanager.global_and_fixture_disabled`` so the line
        reaches the terminal while the test's own output stays captured."""
        self.cell = cell
        self._suspend = suspend_capture or contextlib.nullcontext
        self.window_s = window_s
        self.stream = stream or sys.__stderr__ or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._last_phase = ""
        self._last_quarter = -1
        self._last_tty_write = 0.0
        self._dirty = False

    def __call__(self, p: Progress) -> None:
        with self._lock:
            out = self._line(p)
            self._last_phase = p.phase
            if out is None:
                return
            with self._suspend():  # only around a write: suspending capture is not free
                self.stream.write(out)
                self.stream.flush()

    def _line(self, p: Progress) -> str | None:
        """What to write for ``p``, or None when nothing is due."""
        if self.tty:
            now = time.monotonic()
            if now - self._last_tty_write < 0.1 and p.phase == self._last_phase:
                return None  # at most ten redraws a second
            self._last_tty_write = now
            self._dirty = True
            return "\r\x1b[2K" + self._format(p)
        quarter = -1
        if self.window_s and p.window_left_s is not None:
            quarter = int(4 * (1 - p.window_left_s / self.window_s))
        if p.phase == self._last_phase and quarter <= self._last_quarter:
            return None
        self._last_quarter = quarter
        # the first line of a cell starts on its own line (pytest's dots share it)
        return ("" if self._last_phase else "\n") + self._format(p) + "\n"

    def _format(self, p: Progress) -> str:
        parts = [f"[{self.cell}] {p.phase}"]
        if p.total:
            parts.append(f"{p.done}/{p.total} up" if p.phase in ("wake", "window") else f"{p.done}/{p.total}")
        if p.window_left_s is not None and self.window_s:
            parts.append(f"window {self.window_s - p.window_left_s:.0f}/{self.window_s:.0f} s")
        return " · ".join(parts)

    def close(self) -> None:
        with self._lock:
            if self.tty and self._dirty:
                with self._suspend():
                    self.stream.write("\r\x1b[2K")
                    self.stream.flush()
