"""Read several endpoints at once, each against its own deadline: one slow endpoint never holds
the others back, and one that fails is named.

A metric source over many endpoints (the BMCs' power, the streaming servers' device status)
polled one endpoint after another lets a BMC that hangs or answers 503 (and is retried with
back-off for many seconds) starve the healthy ones of samples, and dropping the errors of the
failing ones as long as one answered hides them. :class:`EndpointPoller` instead keeps one read
per endpoint in flight in its own thread:

- ``poll()`` starts a read on every endpoint that has none running and returns what finished
  (results of a slow read arrive with a later poll, stamped when they were taken) plus one error
  per endpoint that failed;
- it waits only for the endpoints whose last read went well (and, after the first poll, that
  answered once), for all of them up to ``wait_wall_s`` (half the poll interval, so the next poll
  is on time); a read still out then is returned by a later poll, stamped when it was taken. The
  first poll (a one-off read, the first TLS logins) waits longer if nobody has answered by then:
  until the first answers (up to the deadline) and as long again for the others. (A
  poll that waited out a hanging endpoint's whole deadline started no read on the healthy ones
  meanwhile: they lost a deadline's worth of samples.) An endpoint that failed or ran past its
  deadline is *suspect* and is not waited for at all until it answers again;
- a read still running past its ``deadline_wall_s`` is an error for that endpoint at every poll
  until it ends (no second read is started on it meanwhile, so a hung endpoint costs one thread);
- a failed endpoint stays failed until a read of it succeeds: while its next read is under way,
  each poll repeats the last error (it never looks recovered between two failures).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Generic, TypeVar

from labctl.errors import EndpointError

E = TypeVar("E", bound=Hashable)
R = TypeVar("R")


@dataclass
class _InFlight(Generic[R]):
    future: Future[R]
    started_wall_s: float


class EndpointPoller(Generic[E, R]):
    """Concurrent reads of ``endpoints`` with ``read(endpoint)``, one in flight per endpoint.

    ``name(endpoint)`` is how an error names it (a machine or array name). ``describe(exc)`` turns
    a failed read into one line; by default an :class:`~labctl.errors.EndpointError`'s own text
    (which names the endpoint and the action), else ``"<name>: <Type>: <message>"``.
    """

    def __init__(
        self,
        endpoints: Sequence[E],
        read: Callable[[E], R],
        *,
        name: Callable[[E], str] = str,
        deadline_wall_s: float,
        deadline_text: str = "",
        wait_wall_s: float | None = None,
    ):
        self.endpoints = list(endpoints)
        self._read = read
        self._name = name
        self.deadline_wall_s = deadline_wall_s
        # how long one poll waits for the trusted endpoints (default: up to their deadline)
        self.wait_wall_s = deadline_wall_s if wait_wall_s is None else min(wait_wall_s, deadline_wall_s)
        self.deadline_text = deadline_text or f"{deadline_wall_s:g} s"
        self._lock = threading.Lock()
        self._flight: dict[E, _InFlight[R]] = {}
        self._suspect: dict[E, str] = {}  # last read failed or overran (why): not waited for
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False
        self._first = True
        self._answered: set[E] = set()  # endpoints that answered a read once

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            # a thread per endpoint: a hung endpoint holds its own thread, never another's
            self._pool = ThreadPoolExecutor(
                max_workers=max(1, len(self.endpoints)), thread_name_prefix="poll-endpoint"
            )
        return self._pool

    def poll(self) -> tuple[dict[E, R], dict[E, str]]:
        """Start a read on every idle endpoint, wait for the trusted ones (each up to its deadline),
        and return ``(results, errors)`` by endpoint; an endpoint appears in at most one of them."""
        if self._closed:
            raise RuntimeError("the poller is closed")
        now = time.monotonic()
        first, self._first = self._first, False
        with self._lock:
            if self._closed:  # closed by another thread (the recorder stopping) meanwhile
                return {}, {}
            pool = self._executor()
            for ep in self.endpoints:
                if ep not in self._flight:
                    self._flight[ep] = _InFlight(pool.submit(self._read, ep), now)
            # after the first poll, an endpoint that never answered is not waited for either
            trusted = [
                f
                for ep, f in self._flight.items()
                if ep not in self._suspect and (first or ep in self._answered)
            ]
        if trusted:
            futures = [f.future for f in trusted]
            hard = max(f.started_wall_s for f in trusted) + self.deadline_wall_s
            soft = now + self.wait_wall_s
            done, pending = wait(futures, timeout=max(0.0, min(hard, soft) - now), return_when=ALL_COMPLETED)
            if pending and not done and first:  # nobody answered yet: the first answer, up to the deadline
                done, pending = wait(
                    futures, timeout=max(0.0, hard - time.monotonic()), return_when=FIRST_COMPLETED
                )
                if pending and done:  # and as long again for the others (a login on each BMC)
                    took = time.monotonic() - now
                    wait(pending, timeout=max(0.0, min(hard, time.monotonic() + took) - time.monotonic()))
        results: dict[E, R] = {}
        errors: dict[E, str] = {}
        now = time.monotonic()
        with self._lock:
            for ep, f in list(self._flight.items()):
                if f.future.done():
                    del self._flight[ep]
                    exc = f.future.exception()
                    if exc is None:
                        results[ep] = f.future.result()
                        self._suspect.pop(ep, None)
                        self._answered.add(ep)
                    else:
                        errors[ep] = self._suspect[ep] = self.describe(ep, exc)
                elif now - f.started_wall_s >= self.deadline_wall_s:
                    errors[ep] = self._suspect[ep] = (
                        f"{self._name(ep)}: no answer within {self.deadline_text} (the read is still running)"
                    )
                elif ep in self._suspect:  # failed before, asked again, no answer yet
                    errors[ep] = self._suspect[ep]
        return results, errors

    def describe(self, ep: E, exc: BaseException) -> str:
        if isinstance(exc, EndpointError):
            return str(exc)
        return f"{self._name(ep)}: {type(exc).__name__}: {exc}"

    def close(self) -> None:
        """Stop starting reads; a read still running finishes in its thread, unawaited."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            self._flight.clear()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
