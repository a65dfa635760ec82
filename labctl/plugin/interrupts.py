"""Ctrl-C, SIGTERM (a cancelled CI job) and SIGHUP (a closed terminal) during a plan session.

All three mean the same: stop the cell, keep what it measured, return the lab to its power state,
exit 130. While a cell or a restore runs (:meth:`Interrupts.busy`):

- the first signal sets :attr:`stop`: every wait of the scenario ends at its next poll, the
  scenario restores the lab in its ``finally`` and the runner marks the cell ``interrupted``;
- a second one sets :attr:`abort`: the restore stops waiting and says what is left on;
- a third one raises ``KeyboardInterrupt`` at once.

Outside a cell (collection, between cells) there is nothing to stop gracefully: the first signal
raises ``KeyboardInterrupt`` in the main thread, and pytest unwinds (fixtures restore the lab and
stop a simulator the run started).

The handler itself only records the signal and hands the rest to a thread: a signal handler runs
between two bytecodes of the main thread, which may hold the very lock an ``Event.set`` needs.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class Interrupts:
    def __init__(self, say: Callable[[str], None] = lambda _: None):
        self.stop = threading.Event()
        self.abort = threading.Event()
        self.say = say  # where the one-line messages go (the live display or the terminal)
        self.signal_name = ""  # of the first signal, e.g. "SIGTERM"
        self.requested = False  # set by the handler itself (lock-free), before ``stop`` is
        self._count = 0
        self._busy = 0
        self._previous: dict[int, Any] = {}
        self._todo: queue.SimpleQueue[str] = queue.SimpleQueue()  # SimpleQueue.put is signal-safe
        self._worker: threading.Thread | None = None

    # --- installing ---------------------------------------------------------------------------
    def install(self) -> Interrupts:
        """Take over the signals (main thread only; elsewhere a no-op: pytest-in-a-thread)."""
        if self._previous or threading.current_thread() is not threading.main_thread():
            return self
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        self._worker = threading.Thread(target=self._work, name="interrupts", daemon=True)
        self._worker.start()
        return self

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
        self._previous.clear()
        self._todo.put("")  # ends the worker

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """A cell or a restore runs: a first signal stops it gracefully instead of raising."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    @property
    def reason(self) -> str:
        return f"interrupted by {self.signal_name}" if self.signal_name else "interrupted"

    # --- the handler and its worker -------------------------------------------------------------
    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._count += 1
        name = signal.Signals(signum).name
        if self._count == 1:
            self.signal_name = name
            self.requested = True
            self._todo.put(f"stop:{name}")
            if not self._busy:
                raise KeyboardInterrupt(self.reason)
        elif self._count == 2:
            self._todo.put(f"abort:{name}")
        else:
            raise KeyboardInterrupt(f"{name} a third time: leaving at once")

    def _work(self) -> None:
        while True:
            item = self._todo.get()
            if not item:
                return
            what, _, name = item.partition(":")
            if what == "stop":
                self.stop.set()
                if self._busy:
                    self._say(
                        f"{name}: stopping the cell, keeping what it measured and restoring the lab "
                        "(interrupt again to stop waiting for the restore)"
                    )
            else:
                self.abort.set()
                self._say(f"{name} again: not waiting for the restore; what is left on is listed next")

    def _say(self, text: str) -> None:
        with contextlib.suppress(Exception):  # a closed terminal (SIGHUP) must not stop the restore
            self.say(text)
