"""The recorder: samples metric sources in the background and writes what it gets as it gets it.

    rec = Recorder(run_folder, [typeperf, redfish_power], clock=lab.clock, interval_s=5)
    rec.attach(lab.timeline)                  # power actions, state changes ... -> events.jsonl
    with rec:                                  # start(); ... ; stop()
        with rec.cell("boot_storm-standalone-050"):
            ...wake the group, wait out the window...
        s = rec.series(cell="boot_storm-standalone-050", metric="cpu_pct")

- Each source runs in its own thread on a schedule in *lab* time (``clock.sleep``), so a slow or
  hanging source delays nobody else. Samples keep the source's own timestamp.
- A source's ``read()`` returns a batch (list) of samples, or an iterator for a streaming source
  such as ``typeperf -si 1``: the recorder writes each row as it arrives.
- A failing source becomes an ``source.error`` event (once per distinct error, then a
  ``source.recovered`` event with the count) and the others go on.
- Every batch is appended to ``series.csv`` / ``events.jsonl`` and flushed, labelled with the
  current ``cell`` so one run folder holds every cell of a plan.
- ``stop()`` flushes and returns within its deadline even when a source hangs (the stuck source is
  named in a ``source.stuck`` event).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from labctl.clock import LabClock
from labctl.recorder.series import (
    EVENTS_FILE,
    SERIES_FILE,
    EventWriter,
    Series,
    SeriesStore,
    SeriesWriter,
    event_record,
    run_path,
)
from labctl.records.samples import Event, MetricSource, Sample
from labctl.records.stats import back_to_baseline, baseline, summarize


class Redacts(Protocol):
    def text(self, s: str) -> str: ...

    def obj(self, x: Any) -> Any: ...


class _NoRedaction:
    def text(self, s: str) -> str:
        return s

    def obj(self, x: Any) -> Any:
        return x


def _is_stream(batch: object) -> bool:
    return isinstance(batch, Iterator)


class Recorder:
    def __init__(
        self,
        run: Any,
        sources: Sequence[MetricSource] = (),
        *,
        clock: LabClock | None = None,
        interval_s: float = 5.0,
        cell: str = "",
        redactor: Redacts | None = None,
        stop_timeout_s: float = 5.0,
    ):
        """``run``: the run folder (a path or a RunFolder). ``interval_s``: lab seconds between
        reads of a polled source. ``stop_timeout_s``: wall seconds ``stop()`` waits for sources."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.path: Path = run_path(run)
        self.sources = list(sources)
        self.clock = clock or LabClock()
        self.interval_s = interval_s
        self.stop_timeout_s = stop_timeout_s
        # a RunFolder brings its own redactor (every secret value of the lab)
        self._redactor: Redacts = redactor or getattr(run, "redactor", None) or _NoRedaction()
        self._cell = cell
        self._store = SeriesStore()
        self._series = SeriesWriter(self.path / SERIES_FILE)
        self._events = EventWriter(self.path / EVENTS_FILE)
        self._stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}
        self._unsubscribe: list[Callable[[], Any]] = []
        self._errors: dict[str, tuple[str, int]] = {}  # source -> (last error, count)
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self.samples_written = 0

    # --- cells -------------------------------------------------------------------------------

    @property
    def current_cell(self) -> str:
        return self._cell

    def set_cell(self, cell: str) -> None:
        self._cell = cell

    @contextlib.contextmanager
    def cell(self, cell: str) -> Iterator[Recorder]:
        """Label everything recorded inside the block with ``cell``."""
        previous = self._cell
        self._cell = cell
        self.record("cell.start", cell)
        try:
            yield self
        finally:
            self.record("cell.end", cell)
            self._cell = previous

    # --- events ------------------------------------------------------------------------------

    def record_event(self, event: Event) -> None:
        """Append one event (also the callback :meth:`attach` subscribes to a timeline)."""
        if self._closed:
            return
        detail = self._redactor.obj(dict(event.detail)) if event.detail else {}
        ev = Event(event.lab_ts, event.kind, event.target, detail)
        self._events.write([event_record(ev, self._cell)])

    def record(self, kind: str, target: str = "", **detail: Any) -> None:
        """Append an event stamped with the lab clock now."""
        self.record_event(Event(self.clock.now(), kind, target, detail))

    def attach(self, timeline: Any) -> None:
        """Subscribe to a timeline (anything with ``subscribe(callback)``) for its events."""
        unsubscribe = timeline.subscribe(self.record_event)
        if callable(unsubscribe):
            self._unsubscribe.append(unsubscribe)

    # --- samples -----------------------------------------------------------------------------

    def record_samples(self, samples: Iterable[Sample]) -> int:
        """Write samples that did not come from a polled source (e.g. boot times read at the end)."""
        batch = list(samples)
        if self._closed or not batch:
            return 0
        cell = self._cell
        n = self._series.write(cell, batch)
        for s in batch:
            self._store.add(cell, s)
        with self._lock:
            self.samples_written += n
        return n

    def series(
        self,
        *,
        cell: str | None = None,
        source: str | None = None,
        entity: str | None = None,
        metric: str | None = None,
    ) -> list[Series]:
        """What was recorded so far (in memory), selected like :func:`read_series`."""
        return self._store.series(cell=cell, source=source, entity=entity, metric=metric)

    def summaries(
        self,
        cell: str,
        *,
        window: tuple[float | None, float | None] = (None, None),
        source: str | None = None,
        thresholds: dict[str, float] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """``source/entity/metric`` -> :func:`~labctl.records.stats.summarize` of each series
        of ``cell`` over ``window``: the ``metrics`` of ``cells/<cell>/summary.json``.
        ``thresholds`` (by metric name) add time above / storm duration."""
        out = {}
        for s in self.series(cell=cell, source=source):
            w = s.window(*window)
            out[s.key] = summarize(w, (thresholds or {}).get(s.metric))
        return out

    def sample_once(self) -> int:
        """Read every polled source once, in this thread (for tests and one-off snapshots)."""
        return sum(self._poll(src) for src in self.sources)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Recorder:
        if self._started:
            return self
        self._started = True
        self.record("recorder.start", "", interval_s=self.interval_s, sources=[s.name for s in self.sources])
        for src in self.sources:
            t = threading.Thread(target=self._run_source, args=(src,), name=f"rec-{src.name}", daemon=True)
            self._threads[src.name] = t
            t.start()
        return self

    def stop(self) -> None:
        """Stop sampling, flush and close the files. Returns within ``stop_timeout_s`` (wall)."""
        if self._closed:
            return
        self._stop.set()
        for src in self.sources:
            close = getattr(src, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # a source that fails to close must not stop the others
                    self.record("source.error", src.name, action="close", error=self._err(exc))
        deadline = time.monotonic() + self.stop_timeout_s
        stuck = []
        for name, t in self._threads.items():
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                stuck.append(name)
        for name in stuck:
            self.record("source.stuck", name, waited_s=self.stop_timeout_s)
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                unsubscribe()
        self.record("recorder.stop", "", samples=self.samples_written)
        self._closed = True
        self._series.close()
        self._events.close()

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and not self._stop.is_set()

    # --- waiting on what is recorded --------------------------------------------------------

    def wait_back_to_baseline(
        self,
        *,
        metric: str,
        storm_start_ts: float,
        source: str | None = None,
        entity: str | None = None,
        tolerance_pct: float = 10.0,
        abs_tolerance: float = 0.0,
        hold_s: float = 30.0,
        baseline_window_s: float | None = 60.0,
        timeout_s: float = 600.0,
    ) -> float | None:
        """Wait (lab time) until every matching series of this cell is back within its pre-storm
        baseline for ``hold_s``; returns the lab time it was back, or ``None`` at the deadline."""
        deadline = self.clock.now() + timeout_s
        while True:
            found = self.series(cell=self._cell, source=source, entity=entity, metric=metric)
            backs: list[float] = []
            for s in found:
                base = baseline(s, storm_start_ts, baseline_window_s)
                if base is None:
                    continue
                after = s.window(storm_start_ts)
                if len(after) == 0:
                    break
                t = back_to_baseline(
                    after, base, tolerance_pct=tolerance_pct, hold_s=hold_s, abs_tolerance=abs_tolerance
                )
                if t is None:
                    break
                backs.append(t)
            else:
                if backs:
                    return max(backs)
            if self.clock.now() >= deadline or self._stop.is_set():
                return None
            self.clock.sleep(min(self.interval_s, max(0.0, deadline - self.clock.now())), self._stop)

    # --- internals ---------------------------------------------------------------------------

    def _err(self, exc: BaseException) -> str:
        return self._redactor.text(f"{type(exc).__name__}: {exc}")

    def _note_error(self, src: MetricSource, exc: BaseException) -> None:
        msg = self._err(exc)
        last, count = self._errors.get(src.name, ("", 0))
        self._errors[src.name] = (msg, count + 1)
        if msg != last:
            self.record("source.error", src.name, action="read", error=msg)

    def _note_ok(self, src: MetricSource) -> None:
        if src.name in self._errors:
            _, count = self._errors.pop(src.name)
            self.record("source.recovered", src.name, failed_reads=count)

    def _poll(self, src: MetricSource) -> int:
        written = 0
        try:
            got = src.read()
            if _is_stream(got):
                written = self._consume(src, got)  # type: ignore[arg-type]
            else:
                written = self.record_samples([s for s in got if isinstance(s, Sample)])
        except Exception as exc:
            self._note_error(src, exc)
            return written
        self._note_ok(src)
        return written

    def _consume(self, src: MetricSource, stream: Iterator[Any]) -> int:
        """Write a stream's samples row by row: a row is complete when the timestamp moves on."""
        written = 0
        pending: list[Sample] = []
        try:
            for item in stream:
                batch = [item] if isinstance(item, Sample) else [s for s in item if isinstance(s, Sample)]
                if not batch:
                    continue
                if pending and batch[0].source_ts != pending[-1].source_ts:
                    written += self.record_samples(pending)
                    pending = []
                pending.extend(batch)
                if not isinstance(item, Sample):  # the source handed a whole row
                    written += self.record_samples(pending)
                    pending = []
                if self._stop.is_set():
                    break
        finally:
            written += self.record_samples(pending)
            close = getattr(stream, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
        return written

    def _run_source(self, src: MetricSource) -> None:
        next_t = self.clock.now()
        while not self._stop.is_set():
            self._poll(src)
            next_t += self.interval_s
            now = self.clock.now()
            while next_t <= now:  # fell behind (slow source): skip the missed ticks
                next_t += self.interval_s
            if not self.clock.sleep(next_t - now, self._stop):
                break
