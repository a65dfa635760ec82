"""The interface every storage-array driver implements, the normalised metric set, and the arithmetic.

Every backend (Unity, PowerStore, SC/Compellent, EqualLogic) answers :meth:`StorageDriver.read_metrics`
with ONE normalised set, whatever its array reports on the wire:

=================  =======  =====================================================================
metric             unit     meaning
=================  =======  =====================================================================
read_iops          IO/s     reads completed per second over the interval
write_iops         IO/s     writes completed per second
iops               IO/s     read_iops + write_iops
read_mb_s          MB/s     bytes read per second / 10^6
write_mb_s         MB/s     bytes written per second / 10^6
throughput_mb_s    MB/s     read_mb_s + write_mb_s
read_latency_ms    ms       mean response time of a read as the array measures it (None: no reads)
write_latency_ms   ms       mean response time of a write (None: no writes)
latency_ms         ms       I/O-weighted mean of both (None: no I/O)
io_size_kb         KB       bytes moved per I/O / 1024 (None: no I/O)
=================  =======  =====================================================================

per volume (:class:`VolumeMetrics`), per tier where the array reports one (:class:`TierMetrics`:
the same rates for the tier's drives, and their busy share) and per controller
(:class:`ControllerMetrics`: state ``active`` / ``standby`` / ``failed`` and, where reported, IOPS and
write-cache fill). Arrays that keep cumulative raw counters (Unity's real-time query, EqualLogic's
SNMP tables) are turned into rates by :class:`RateTracker` from the difference of two readings over
the difference of their *source* timestamps, the way the arrays' own tools do; arrays that answer
averaged samples (PowerStore ``metrics/generate``, SC ``GetHistoricalIoUsage``) are converted
field by field, in their own units, by their backend.

A driver for another array implements :class:`StorageDriver` in its own module and is one line in
:mod:`labctl.drivers.storage.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

from labctl.drivers.readings import Reading
from labctl.inventory.model import StorageArray


def aware_epoch(text: str) -> float:
    """An array's ISO 8601 timestamp (``...Z`` or ``...+01:00``) as epoch seconds. One without a zone
    is refused: taking it for the controller's own local time (what ``datetime.timestamp()`` does
    with a naive value) or for UTC would be a guess."""
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        raise ValueError(f"timestamp {text!r} carries no zone: it cannot be placed in UTC")
    return stamp.timestamp()


BLOCK_BYTES = 512
MB = 1e6  # throughput in MB/s, decimal, as the arrays' own tools print it
KB = 1024.0  # I/O size in KB, binary, as the arrays report average transfer sizes


@dataclass(frozen=True)
class ArrayInfo:
    name: str
    model: str
    software_version: str
    api_version: str


@dataclass(frozen=True)
class VolumeMetrics:
    """One volume over one interval, normalised (see the module docstring for names and units)."""

    volume: str
    ts: float  # end of the interval, the array's own clock (epoch seconds)
    interval_s: float
    read_iops: float
    write_iops: float
    read_mb_s: float
    write_mb_s: float
    read_latency_ms: float | None
    write_latency_ms: float | None
    latency_ms: float | None
    io_size_kb: float | None
    controller: str | None = None  # the controller serving it, where the array says

    @property
    def lun(self) -> str:
        """The volume's name (Unity calls volumes LUNs)."""
        return self.volume

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops

    @property
    def throughput_mb_s(self) -> float:
        return self.read_mb_s + self.write_mb_s

    def readings(self, array: str) -> list[Reading]:
        return _rate_readings(f"{array}/{self.volume}", self)


# The name the first (Unity-only) driver used for a volume's rates.
LunDelta = VolumeMetrics


@dataclass(frozen=True)
class TierMetrics:
    """Back-end I/O of one tier (drive class) over one interval: drive I/Os after RAID and cache.

    Arrays count drive transfers without always splitting them by direction (EqualLogic's disk
    table does not), so only the total is required.
    """

    tier: str
    ts: float
    interval_s: float
    iops: float
    read_mb_s: float
    write_mb_s: float
    read_iops: float | None = None
    write_iops: float | None = None
    busy_pct: float | None = None  # mean drive utilisation, %

    @property
    def throughput_mb_s(self) -> float:
        return self.read_mb_s + self.write_mb_s

    def readings(self, array: str) -> list[Reading]:
        e, ts = f"{array}/tier:{self.tier}", self.ts
        out = [
            Reading(e, "iops", "IO/s", ts, self.iops),
            Reading(e, "read_mb_s", "MB/s", ts, self.read_mb_s),
            Reading(e, "write_mb_s", "MB/s", ts, self.write_mb_s),
            Reading(e, "throughput_mb_s", "MB/s", ts, self.throughput_mb_s),
        ]
        for name, unit, value in (
            ("read_iops", "IO/s", self.read_iops),
            ("write_iops", "IO/s", self.write_iops),
            ("busy_pct", "%", self.busy_pct),
        ):
            if value is not None:
                out.append(Reading(e, name, unit, ts, value))
        if self.iops > 0:
            out.append(Reading(e, "io_size_kb", "KB", ts, self.throughput_mb_s * MB / KB / self.iops))
        return out


