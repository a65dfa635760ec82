"""Metric sources run by a site agent where the wire is, their samples streamed back to the run.

On the agent a :class:`FeedRunner` reads the lab layer's own source (PVS device status of a
streaming server, typeperf of a server, the BMCs' power draw) and publishes each batch to
``labctl.sample.<lab>.<agent>.<feed>`` with the id ``<feed>/<seq>`` (a batch re-sent after a
dropped link is stored once). On the controller an :class:`AgentFeed` is a streaming
:class:`~labctl.records.samples.MetricSource`: the recorder iterates it like ``typeperf -si``, and
it yields :class:`~labctl.records.samples.Sample` records as the batches arrive.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from labctl.agents.protocol import FeedSpec, SampleBatch, SampleRow
from labctl.errors import EndpointError, LabctlError
from labctl.lab.session import LabSession
from labctl.lab.sources import PvsSource, RedfishPowerSource, TypeperfSource
from labctl.records.samples import PartialRead, Sample

log = logging.getLogger(__name__)

ROWS_PER_BATCH: Final = 500  # a streaming source's rows are sent at least this often
STREAM_FLUSH_S: Final = 0.5  # ... or after this many wall seconds


def make_source(session: LabSession, spec: FeedSpec) -> Any:
    """The lab layer's source for ``spec`` on the agent's own session."""
    machines = [session.lab.machine(t) for t in spec.targets]
    if spec.source == "pvs":
        return PvsSource(session, machines[0])
    if spec.source == "typeperf":
        return TypeperfSource(session, machines[0], interval_s=spec.interval_s)
    return RedfishPowerSource(session, machines)


def _rows(samples: Iterable[Sample]) -> list[SampleRow]:
    return [
        SampleRow(
            source=x.source,
            entity=x.entity,
            metric=x.metric,
            unit=x.unit,
            source_ts=x.source_ts,
            value=x.value,
        )
        for x in samples
    ]


class FeedRunner(threading.Thread):
    """Reads one source until stopped (or ``spec.max_s``), publishing every batch."""

    def __init__(
        self, session: LabSession, spec: FeedSpec, agent: str, publish: Callable[[SampleBatch], None]
    ):
        super().__init__(name=f"feed-{spec.id}", daemon=True)
        self.s = session
        self.spec = spec
        self.agent = agent
        self.publish = publish
        self._stop = threading.Event()
        self._seq = 0
        self._source: Any = None

    def stop(self) -> None:
        self._stop.set()
        close = getattr(self._source, "close", None)
        if callable(close):
            close()

    def _send(self, rows: list[SampleRow], errors: dict[str, str] | None = None, last: bool = False) -> None:
        self._seq += 1
        self.publish(
            SampleBatch(
                feed=self.spec.id,
                agent=self.agent,
                seq=self._seq,
                read_wall=time.time(),
                samples=rows,
                errors=errors or {},
                last=last,
            )
        )

    def run(self) -> None:
        until = time.monotonic() + self.spec.max_s
        interval_wall = self.s.clock.to_wall_s(self.spec.interval_s)
        try:
            self._source = make_source(self.s, self.spec)
            while not self._stop.is_set() and time.monotonic() < until:
                try:
                    got = self._source.read()
                    if isinstance(got, list):
                        self._send(_rows(got))
                    else:
                        self._stream(got, until)
                        continue  # a stream that ended (its SSH session dropped) is started again
                except PartialRead as exc:
                    self._send(_rows(exc.samples), {k: str(v) for k, v in exc.errors.items()})
                except LabctlError as exc:
                    endpoint = exc.endpoint if isinstance(exc, EndpointError) else self.spec.targets[0]
                    self._send([], {endpoint: str(exc)})
                self._stop.wait(interval_wall)
        except Exception as exc:  # the feed ends; the controller hears why
            log.exception("feed %s failed", self.spec.id)
            self._send([], {self.agent: f"{type(exc).__name__}: {exc}"}, last=True)
            return
        self._send([], last=True)

    def _stream(self, items: Iterable[Any], until: float) -> None:
        rows: list[SampleRow] = []
        flushed = time.monotonic()
        for item in items:
            rows.extend(_rows(item if isinstance(item, list) else [item]))
            now = time.monotonic()
            if len(rows) >= ROWS_PER_BATCH or now - flushed >= STREAM_FLUSH_S:
                self._send(rows)
                rows, flushed = [], now
            if self._stop.is_set() or now > until:
                break
        if rows:
            self._send(rows)


class AgentFeed:
    """A controller's view of a feed an agent runs: a streaming MetricSource.

    ``start`` (the link sends the feed order) is called on the first :meth:`read`; :meth:`close`
    stops the feed at the agent. ``on_batch`` receives every batch (for events: the agent's
    per-endpoint errors)."""

    def __init__(
        self,
        spec: FeedSpec,
        agent: str,
        *,
        start: Callable[[AgentFeed], None],
        stop: Callable[[AgentFeed], None],
        on_errors: Callable[[str, dict[str, str]], None] | None = None,
    ):
        self.spec = spec
        self.agent = agent
        self.name = f"{spec.source}:{','.join(spec.targets)}@{agent}"
        self.interval_s: float | None = spec.interval_s
        self._start = start
        self._stop = stop
        self._on_errors = on_errors
        self._queue: queue.Queue[SampleBatch] = queue.Queue()
        self._closed = threading.Event()
        self._started = False
        self._last_seq = 0

    def deliver(self, batch: SampleBatch) -> None:
        """Called by the link for every batch of this feed (in stream order)."""
        if batch.seq > self._last_seq:  # a batch seen twice (re-sent across a reconnect) counts once
            self._last_seq = batch.seq
            self._queue.put(batch)

    def read(self) -> Iterator[list[Sample]]:
        if not self._started:
            self._started = True
            self._start(self)
        return self._iterate()

    def _iterate(self) -> Iterator[list[Sample]]:
        while not self._closed.is_set():
            try:
                batch = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if batch.errors and self._on_errors is not None:
                self._on_errors(self.name, batch.errors)
            if batch.samples:
                yield [
                    Sample(r.source, r.entity, r.metric, r.unit, r.source_ts, r.value) for r in batch.samples
                ]
            if batch.last:
                return

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            if self._started:
                self._stop(self)
