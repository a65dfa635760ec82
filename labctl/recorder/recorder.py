"""The recorder: samples metric sources in the background and writes what it gets as it gets it.

    rec = Recorder(run_folder, [typeperf, redfish_power], clock=lab.clock, interval_s=5)
    rec.attach(lab.timeline)                  # power actions, state changes ... -> events.jsonl
    with rec:                                  # start(); ... ; stop()
        with rec.cell("boot_storm-standalone-050"):
            ...wake the group, wait out the window...
        s = rec.series(cell="boot_storm-standalone-050", metric="cpu_pct")
        metrics = rec.summaries("boot_storm-standalone-050", window)   # SeriesSummary per series

- Each source runs in its own thread on a schedule in *lab* time (``clock.sleep``), so a slow or
  hanging source delays nobody else. Samples keep the source's own timestamp.
- A source's ``read()`` returns a batch (list) of samples, or an iterator for a streaming source
  such as ``typeperf -si 1``: the recorder writes each row as it arrives.
- Coverage: every source promises an interval (``interval_s``; the recorder's own when it has
  none; ``None`` for on-change sources). A series silent for longer than twice its interval is a
  ``source.gap`` event (once per gap, when the next sample shows it, or at ``stop()`` for a series
  that never came back), and :meth:`Recorder.summaries` reports its gaps and coverage.
- Errors are kept per source *and endpoint*: a source that polls several endpoints raises
  :class:`~labctl.records.samples.PartialRead` (samples of the healthy ones, one error per failed
  one) or an error with an ``endpoint`` attribute; each failing endpoint is a ``source.error``
  event naming it (once per distinct error, then ``source.recovered`` with the count) and the
  samples of the others are written.
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
from dataclasses import dataclass
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
from labctl.records.run_record import SeriesSummary, Window
from labctl.records.samples import Event, MetricSource, PartialRead, Sample
from labctl.records.series import matches
from labctl.records.stats import GAP_FACTOR, back_to_baseline, baseline, series_summary

SeriesKey = tuple[str, str, str]  # (source, entity, metric) of a sample: one series across cells
_UNSET = object()


@dataclass(frozen=True)
class SourceFault:
    """What one endpoint of one source did wrong during a recording (for a cell's reason)."""

    source: str  # the source's name, e.g. "redfish:power"
    endpoint: str  # the endpoint that failed ("" when the source did not say)
    error: str  # the last error, one line, redacted
    first_ts: float  # lab time of the first failed read
    last_ts: float  # lab time of the last failed read
    count: int  # failed reads
    cell: str  # the cell current at the first failure
    recovered: bool = False  # a later read of the endpoint succeeded
    recovered_ts: float | None = None  # lab time it answered again

    def text(self) -> str:
        where = self.endpoint or self.source
        return f"{where}: {self.error}" + (f" ({self.count} failed reads)" if self.count > 1 else "")


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
        reads of a polled source that promises no interval of its own (and the interval its
        series are held to). ``stop_timeout_s``: wall seconds ``stop()`` waits for sources."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.path: Path = run_path(run)
        self._run = run
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
        self._lock = threading.Lock()
        # (source name, endpoint) -> its error state; one per endpoint, so one failing BMC
        # neither hides nor is hidden by a healthy one
        self._faults: dict[tuple[str, str], SourceFault] = {}
        self._past_faults: list[SourceFault] = []
        # per series: the interval its source promised, its last sample and when that arrived
        self._intervals: dict[SeriesKey, float | None] = {}
        self._last: dict[SeriesKey, tuple[float, float, str]] = {}  # -> (source ts, lab ts got, src)
        self._log: list[tuple[str, Event]] = []  # every event, with its cell (for the cell runner)
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
        cell = self._cell
        with self._lock:
            self._log.append((cell, ev))
        self._events.write([event_record(ev, cell)])

    def record(self, kind: str, target: str = "", **detail: Any) -> None:
        """Append an event stamped with the lab clock now."""
        self.record_event(Event(self.clock.now(), kind, target, detail))

    def attach(self, timeline: Any) -> None:
        """Subscribe to a timeline (anything with ``subscribe(callback)``) for its events."""
        unsubscribe = timeline.subscribe(self.record_event)
        if callable(unsubscribe):
            self._unsubscribe.append(unsubscribe)

    def events(self, *, cell: str | None = None, kind: str | None = None) -> list[Event]:
        """The events recorded so far (in memory), of ``cell`` and ``kind`` (a pattern such as
        ``power.*``), in the order they were recorded."""
        with self._lock:
            log = list(self._log)
        return [e for c, e in log if (cell is None or c == cell) and matches(e.kind, kind)]

    def source_faults(
        self, *, since_ts: float | None = None, until_ts: float | None = None
    ) -> list[SourceFault]:
        """Every endpoint that failed to answer its source, past and present, that overlaps the
        span ``since_ts .. until_ts`` (lab time; either may be open)."""
        with self._lock:
            faults = [*self._past_faults, *self._faults.values()]
        lo = -float("inf") if since_ts is None else since_ts
        hi = float("inf") if until_ts is None else until_ts
        return [f for f in faults if f.last_ts >= lo and f.first_ts <= hi]

    # --- samples -----------------------------------------------------------------------------

    def record_samples(self, samples: Iterable[Sample]) -> int:
        """Write samples that did not come from a polled source (e.g. boot times read at the end).
        Their series promise no interval: no gaps are reported for them."""
        return self._write(list(samples), None)

    def _write(self, batch: list[Sample], src: MetricSource | None) -> int:
        if self._closed or not batch:
            return 0
        cell = self._cell
        n = self._series.write(cell, batch)
        for s in batch:
            self._store.add(cell, s)
        if src is not None:
            self._watch(batch, src)
        with self._lock:
            self.samples_written += n
        return n

    def interval_of(self, source: str, entity: str, metric: str) -> float | None:
        """The interval the source of a series promised (None: on change, or not from a source)."""
        return self._intervals.get((source, entity, metric))

    def source_interval(self, src: MetricSource) -> float | None:
        """``src.interval_s``; the recorder's interval for a source that does not say."""
        got = getattr(src, "interval_s", _UNSET)
        if got is _UNSET:
            return self.interval_s
        if got is None:
            return None
        value = float(got)  # type: ignore[arg-type]  # a source's promise: a number of lab seconds
        return value if value > 0 else self.interval_s

    def _watch(self, batch: list[Sample], src: MetricSource) -> None:
        """Note each series' interval and last sample; a silence longer than GAP_FACTOR
        intervals before this batch is a ``source.gap`` event: one per batch at most (a typeperf
        row ends the same gap in every counter; a poll of 100 clients may end 100 gaps that began
        at different times: the event spans the earliest start to the latest end)."""
        interval = self.source_interval(src)
        got_ts = self.clock.now()
        gaps: list[tuple[float, float, SeriesKey]] = []
        with self._lock:
            for s in batch:
                key = (s.source, s.entity, s.metric)
                self._intervals[key] = interval
                prev = self._last.get(key)
                if prev is None or s.source_ts >= prev[0]:
                    self._last[key] = (s.source_ts, got_ts, src.name)
                if (
                    interval is not None
                    and prev is not None
                    and s.source_ts - prev[0] > GAP_FACTOR * interval
                ):
                    gaps.append((prev[0], s.source_ts, key))
        if gaps:
            start, end = min(g[0] for g in gaps), max(g[1] for g in gaps)
            self._gap_event(src.name, [g[2] for g in gaps], start, end, interval, open_=False)

    def _gap_event(
        self,
        source: str,
        keys: list[SeriesKey],
        start: float,
        end: float,
        interval: float | None,
        *,
        open_: bool,
    ) -> None:
        entities = sorted({k[1] for k in keys})
        detail: dict[str, Any] = {
            "start_ts_s": round(start, 3),
            "end_ts_s": round(end, 3),
            "length_s": round(end - start, 3),
            "interval_s": interval,
            "series": len(keys),
        }
        if len(entities) == 1:
            detail["entity"] = entities[0]
        else:
            detail["entities"] = entities[:20]
        if open_:
            detail["open"] = True  # the series had not come back when the recording stopped
        self.record("source.gap", source, **detail)

    def _open_gaps(self) -> None:
        """At stop: series of a source whose last sample arrived longer than GAP_FACTOR intervals
        ago (measured on the lab clock from its arrival, so a device clock that runs behind or
        ahead does not count as a silence). One event per source."""
        now = self.clock.now()
        found: dict[str, list[tuple[float, float, SeriesKey, float | None]]] = {}
        with self._lock:
            for key, (ts, got, src) in self._last.items():
                interval = self._intervals.get(key)
                if interval is None or now - got <= GAP_FACTOR * interval:
                    continue
                found.setdefault(src, []).append((ts, ts + (now - got), key, interval))
        for src, gaps in found.items():
            start, end = min(g[0] for g in gaps), max(g[1] for g in gaps)
            self._gap_event(src, [g[2] for g in gaps], start, end, gaps[0][3], open_=True)

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
        window: Window | tuple[float, float] | None = None,
        *,
        source: str | None = None,
    ) -> dict[str, SeriesSummary]:
        """``source/entity/metric`` -> :class:`SeriesSummary` of every series of ``cell`` over
        ``window`` (all of the cell when None), with the interval its source promised, its gaps
        and its coverage of the window: the ``metrics`` of ``cells/<cell>/summary.json``."""
        span = window.as_tuple() if isinstance(window, Window) else (tuple(window) if window else None)
        out = {}
        for s in self.series(cell=cell, source=source):
            interval = self.interval_of(s.source, s.entity, s.metric)
            out[s.key] = series_summary(s, window=span, interval_s=interval)  # type: ignore[arg-type]
        return out

    def sample_once(self) -> int:
        """Read every polled source once, in this thread (for tests and one-off snapshots)."""
        return sum(self._poll(src) for src in self.sources)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Recorder:
        if self._started:
            return self
        self._started = True
        self.record(
            "recorder.start",
            "",
            interval_s=self.interval_s,
            sources=[s.name for s in self.sources],
            intervals_s={s.name: self.source_interval(s) for s in self.sources},
        )
        for src in self.sources:
            t = threading.Thread(target=self._run_source, args=(src,), name=f"rec-{src.name}", daemon=True)
            self._threads[src.name] = t
            t.start()
        return self

    def stop(self) -> None:
        """Stop sampling, report series that went silent, flush and close the files. Returns
        within ``stop_timeout_s`` (wall)."""
        if self._closed:
            return
        self._stop.set()
        for src in self.sources:
            close = getattr(src, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # a source that fails to close must not stop the others
                    self.record(
                        "source.error", src.name, source=src.name, action="close", error=self._err(exc)
                    )
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
        self._open_gaps()
        self.record("recorder.stop", "", samples=self.samples_written)
        self._closed = True
        self._series.close()
        self._events.close()
        note = getattr(self._run, "note_write_error", None)  # a RunFolder says it at the run's end
        for error in self.write_errors:
            if callable(note):
                note(*error.split(": ", 1))

    @property
    def write_errors(self) -> list[str]:
        """The run folder's files this recorder could not write (the disk refused), one line each:
        what was recorded stays in memory, for the cell's record."""
        return [w.error for w in (self._series, self._events) if w.error]

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

    def _err(self, exc: BaseException | str) -> str:
        text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        lines = self._redactor.text(str(text)).strip().splitlines()
        return lines[0] if lines else type(exc).__name__

    def _note_error(self, src: MetricSource, endpoint: str, exc: BaseException | str) -> None:
        msg = self._err(exc)
        now = self.clock.now()
        key = (src.name, endpoint)
        with self._lock:
            fault = self._faults.get(key)
            if fault is None:
                self._faults[key] = SourceFault(src.name, endpoint, msg, now, now, 1, self._cell)
                new = True
            else:
                self._faults[key] = SourceFault(
                    src.name, endpoint, msg, fault.first_ts, now, fault.count + 1, fault.cell
                )
                new = msg != fault.error
        if new:
            self.record(
                "source.error",
                endpoint or src.name,
                source=src.name,
                endpoint=endpoint,
                action="read",
                error=msg,
            )

    def _note_ok(self, src: MetricSource, failed: Iterable[str] = ()) -> None:
        """A read of ``src`` succeeded for every endpoint but those in ``failed``."""
        still = set(failed)
        with self._lock:
            back = [k for k in self._faults if k[0] == src.name and k[1] not in still]
            recovered = []
            for k in back:
                f = self._faults.pop(k)
                done = SourceFault(
                    f.source,
                    f.endpoint,
                    f.error,
                    f.first_ts,
                    f.last_ts,
                    f.count,
                    f.cell,
                    True,
                    self.clock.now(),
                )
                self._past_faults.append(done)
                recovered.append(done)
        for f in recovered:
            self.record(
                "source.recovered",
                f.endpoint or f.source,
                source=f.source,
                endpoint=f.endpoint,
                failed_reads=f.count,
            )

    def _failed(self, src: MetricSource, exc: BaseException) -> list[str]:
        """Record the endpoint errors in ``exc``; returns the endpoints that failed."""
        if isinstance(exc, PartialRead):
            for endpoint, err in exc.errors.items():
                self._note_error(src, str(endpoint), err)
            return [str(e) for e in exc.errors]
        if isinstance(exc, BaseExceptionGroup):
            out: list[str] = []
            for sub in exc.exceptions:
                out += self._failed(src, sub)
            return out
        named = getattr(exc, "endpoint", None)
        endpoint = str(named) if named else ""
        self._note_error(src, endpoint, exc)
        return [endpoint]

    def _poll(self, src: MetricSource) -> int:
        written = 0
        try:
            got = src.read()
            if _is_stream(got):
                written = self._consume(src, got)  # type: ignore[arg-type]
            else:
                written = self._write([s for s in got if isinstance(s, Sample)], src)
        except PartialRead as exc:
            written += self._write([s for s in exc.samples if isinstance(s, Sample)], src)
            self._note_ok(src, self._failed(src, exc))
            return written
        except Exception as exc:
            failed = self._failed(src, exc)
            if "" not in failed:  # only named endpoints failed: the others answered
                self._note_ok(src, failed)
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
                    written += self._write(pending, src)
                    pending = []
                pending.extend(batch)
                if not isinstance(item, Sample):  # the source handed a whole row
                    written += self._write(pending, src)
                    pending = []
                if self._stop.is_set():
                    break
        finally:
            written += self._write(pending, src)
            close = getattr(stream, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
        return written

    def _run_source(self, src: MetricSource) -> None:
        period = self.source_interval(src) or self.interval_s  # an on-change source is polled at ours
        next_t = self.clock.now()
        while not self._stop.is_set():
            self._poll(src)
            next_t += period
            now = self.clock.now()
            while next_t <= now:  # fell behind (slow source): skip the missed ticks
                next_t += period
            if not self.clock.sleep(next_t - now, self._stop):
                break