CONTROLLER_STATES = ("active", "standby", "failed")


@dataclass(frozen=True)
class ControllerMetrics:
    """One controller (storage processor, node, control module) at one time."""

    controller: str
    ts: float
    state: str  # one of CONTROLLER_STATES
    iops: float | None = None
    write_cache_used_pct: float | None = None

    def readings(self, array: str) -> list[Reading]:
        e = f"{array}/ctrl:{self.controller}"
        out = [Reading(e, "controller_up", "bool", self.ts, 0.0 if self.state == "failed" else 1.0)]
        if self.iops is not None:
            out.append(Reading(e, "iops", "IO/s", self.ts, self.iops))
        if self.write_cache_used_pct is not None:
            out.append(Reading(e, "write_cache_used_pct", "%", self.ts, self.write_cache_used_pct))
        return out


@dataclass(frozen=True)
class MetricBatch:
    """What one :meth:`StorageDriver.read_metrics` call returns: everything new since the last."""

    volumes: tuple[VolumeMetrics, ...] = ()
    tiers: tuple[TierMetrics, ...] = ()
    controllers: tuple[ControllerMetrics, ...] = ()

    def readings(self, array: str) -> list[Reading]:
        """Every figure as readings: per volume, array totals per timestamp, tiers, controllers."""
        out: list[Reading] = []
        by_ts: dict[float, list[VolumeMetrics]] = {}
        for v in self.volumes:
            out.extend(v.readings(array))
            by_ts.setdefault(v.ts, []).append(v)
        for group in by_ts.values():
            out.extend(array_totals(array, group))
        for t in self.tiers:
            out.extend(t.readings(array))
        for c in self.controllers:
            out.extend(c.readings(array))
        return out


def _rate_readings(e: str, m: VolumeMetrics) -> list[Reading]:
    ts = m.ts
    out = [
        Reading(e, "read_iops", "IO/s", ts, m.read_iops),
        Reading(e, "write_iops", "IO/s", ts, m.write_iops),
        Reading(e, "iops", "IO/s", ts, m.iops),
        Reading(e, "read_mb_s", "MB/s", ts, m.read_mb_s),
        Reading(e, "write_mb_s", "MB/s", ts, m.write_mb_s),
        Reading(e, "throughput_mb_s", "MB/s", ts, m.throughput_mb_s),
    ]
    for name, value in (
        ("read_latency_ms", m.read_latency_ms),
        ("write_latency_ms", m.write_latency_ms),
        ("latency_ms", m.latency_ms),
    ):
        if value is not None:
            out.append(Reading(e, name, "ms", ts, value))
    if m.io_size_kb is not None:
        out.append(Reading(e, "io_size_kb", "KB", ts, m.io_size_kb))
    return out


def weighted_latency(
    read_iops: float, read_ms: float | None, write_iops: float, write_ms: float | None
) -> float | None:
    """The I/O-weighted mean of a read and a write latency (None when no I/O had one)."""
    parts = [(ms, n) for ms, n in ((read_ms, read_iops), (write_ms, write_iops)) if ms is not None and n > 0]
    total = sum(n for _, n in parts)
    return sum(ms * n for ms, n in parts) / total if total > 0 else None


@dataclass(frozen=True)
class LunCounters:
    """Cumulative raw counters of one volume at one source time (summed over controllers).

    Unity keeps one busy-time sum for both directions (``total_io_time_us``); EqualLogic keeps one
    per direction (``read_time_us`` / ``write_time_us``), which then give read and write latency.
    """

    lun: str
    ts: float
    reads: float
    writes: float
    read_blocks: float  # 512-byte blocks
    write_blocks: float
    total_io_time_us: float  # response times summed over I/Os, microseconds
    read_time_us: float | None = None
    write_time_us: float | None = None
    controller: str | None = None


