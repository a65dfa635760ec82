"""What everything measured in a lab turns into: metric samples and timeline events, and the
protocol every metric source implements.

These sit at the ground of labctl: the lab layer produces them, the recorder writes them, the
criteria and the reports read them, and none of those layers has to import another for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Sample:
    """One value of one metric of one entity, stamped with the *source's* own timestamp."""

    source: str  # e.g. "typeperf", "redfish", "unity", "vcenter", "pvs"
    entity: str  # machine, NIC instance, volume, LUN ... e.g. "pvs-01/D:"
    metric: str  # e.g. "cpu_pct", "nic_sent_bytes_per_s", "disk_queue_len"
    unit: str  # e.g. "%", "B/s", "requests", "s", "MB"
    source_ts: float  # lab seconds since the Unix epoch, as the source reported it
    value: float


@dataclass(frozen=True)
class Event:
    """Something that happened: a power action, a state change, a failure, a phase of a plan."""

    lab_ts: float  # the orchestrator's lab clock when it was recorded
    kind: str  # e.g. "power.action", "power.state", "ready", "timeout", "error", "phase"
    target: str  # machine, group or endpoint name ("" for the run itself)
    detail: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MetricSource(Protocol):
    """A source of samples the recorder polls or streams.

    ``read()`` returns one batch (a list), or an iterator that keeps yielding samples (or lists of
    samples, one row at a time) as the source produces them: a streaming source such as
    ``typeperf -si 1``, which may also have ``close()`` to end the stream.

    ``interval_s`` is the lab seconds the source promises between two samples of each of its
    series (``typeperf -si``, a poll interval, vCenter's 20 s real-time interval). The recorder
    reports a longer silence as a gap, and criteria judge a window whose series are not covered
    as ``no_data`` instead of passing it. ``None``: the source samples on change only (no gaps).
    """

    name: str
    interval_s: float | None

    def read(self) -> Iterable[Sample] | Iterable[list[Sample]]: ...


class PartialRead(Exception):
    """A read of a source that polls several endpoints, in which some of them failed.

    It carries the samples the healthy endpoints gave and one error per failed endpoint, so the
    recorder keeps the samples and records a ``source.error`` event naming each failed endpoint
    (one error state per source and endpoint: a BMC answering 503 never hides a healthy one).

        raise PartialRead(samples, {"bmc-02": exc})

    A source with a single endpoint raises the endpoint's error itself; the recorder takes the
    endpoint from its ``endpoint`` attribute (:class:`labctl.errors.EndpointError` has one).
    """

    def __init__(self, samples: Iterable[Sample], errors: Mapping[str, BaseException | str]):
        self.samples = list(samples)
        self.errors = dict(errors)
        shown = "; ".join(f"{k}: {v}" for k, v in list(self.errors.items())[:3])
        super().__init__(f"{len(self.errors)} endpoint(s) failed: {shown}")
