"""The response-time index: an open baseline and saturation point over sessions' timed operations.

In the spirit of Login VSI's VSIbase / VSImax, written down so anyone can reproduce it from the
operations a run recorded (``docs/response-time-index.md`` has the worked example):

1. **Reference per operation.** Operations differ in their own cost (opening a PDF takes longer
   than browsing), so each is measured against itself: an operation's *reference* is the
   ``reference_quantile`` (default the 10th percentile) of its response times over the run, its
   unloaded speed without its single fastest outlier deciding it.
2. **Samples.** Operations in start order are cut into buckets of ``sample_s`` lab seconds; a
   bucket with fewer than ``min_ops_per_sample`` operations joins the next. A sample's value is
   ``sum(response) / sum(reference) * typical_reference_s``: the response time of a typical
   operation at that load, in seconds (``typical_reference_s`` = mean of the references). Its
   session count is the number of sessions active when the bucket's last operation started.
3. **Baseline** (VSIbase-like): the mean of the ``baseline_samples`` lowest sample values after
   dropping the ``baseline_outliers`` lowest of them.
4. **Saturation point** (VSImax-like): scanning samples in time order, the first run of
   ``consecutive`` samples whose values all exceed ``baseline + threshold_s``; its session count is
   the saturation point. No such run: not saturated (the lab carried every session).
5. **User experience per desktop**: a session's own index (its operations' ``sum(response) /
   sum(reference) * typical_reference_s``) is ``good`` up to ``baseline + good_within_s``,
   ``fair`` up to ``baseline + fair_within_s``, ``poor`` above (and a session that failed to log on
   or ran no operation is ``poor``).

Pure: no I/O, no clock, no labctl layer above the records. Inputs are plain records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class UxBand(StrEnum):
    GOOD = "good"
    FAIR = "fair"
    POOR = "poor"

    @property
    def level(self) -> int:
        """0 good, 1 fair, 2 poor: what a per-machine criterion judges (``none poor``: max 1)."""
        return {UxBand.GOOD: 0, UxBand.FAIR: 1, UxBand.POOR: 2}[self]


@dataclass(frozen=True)
class IndexParams:
    """The index's parameters, with the defaults the docs justify."""

    sample_s: float = 60.0  # lab seconds per sample bucket
    min_ops_per_sample: int = 5  # fewer operations in a bucket: it joins the next one
    reference_quantile: float = 0.10  # an operation's reference: this quantile of its responses
    baseline_samples: int = 15  # the lowest samples the baseline is the mean of (VSIbase: 15) ...
    baseline_outliers: int = 2  # ... after dropping this many of the very lowest (VSIbase: 2)
    threshold_s: float = 1.0  # saturated: above baseline + this (VSImax v4: + 1,000 ms)
    consecutive: int = 3  # ... for this many samples in a row
    good_within_s: float = 0.5  # a desktop is good up to baseline + this
    fair_within_s: float = 1.0  # fair up to baseline + this; poor above

    def problems(self) -> list[str]:
        out = []
        if not (self.sample_s > 0 and math.isfinite(self.sample_s)):
            out.append("sample_s must be a positive number of lab seconds")
        if self.min_ops_per_sample < 1:
            out.append("min_ops_per_sample must be at least 1")
        if not 0.0 <= self.reference_quantile <= 0.5:
            out.append("reference_quantile must be between 0 and 0.5")
        if self.baseline_samples < 1 or self.baseline_outliers < 0:
            out.append("baseline_samples must be at least 1 and baseline_outliers at least 0")
        if self.consecutive < 1:
            out.append("consecutive must be at least 1")
        if not 0 < self.good_within_s <= self.fair_within_s:
            out.append("good_within_s must be positive and at most fair_within_s")
        return out


@dataclass(frozen=True)
class TimedOp:
    """One timed operation as a launcher measured it."""

    session: str
    name: str
    start_ts: float  # lab epoch seconds
    response_s: float


@dataclass(frozen=True)
class SessionSpan:
    """When a session was active (logged on to logged off), for counting sessions over time."""

    session: str
    desktop: str
    start_ts: float  # logged on (or requested, if the launcher gives nothing better)
    end_ts: float | None = None  # logged off; None: still on at the end of the run
    failed: bool = False  # never logged on


@dataclass(frozen=True)
class IndexSample:
    ts: float  # start of the bucket's last operation
    sessions: int  # active then
    value_s: float  # response time of a typical operation at that load
    ops: int


@dataclass(frozen=True)
class IndexResult:
    params: IndexParams
    references_s: dict[str, float]  # operation -> its reference response time
    typical_reference_s: float
    samples: tuple[IndexSample, ...]
    baseline_s: float | None  # None: no samples
    saturation_sessions: int | None  # None: not saturated
    saturation_ts: float | None
    bands: dict[str, UxBand] = field(default_factory=dict)  # desktop -> band
    desktop_index_s: dict[str, float] = field(default_factory=dict)  # desktop -> its own index

    @property
    def threshold_value_s(self) -> float | None:
        return None if self.baseline_s is None else self.baseline_s + self.params.threshold_s

    @property
    def saturated(self) -> bool:
        return self.saturation_sessions is not None

    def share(self, band: UxBand) -> float:
        """Share (0..1) of the banded desktops in ``band``."""
        return sum(b is band for b in self.bands.values()) / len(self.bands) if self.bands else 0.0


