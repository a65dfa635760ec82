"""Samples of an array's counters on round interval boundaries, for APIs that answer averaged samples.

PowerStore's ``metrics/generate`` and the SC Data Collector's ``GetHistoricalIoUsage`` answer
samples the array took on its own schedule: one per interval (20 s on PowerStore), stamped with the
end of the interval on a round time. :class:`CounterHistory` keeps the twin's cumulative counters at
every boundary of ``step_s`` lab seconds for ``retention_s``; the rates of any interval that is a
multiple of ``step_s`` come from two kept snapshots. A boundary the sampler reached late (the
process was starved) is interpolated linearly between the readings either side of it, so every
sample keeps its exact timestamp.
"""

from __future__ import annotations

import bisect
import logging
import math
import threading
from dataclasses import dataclass, fields, replace

from labctl.sim.arrays.feed import ArrayFeed
from labctl.sim.twin.interface import ArrayControllerCounters, ArrayTierCounters, ArrayVolumeCounters

log = logging.getLogger(__name__)

_NUMERIC_VOLUME = tuple(f.name for f in fields(ArrayVolumeCounters) if f.type in ("float", float))


@dataclass(frozen=True)
class Snapshot:
    t: float  # lab time, a multiple of the step
    volumes: dict[str, ArrayVolumeCounters]
    tiers: tuple[ArrayTierCounters, ...]
    controllers: tuple[ArrayControllerCounters, ...]


@dataclass(frozen=True)
class VolumeRates:
    """One volume over one interval (start, end], in base units: per second, bytes, seconds."""

    volume: str
    controller: str
    start: float
    end: float
    reads_s: float
    writes_s: float
    read_bytes_s: float
    write_bytes_s: float
    read_latency_s: float | None
    write_latency_s: float | None
    queue: float  # mean I/Os outstanding

    @property
    def ios_s(self) -> float:
        return self.reads_s + self.writes_s

    @property
    def latency_s(self) -> float | None:
        parts = [
            (lat, n)
            for lat, n in ((self.read_latency_s, self.reads_s), (self.write_latency_s, self.writes_s))
            if lat is not None and n > 0
        ]
        total = sum(n for _, n in parts)
        return sum(lat * n for lat, n in parts) / total if total > 0 else None

    @property
    def io_bytes(self) -> float | None:
        return (self.read_bytes_s + self.write_bytes_s) / self.ios_s if self.ios_s > 0 else None


def rates(a: ArrayVolumeCounters, b: ArrayVolumeCounters, start: float, end: float) -> VolumeRates:
    dt = max(end - start, 1e-9)
    d_r, d_w = b.reads - a.reads, b.writes - a.writes
    return VolumeRates(
        volume=b.volume,
        controller=b.controller,
        start=start,
        end=end,
        reads_s=d_r / dt,
        writes_s=d_w / dt,
        read_bytes_s=(b.bytes_read - a.bytes_read) / dt,
        write_bytes_s=(b.bytes_written - a.bytes_written) / dt,
        read_latency_s=(b.read_response_sum_s - a.read_response_sum_s) / d_r if d_r > 0 else None,
        write_latency_s=(b.write_response_sum_s - a.write_response_sum_s) / d_w if d_w > 0 else None,
        queue=(b.queue_integral - a.queue_integral) / dt,
    )


def _lerp(a: ArrayVolumeCounters, b: ArrayVolumeCounters, t: float) -> ArrayVolumeCounters:
    span = b.lab_time_s - a.lab_time_s
    f = 0.0 if span <= 0 else min(1.0, max(0.0, (t - a.lab_time_s) / span))
    vals = {n: getattr(a, n) + (getattr(b, n) - getattr(a, n)) * f for n in _NUMERIC_VOLUME}
    vals["lab_time_s"] = t
    return replace(b, **vals)


