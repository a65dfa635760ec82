"""A metric source a site agent runs where the wire is, as the controller's recorder sees it.

The agent (:class:`labctl.agents.feeds.FeedRunner`) publishes each batch of its source to
``labctl.sample.<lab>.<agent>.<feed>``; here an :class:`AgentFeed` is a streaming
:class:`~labctl.records.samples.MetricSource`: the recorder iterates it like ``typeperf -si``, and
it yields :class:`~labctl.records.samples.Sample` records as the batches arrive.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

from labctl.drivers.hub.protocol import FeedSpec, SampleBatch
from labctl.records.samples import Sample


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
