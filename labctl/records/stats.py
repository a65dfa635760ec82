"""Statistics of a recorded series: peak, mean, p95, time above a threshold, storm duration, when a
metric is back to its pre-storm baseline, and its gaps. Pure functions over :class:`Series`: the
recorder's cell summaries, the criteria and the reports all take their numbers from here.

Time-based statistics use *sample-and-hold*: each sample's value holds until the next sample; the
last sample holds for the series' median sampling interval (0 for a single sample). With that, a
storm that stays above the threshold from its first crossing to its end has
``storm_duration == time_above``.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from labctl.records.run_record import Gap, SeriesSummary
from labctl.records.series import Series


def _require(s: Series) -> None:
    if len(s) == 0:
        raise ValueError(f"series {s.key} has no samples")


def median_interval(s: Series) -> float:
    if len(s) < 2:
        return 0.0
    return float(statistics.median(b - a for a, b in zip(s.ts, s.ts[1:], strict=False)))


def _holds(s: Series) -> list[float]:
    """How long each sample's value holds (sample-and-hold)."""
    last = median_interval(s)
    return [b - a for a, b in zip(s.ts, s.ts[1:], strict=False)] + ([last] if len(s) else [])


def peak(s: Series) -> float:
    _require(s)
    return max(s.values)


def peak_ts(s: Series) -> float:
    """Timestamp of the (first) peak."""
    _require(s)
    best = max(s.values)
    return s.ts[s.values.index(best)]


def minimum(s: Series) -> float:
    _require(s)
    return min(s.values)


def mean(s: Series) -> float:
    """The mean of the samples (as typeperf or a perfmon report averages them)."""
    _require(s)
    return math.fsum(s.values) / len(s)


def percentile(s: Series, q: float) -> float:
    """The q-th percentile (0..100) of the samples, linear interpolation between closest ranks."""
    _require(s)
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    v = sorted(s.values)
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def p95(s: Series) -> float:
    return percentile(s, 95.0)


def last(s: Series) -> float:
    _require(s)
    return s.values[-1]


def total(s: Series) -> float:
    _require(s)
    return math.fsum(s.values)


def time_above(s: Series, threshold: float) -> float:
    """Lab seconds the metric spent strictly above ``threshold`` (sample-and-hold)."""
    return math.fsum(h for v, h in zip(s.values, _holds(s), strict=True) if v > threshold)


def first_crossing(s: Series, threshold: float, *, below: bool = False) -> float | None:
    """Timestamp of the first sample above ``threshold`` (or below it, with ``below=True``)."""
    for t, v in zip(s.ts, s.values, strict=True):
        if (v < threshold) if below else (v > threshold):
            return t
    return None


@dataclass(frozen=True)
class StormSpan:
    start_ts: float  # first sample above the threshold
    end_ts: float  # when the last sample above the threshold stopped holding
    duration_s: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def storm_span(s: Series, threshold: float) -> StormSpan | None:
    """From the first crossing above ``threshold`` to the end of the last sample above it."""
    above = [i for i, v in enumerate(s.values) if v > threshold]
    if not above:
        return None
    i0, i1 = above[0], above[-1]
    end = s.ts[i1] + _holds(s)[i1]
    return StormSpan(s.ts[i0], end, end - s.ts[i0])


def storm_duration(s: Series, threshold: float) -> float:
    """Duration in lab seconds of :func:`storm_span`; 0 when the metric never crossed."""
    span = storm_span(s, threshold)
    return span.duration_s if span else 0.0


def baseline(s: Series, before_ts: float, window_s: float | None = None) -> float | None:
    """The mean of the samples before ``before_ts`` (within ``window_s`` of it, if given)."""
    lo = -math.inf if window_s is None else before_ts - window_s
    vals = [v for t, v in zip(s.ts, s.values, strict=True) if lo <= t < before_ts]
    return math.fsum(vals) / len(vals) if vals else None


def within(value: float, base: float, tolerance_pct: float, abs_tolerance: float = 0.0) -> bool:
    """``value`` is within ``tolerance_pct`` % of ``base``, or within ``abs_tolerance`` of it.

    The absolute tolerance matters for baselines near zero (an idle CPU at 1 %: 10 % of that is
    0.1 percentage points, tighter than the counter's own noise).
    """
    return abs(value - base) <= max(abs(base) * tolerance_pct / 100.0, abs_tolerance)


def back_to_baseline(
    s: Series,
    base: float,
    *,
    tolerance_pct: float = 10.0,
    hold_s: float = 30.0,
    abs_tolerance: float = 0.0,
    after_ts: float | None = None,
) -> float | None:
    """The first time after the peak (or after ``after_ts``) from which the metric stays within the
    baseline band for ``hold_s`` lab seconds. ``None`` while the series does not show that yet
    (still high, or not enough samples after the return to prove the hold).
    """
    if len(s) == 0:
        return None
    start = peak_ts(s) if after_ts is None else after_ts
    n = len(s)
    i = 0
    while i < n:
        t = s.ts[i]
        if t < start or not within(s.values[i], base, tolerance_pct, abs_tolerance):
            i += 1
            continue
        j = i
        while j < n and s.ts[j] <= t + hold_s:
            if not within(s.values[j], base, tolerance_pct, abs_tolerance):
                break
            j += 1
        else:
            # every sample up to t + hold_s is in the band; proven once the series reaches it
            if s.ts[-1] >= t + hold_s:
                return t
            return None
        i = j + 1  # the sample at j left the band: the next candidate is after it
    return None


