"""The interface every storage-array driver implements, and the arithmetic they share.

An array keeps cumulative raw counters per LUN (I/Os, blocks, busy time); rates are computed
from the difference of two readings over the difference of their *source* timestamps, the way
the array's own tools do. A driver for another array (PowerStore, SC/Compellent) implements
:class:`StorageDriver` in its own module and is one line in :mod:`labctl.drivers.storage.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from labctl.drivers.readings import Reading
from labctl.inventory.model import StorageArray

BLOCK_BYTES = 512


@dataclass(frozen=True)
class ArrayInfo:
    name: str
    model: str
    software_version: str
    api_version: str


@dataclass(frozen=True)
class LunCounters:
    """Cumulative raw counters of one LUN at one source time (summed over storage processors)."""

    lun: str
    ts: float
    reads: float
    writes: float
    read_blocks: float
    write_blocks: float
    total_io_time_us: float  # busy time summed over I/Os, microseconds


@dataclass(frozen=True)
class LunDelta:
    """Rates of one LUN between two readings."""

    lun: str
    ts: float  # the later reading's source time
    interval_s: float
    read_iops: float
    write_iops: float
    read_mb_s: float
    write_mb_s: float
    latency_ms: float | None  # None when no I/O completed in the interval
    io_size_kb: float | None

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops

    def readings(self, array: str) -> list[Reading]:
        e = f"{array}/{self.lun}"
        out = [
            Reading(e, "read_iops", "IO/s", self.ts, self.read_iops),
            Reading(e, "write_iops", "IO/s", self.ts, self.write_iops),
            Reading(e, "iops", "IO/s", self.ts, self.iops),
            Reading(e, "read_mb_s", "MB/s", self.ts, self.read_mb_s),
            Reading(e, "write_mb_s", "MB/s", self.ts, self.write_mb_s),
            Reading(e, "throughput_mb_s", "MB/s", self.ts, self.read_mb_s + self.write_mb_s),
        ]
        if self.latency_ms is not None:
            out.append(Reading(e, "latency_ms", "ms", self.ts, self.latency_ms))
        if self.io_size_kb is not None:
            out.append(Reading(e, "io_size_kb", "KB", self.ts, self.io_size_kb))
        return out


def delta(prev: LunCounters, cur: LunCounters) -> LunDelta | None:
    """Rates between two readings; None when time did not advance or a counter went backwards
    (an SP reboot or a counter reset: skip the interval instead of reporting a negative rate)."""
    dt = cur.ts - prev.ts
    if dt <= 0:
        return None
    d_r = cur.reads - prev.reads
    d_w = cur.writes - prev.writes
    d_rb = cur.read_blocks - prev.read_blocks
    d_wb = cur.write_blocks - prev.write_blocks
    d_t = cur.total_io_time_us - prev.total_io_time_us
    if min(d_r, d_w, d_rb, d_wb, d_t) < 0:
        return None
    ios = d_r + d_w
    return LunDelta(
        lun=cur.lun,
        ts=cur.ts,
        interval_s=dt,
        read_iops=d_r / dt,
        write_iops=d_w / dt,
        read_mb_s=d_rb * BLOCK_BYTES / dt / 1e6,
        write_mb_s=d_wb * BLOCK_BYTES / dt / 1e6,
        latency_ms=(d_t / ios / 1000.0) if ios > 0 else None,
        io_size_kb=((d_rb + d_wb) * BLOCK_BYTES / ios / 1024.0) if ios > 0 else None,
    )


def array_totals(array: str, deltas: list[LunDelta]) -> list[Reading]:
    """Array-wide IOPS and throughput, and I/O-weighted latency, for one interval."""
    if not deltas:
        return []
    ts = max(d.ts for d in deltas)
    r = sum(d.read_iops for d in deltas)
    w = sum(d.write_iops for d in deltas)
    out = [
        Reading(array, "read_iops", "IO/s", ts, r),
        Reading(array, "write_iops", "IO/s", ts, w),
        Reading(array, "iops", "IO/s", ts, r + w),
        Reading(array, "read_mb_s", "MB/s", ts, sum(d.read_mb_s for d in deltas)),
        Reading(array, "write_mb_s", "MB/s", ts, sum(d.write_mb_s for d in deltas)),
        Reading(array, "throughput_mb_s", "MB/s", ts, sum(d.read_mb_s + d.write_mb_s for d in deltas)),
    ]
    weighted = [(d.latency_ms, d.iops) for d in deltas if d.latency_ms is not None and d.iops > 0]
    if weighted:
        total = sum(w for _, w in weighted)
        out.append(Reading(array, "latency_ms", "ms", ts, sum(lat * w for lat, w in weighted) / total))
    return out


class StorageDriver(ABC):
    """One array's management API: log in, say what it is, stream LUN counters as rates."""

    array: StorageArray

    @property
    def endpoint(self) -> str:
        return f"{self.array.name} ({self.array.kind.value} {self.array.url})"

    @abstractmethod
    def open(self) -> StorageDriver: ...

    @property
    @abstractmethod
    def is_open(self) -> bool: ...

    @abstractmethod
    def close(self) -> None:
        """Stop any metric query and log out; never raises."""

    @abstractmethod
    def info(self) -> ArrayInfo: ...

    @abstractmethod
    def missing_metrics(self) -> list[str]:
        """Metric paths the plans need that this array does not offer (empty: all there)."""

    @abstractmethod
    def start_metrics(self, interval_s: float) -> None:
        """Start collecting LUN counters every ``interval_s`` (array seconds)."""

    @abstractmethod
    def read_counters(self) -> list[LunCounters]:
        """Every LUN counter reading the array has produced since the last call (oldest first)."""

    @abstractmethod
    def stop_metrics(self) -> None: ...

    def __enter__(self) -> StorageDriver:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


class RateTracker:
    """Turns successive LUN counter readings into :class:`LunDelta` rates."""

    def __init__(self) -> None:
        self._last: dict[str, LunCounters] = {}

    def feed(self, counters: list[LunCounters]) -> list[LunDelta]:
        out = []
        for c in sorted(counters, key=lambda c: c.ts):
            prev = self._last.get(c.lun)
            if prev is not None and c.ts <= prev.ts:
                continue
            self._last[c.lun] = c
            if prev is not None:
                d = delta(prev, c)
                if d is not None:
                    out.append(d)
        return out
