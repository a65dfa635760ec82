"""The event timeline: every power action, state change and failure, stamped with lab time.

Appending is thread-safe; subscribers (the recorder) are called with each event as it is
appended, so a run folder is written incrementally and keeps what happened even when a run
is interrupted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from labctl.clock import LabClock
from labctl.records.samples import Event

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], Any]


class Timeline:
    def __init__(self, clock: LabClock | None = None, *, keep: int = 100_000):
        self.clock = clock or LabClock()
        self._keep = keep
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._subscribers: list[Subscriber] = []

    def append(self, kind: str, target: str = "", /, **detail: Any) -> Event:
        """Record an event now (lab time) and hand it to every subscriber."""
        return self.add(Event(self.clock.now(), kind, target, detail))

    def add(self, event: Event) -> Event:
        with self._lock:
            self._events.append(event)
            if len(self._events) > self._keep:
                del self._events[: len(self._events) - self._keep]
            subs = list(self._subscribers)
        for cb in subs:
            try:
                cb(event)
            except Exception:  # a broken subscriber must not break a power action
                log.exception("timeline subscriber %r failed", cb)
        return event

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event from now on; returns the unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def events(self, kind: str | None = None, target: str | None = None) -> list[Event]:
        with self._lock:
            evs = list(self._events)
        return [
            e
            for e in evs
            if (kind is None or e.kind == kind or e.kind.startswith(kind + "."))
            and (target is None or e.target == target)
        ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)