def summarize(s: Series, threshold: float | None = None) -> dict[str, Any]:
    """The numbers of :func:`series_summary` as a plain dict (the format-1 cell summary's
    ``metrics``), with time above / storm duration for a ``threshold``."""
    if len(s) == 0:
        return {"unit": s.unit, "samples": 0}
    out: dict[str, Any] = series_summary(s).model_dump(
        include={
            "unit",
            "samples",
            "start_ts_s",
            "end_ts_s",
            "peak",
            "peak_ts_s",
            "mean",
            "p95",
            "min",
            "last",
        }
    )
    if threshold is not None:
        span = storm_span(s, threshold)
        out["threshold"] = threshold
        out["time_above_s"] = time_above(s, threshold)
        out["first_crossing_ts_s"] = first_crossing(s, threshold)
        out["storm_duration_s"] = span.duration_s if span else 0.0
    return out


# --- coverage -----------------------------------------------------------------------------------

GAP_FACTOR = 2.0  # a silence longer than this many sample intervals is a gap


@dataclass(frozen=True)
class Silence:
    """A stretch of lab time in which a series that promised a sample every ``interval_s`` had none."""

    start_ts: float  # the last sample before the silence (or the window's start)
    end_ts: float  # the first sample after it (or the window's end)

    @property
    def duration_s(self) -> float:
        return self.end_ts - self.start_ts


def silences(
    s: Series,
    interval_s: float,
    window: tuple[float | None, float | None] = (None, None),
    *,
    factor: float = GAP_FACTOR,
) -> list[Silence]:
    """Where ``s`` went quiet for longer than ``factor * interval_s`` inside ``window``: between two
    samples, before the first (from a given window start) and after the last (to a given end)."""
    if interval_s <= 0:
        raise ValueError("interval_s must be positive")
    limit = factor * interval_s
    lo, hi = window
    pts = [t for t in s.ts if (lo is None or t >= lo) and (hi is None or t <= hi)]
    edges = ([lo] if lo is not None else []) + pts + ([hi] if hi is not None else [])
    return [Silence(a, b) for a, b in itertools.pairwise(edges) if b - a > limit]


def coverage(
    s: Series,
    interval_s: float,
    window: tuple[float, float],
    *,
    factor: float = GAP_FACTOR,
) -> float:
    """The share of ``window`` (0..1) not inside a silence of ``s``: 1.0 for a series that kept its
    promised interval, 0.0 for one with no sample in the window at all."""
    start, end = window
    span = end - start
    if span <= 0:
        return 1.0 if any(start <= t <= end for t in s.ts) else 0.0
    quiet = math.fsum(g.duration_s for g in silences(s, interval_s, window, factor=factor))
    return max(0.0, 1.0 - quiet / span)


def series_summary(
    s: Series,
    *,
    window: tuple[float, float] | None = None,
    interval_s: float | None = None,
) -> SeriesSummary:
    """The numbers of one series over ``window`` (all of it when None), as every reader shows them:
    the cell summary's ``metrics``, the criteria, the figures page and ``labctl compare`` all take
    them from here, over the same span.

    ``interval_s`` is the interval the series' source promised: silences longer than
    :data:`GAP_FACTOR` times it (from the window's start to the first sample, between samples,
    from the last sample to the window's end) are its ``gaps``, and ``coverage`` is the share of
    the window outside them. ``None``: an on-change source, no gaps and no coverage.
    """
    w = s.window(*window) if window is not None else s
    gaps: list[Silence] = []
    cover: float | None = None
    if interval_s is not None and interval_s > 0:
        span = window if window is not None else ((w.ts[0], w.ts[-1]) if len(w) else None)
        if span is not None:
            gaps = silences(s, interval_s, span)
            cover = coverage(s, interval_s, span)
        else:
            cover = 0.0  # no window and no sample: nothing is covered
    out = SeriesSummary(
        source=s.source,
        entity=s.entity,
        metric=s.metric,
        unit=s.unit,
        samples=len(w),
        expected_interval_s=interval_s,
        coverage=cover,
        gaps=[Gap(start_ts_s=g.start_ts, end_ts_s=g.end_ts) for g in gaps],
    )
    if len(w):
        out = out.model_copy(
            update={
                "start_ts_s": w.ts[0],
                "end_ts_s": w.ts[-1],
                "peak": peak(w),
                "peak_ts_s": peak_ts(w),
                "mean": mean(w),
                "p95": p95(w),
                "min": minimum(w),
                "last": last(w),
            }
        )
    return out