def quantile(values: Sequence[float], q: float) -> float:
    """Linear between ranks (numpy's default), for a non-empty sequence."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def references(ops: Iterable[TimedOp], q: float) -> dict[str, float]:
    by_name: dict[str, list[float]] = {}
    for op in ops:
        by_name.setdefault(op.name, []).append(op.response_s)
    # an operation whose reference is 0 (instant) would divide by zero: it weighs nothing then
    return {n: max(quantile(v, q), 1e-6) for n, v in by_name.items()}


def active_sessions(spans: Sequence[SessionSpan], ts: float) -> int:
    return sum(1 for s in spans if not s.failed and s.start_ts <= ts and (s.end_ts is None or s.end_ts > ts))


def _index(ops: Sequence[TimedOp], refs: dict[str, float], typical: float) -> float:
    ref = sum(refs[o.name] for o in ops)
    return sum(o.response_s for o in ops) / ref * typical


def samples(
    ops: Sequence[TimedOp],
    spans: Sequence[SessionSpan],
    refs: dict[str, float],
    typical: float,
    p: IndexParams,
) -> list[IndexSample]:
    """Buckets of ``sample_s`` in start order; a bucket short of ``min_ops_per_sample`` joins the
    next (the last one joins the one before it)."""
    buckets: list[list[TimedOp]] = []
    bucket: list[TimedOp] = []
    bucket_end = -math.inf
    for op in sorted(ops, key=lambda o: o.start_ts):
        if op.start_ts >= bucket_end:
            if len(bucket) >= p.min_ops_per_sample:
                buckets.append(bucket)
                bucket = []
            bucket_end = op.start_ts + p.sample_s
        bucket.append(op)
    if bucket:
        if len(bucket) < p.min_ops_per_sample and buckets:
            buckets[-1] += bucket
        else:
            buckets.append(bucket)
    return [_sample(b, spans, refs, typical) for b in buckets]


def _sample(
    bucket: Sequence[TimedOp], spans: Sequence[SessionSpan], refs: dict[str, float], typical: float
) -> IndexSample:
    ts = bucket[-1].start_ts
    return IndexSample(ts, active_sessions(spans, ts), _index(bucket, refs, typical), len(bucket))


def baseline(values: Sequence[float], p: IndexParams) -> float | None:
    if not values:
        return None
    low = sorted(values)[: p.baseline_samples]
    kept = low[p.baseline_outliers :] or low[-1:]  # too few samples to drop outliers: keep the highest
    return sum(kept) / len(kept)


def saturation(xs: Sequence[IndexSample], limit: float, consecutive: int) -> IndexSample | None:
    run: list[IndexSample] = []
    for s in xs:
        if s.value_s > limit:
            run.append(s)
            if len(run) >= consecutive:
                return run[0]
        else:
            run = []
    return None


def band(value: float | None, base: float, p: IndexParams) -> UxBand:
    if value is None:
        return UxBand.POOR
    if value <= base + p.good_within_s:
        return UxBand.GOOD
    if value <= base + p.fair_within_s:
        return UxBand.FAIR
    return UxBand.POOR


def compute(
    ops: Sequence[TimedOp], spans: Sequence[SessionSpan], params: IndexParams | None = None
) -> IndexResult:
    """The index of one run: see the module docstring for every step."""
    p = params or IndexParams()
    bad = p.problems()
    if bad:
        raise ValueError("; ".join(bad))
    refs = references(ops, p.reference_quantile)
    typical = sum(refs.values()) / len(refs) if refs else 0.0
    xs = samples(ops, spans, refs, typical, p) if ops else []
    base = baseline([s.value_s for s in xs], p)
    sat = saturation(xs, base + p.threshold_s, p.consecutive) if base is not None else None
    by_session: dict[str, list[TimedOp]] = {}
    for op in ops:
        by_session.setdefault(op.session, []).append(op)
    bands: dict[str, UxBand] = {}
    own: dict[str, float] = {}
    for sp in spans:
        mine = by_session.get(sp.session, [])
        value = _index(mine, refs, typical) if mine and not sp.failed else None
        if value is not None:
            own[sp.desktop] = value
        if base is not None or sp.failed:
            bands[sp.desktop] = band(value, base if base is not None else 0.0, p)
    return IndexResult(
        params=p,
        references_s=refs,
        typical_reference_s=typical,
        samples=tuple(xs),
        baseline_s=base,
        saturation_sessions=sat.sessions if sat is not None else None,
        saturation_ts=sat.ts if sat is not None else None,
        bands=bands,
        desktop_index_s=own,
    )
