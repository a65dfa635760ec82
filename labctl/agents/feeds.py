"""Metric sources run by a site agent where the wire is, their samples streamed back to the run.

On the agent a :class:`FeedRunner` reads the lab layer's own source (PVS device status of a
streaming server, typeperf of a server, the BMCs' power draw) and publishes each batch to
``labctl.sample.<lab>.<agent>.<feed>`` with the id ``<feed>/<seq>`` (a batch re-sent after a
dropped link is stored once). On the controller the lab's
:class:`~labctl.lab.sites.feed.AgentFeed` yields them to the recorder.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from labctl.drivers.hub.protocol import FeedSpec, SampleBatch, SampleRow
from labctl.errors import EndpointError, LabctlError
from labctl.lab.context import LabContext
from labctl.lab.sources import PvsSource, RedfishPowerSource, TypeperfSource
from labctl.records.samples import PartialRead, Sample

log = logging.getLogger(__name__)

ROWS_PER_BATCH: Final = 500  # a streaming source's rows are sent at least this often
STREAM_FLUSH_S: Final = 0.5  # ... or after this many wall seconds


def make_source(ctx: LabContext, spec: FeedSpec) -> Any:
    """The lab layer's source for ``spec`` on the agent's own lab context."""
    machines = [ctx.lab.machine(t) for t in spec.targets]
    if spec.source == "pvs":
        return PvsSource(ctx, machines[0])
    if spec.source == "typeperf":
        return TypeperfSource(ctx, machines[0], interval_s=spec.interval_s)
    return RedfishPowerSource(ctx, machines)


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

    def __init__(self, ctx: LabContext, spec: FeedSpec, agent: str, publish: Callable[[SampleBatch], None]):
        super().__init__(name=f"feed-{spec.id}", daemon=True)
        self.ctx = ctx
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
        interval_wall = self.ctx.clock.to_wall_s(self.spec.interval_s)
        try:
            self._source = make_source(self.ctx, self.spec)
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