def delta(prev: LunCounters, cur: LunCounters) -> VolumeMetrics | None:
    """Rates between two readings; None when time did not advance or a counter went backwards
    (a controller reboot or a counter reset: skip the interval instead of reporting a negative rate)."""
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
    split = None not in (cur.read_time_us, prev.read_time_us, cur.write_time_us, prev.write_time_us)
    d_rt = (cur.read_time_us or 0.0) - (prev.read_time_us or 0.0)
    d_wt = (cur.write_time_us or 0.0) - (prev.write_time_us or 0.0)
    if split and min(d_rt, d_wt) < 0:
        return None
    ios = d_r + d_w
    return VolumeMetrics(
        volume=cur.lun,
        ts=cur.ts,
        interval_s=dt,
        read_iops=d_r / dt,
        write_iops=d_w / dt,
        read_mb_s=d_rb * BLOCK_BYTES / dt / MB,
        write_mb_s=d_wb * BLOCK_BYTES / dt / MB,
        read_latency_ms=(d_rt / d_r / 1000.0) if split and d_r > 0 else None,
        write_latency_ms=(d_wt / d_w / 1000.0) if split and d_w > 0 else None,
        latency_ms=(d_t / ios / 1000.0) if ios > 0 else None,
        io_size_kb=((d_rb + d_wb) * BLOCK_BYTES / ios / KB) if ios > 0 else None,
        controller=cur.controller,
    )


def array_totals(array: str, volumes: list[VolumeMetrics]) -> list[Reading]:
    """Array-wide IOPS and throughput, and I/O-weighted latencies and size, for one interval."""
    if not volumes:
        return []
    ts = max(v.ts for v in volumes)
    r = sum(v.read_iops for v in volumes)
    w = sum(v.write_iops for v in volumes)
    rmb = sum(v.read_mb_s for v in volumes)
    wmb = sum(v.write_mb_s for v in volumes)
    out = [
        Reading(array, "read_iops", "IO/s", ts, r),
        Reading(array, "write_iops", "IO/s", ts, w),
        Reading(array, "iops", "IO/s", ts, r + w),
        Reading(array, "read_mb_s", "MB/s", ts, rmb),
        Reading(array, "write_mb_s", "MB/s", ts, wmb),
        Reading(array, "throughput_mb_s", "MB/s", ts, rmb + wmb),
    ]
    for name, pick, weight in (
        ("read_latency_ms", lambda v: v.read_latency_ms, lambda v: v.read_iops),
        ("write_latency_ms", lambda v: v.write_latency_ms, lambda v: v.write_iops),
        ("latency_ms", lambda v: v.latency_ms, lambda v: v.iops),
    ):
        pairs = [(pick(v), weight(v)) for v in volumes if pick(v) is not None and weight(v) > 0]
        total = sum(n for _, n in pairs)
        if total > 0:
            out.append(Reading(array, name, "ms", ts, sum(x * n for x, n in pairs) / total))
    if r + w > 0:
        out.append(Reading(array, "io_size_kb", "KB", ts, (rmb + wmb) * MB / KB / (r + w)))
    return out


class StorageDriver(ABC):
    """One array's management API: log in, say what it is, stream normalised metrics."""

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
        """Stop any metric collection and log out; never raises."""

    @abstractmethod
    def info(self) -> ArrayInfo:
        """Model, firmware and API version, as the array reports them (preflight prints them)."""

    @abstractmethod
    def missing_metrics(self) -> list[str]:
        """Metrics the plans need that this array does not offer (empty: all there)."""

    @abstractmethod
    def volume_names(self) -> dict[str, str]:
        """Volume id as the array keys its metrics -> volume name."""

    def lun_names(self) -> dict[str, str]:
        """The same as :meth:`volume_names` (preflight checks the inventory's LUNs against it)."""
        return self.volume_names()

    @abstractmethod
    def start_metrics(self, interval_s: float) -> None:
        """Start collecting every ``interval_s`` (array seconds)."""

    @abstractmethod
    def read_metrics(self) -> MetricBatch:
        """Every interval the array completed since the last call, normalised (oldest first)."""

    @abstractmethod
    def stop_metrics(self) -> None: ...

    def __enter__(self) -> StorageDriver:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RateTracker:
    """Turns successive cumulative counter readings into :class:`VolumeMetrics` rates."""

    _last: dict[str, LunCounters] = field(default_factory=dict)

    def feed(self, counters: list[LunCounters]) -> list[VolumeMetrics]:
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