class CounterHistory:
    """Snapshots on every ``step_s`` boundary of lab time, kept for ``retention_s``."""

    def __init__(self, feed: ArrayFeed, step_s: float, retention_s: float):
        self.feed = feed
        self.step_s = step_s
        self.retention_s = retention_s
        self._lock = threading.Lock()
        self._snaps: list[Snapshot] = []
        self._last: tuple[float, dict[str, ArrayVolumeCounters]] | None = None  # newest raw reading
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- sampling ------------------------------------------------------------------------------
    def catch_up(self) -> None:
        """Read the twin now; add a snapshot for every boundary passed since the last reading."""
        now = self.feed.now()
        vols = {v.volume: v for v in self.feed.volumes()}
        tiers, ctrls = self.feed.tiers(), self.feed.controllers()
        with self._lock:
            if self._last is None:
                # the history starts at the first boundary the array saw: now, if it is one
                self._last = (now, vols)
                if abs(math.remainder(now, self.step_s)) < 1e-9:
                    self._snaps.append(Snapshot(now, vols, tiers, ctrls))
                return
            t_prev, prev = self._last
            b = (math.floor(t_prev / self.step_s) + 1) * self.step_s
            while b <= now + 1e-9:
                snap = {
                    k: _lerp(prev[k], v, b) if k in prev else replace(v, lab_time_s=b)
                    for k, v in vols.items()
                }
                self._snaps.append(Snapshot(b, snap, tiers, ctrls))
                b += self.step_s
            self._last = (now, vols)
            horizon = now - self.retention_s
            while len(self._snaps) > 2 and self._snaps[0].t < horizon:
                self._snaps.pop(0)

    def start(self, name: str) -> None:
        self.catch_up()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"sim-history-{name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def _loop(self) -> None:
        clock = self.feed.ctx.clock
        while not self._stop.is_set():
            now = clock.now()
            nxt = (math.floor(now / self.step_s) + 1) * self.step_s
            if self._stop.wait(min(1.0, max(0.005, clock.to_wall_s(nxt - now)))):
                return
            try:
                self.catch_up()
            except Exception:
                log.exception("array %s: reading the twin's counters failed", self.feed.array.name)

    # --- queries -------------------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        self.catch_up()
        with self._lock:
            return list(self._snaps)

    def samples(
        self, interval_s: float, since: float | None = None, until: float | None = None
    ) -> list[tuple[Snapshot, Snapshot]]:
        """(start, end) snapshot pairs of every complete ``interval_s`` window, oldest first; the
        window ends on a multiple of ``interval_s`` (a multiple of the step)."""
        snaps = self.snapshots()
        times = [s.t for s in snaps]
        out = []
        for i, s in enumerate(snaps):
            if abs(math.remainder(s.t, interval_s)) > 1e-6:
                continue
            if (since is not None and s.t <= since) or (until is not None and s.t > until):
                continue
            j = bisect.bisect_left(times, s.t - interval_s - 1e-6, 0, i)
            if j < i and abs(times[j] - (s.t - interval_s)) < 1e-6:
                out.append((snaps[j], s))
        return out


def combine(parts: list[VolumeRates], name: str, controller: str = "") -> VolumeRates:
    """Several volumes as one (an appliance, a node, a controller): rates add up, latencies are
    weighted by their I/O, queues add up."""
    if not parts:
        return VolumeRates(name, controller, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, None, 0.0)

    def weighted(pick_lat, pick_n):
        pairs = [(pick_lat(p), pick_n(p)) for p in parts if pick_lat(p) is not None and pick_n(p) > 0]
        total = sum(n for _, n in pairs)
        return sum(lat * n for lat, n in pairs) / total if total > 0 else None

    return VolumeRates(
        volume=name,
        controller=controller,
        start=min(p.start for p in parts),
        end=max(p.end for p in parts),
        reads_s=sum(p.reads_s for p in parts),
        writes_s=sum(p.writes_s for p in parts),
        read_bytes_s=sum(p.read_bytes_s for p in parts),
        write_bytes_s=sum(p.write_bytes_s for p in parts),
        read_latency_s=weighted(lambda p: p.read_latency_s, lambda p: p.reads_s),
        write_latency_s=weighted(lambda p: p.write_latency_s, lambda p: p.writes_s),
        queue=sum(p.queue for p in parts),
    )


def window_rates(a: Snapshot, b: Snapshot) -> dict[str, VolumeRates]:
    """Every volume's rates between two snapshots, by volume name."""
    return {name: rates(a.volumes[name], v, a.t, b.t) for name, v in b.volumes.items() if name in a.volumes}
