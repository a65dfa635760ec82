"""Summaries on synthetic series whose answers are known by construction."""

from __future__ import annotations

import math

import pytest

from labctl.records.series import Series
from labctl.records.stats import (
    back_to_baseline,
    baseline,
    first_crossing,
    mean,
    p95,
    peak,
    peak_ts,
    percentile,
    storm_duration,
    storm_span,
    summarize,
    time_above,
)

T0 = 1_194_256_800.0  # 2007-11-05 10:00:00 UTC, lab epoch seconds


def mk(values: list[float], dt: float = 1.0, t0: float = T0) -> Series:
    return Series(
        "typeperf",
        "pvs-01",
        "cpu_pct",
        "%",
        "c",
        tuple(t0 + i * dt for i in range(len(values))),
        tuple(values),
    )


def storm() -> Series:
    # idle at 2 for 10 s, ramp to a peak of 90 at t=12, high (>= 50) until t=29, back to 2 from t=30
    v = [2.0] * 10 + [40.0, 70.0, 90.0] + [60.0] * 17 + [2.0] * 70
    return mk(v)


def test_peak_mean_p95() -> None:
    s = mk([float(i) for i in range(1, 101)])  # 1..100
    assert peak(s) == 100
    assert peak_ts(s) == T0 + 99
    assert mean(s) == pytest.approx(50.5)
    assert p95(s) == pytest.approx(95.05)  # rank 94.05 between 95 and 96
    assert percentile(s, 0) == 1 and percentile(s, 100) == 100


def test_time_above_counts_sample_and_hold() -> None:
    s = storm()
    # above 50: t=11 (70), 12 (90), 13..29 (60) -> 19 samples of 1 s each
    assert time_above(s, 50) == pytest.approx(19.0)
    # above 80: only the peak sample
    assert time_above(s, 80) == pytest.approx(1.0)
    assert time_above(s, 1000) == 0.0
    assert first_crossing(s, 50) == T0 + 11


def test_time_above_with_irregular_sampling() -> None:
    s = Series("x", "e", "m", "", "", (0.0, 1.0, 5.0, 6.0), (10.0, 0.0, 10.0, 10.0))
    # sample 0 holds 1 s, sample 2 holds 1 s, the last holds the median interval (1 s)
    assert time_above(s, 5) == pytest.approx(3.0)


def test_storm_duration_from_first_crossing_to_last_above() -> None:
    s = storm()
    span = storm_span(s, 30)
    assert span is not None
    assert span.start_ts == T0 + 10  # 40 > 30
    assert span.end_ts == T0 + 30  # last above is t=29, holding for 1 s
    assert storm_duration(s, 30) == pytest.approx(20.0)
    # a dip inside the storm does not split it, but time_above does not count the dip
    v = [0.0, 50.0, 50.0, 0.0, 50.0, 0.0, 0.0]
    s2 = mk(v)
    assert storm_duration(s2, 10) == pytest.approx(4.0)
    assert time_above(s2, 10) == pytest.approx(3.0)
    assert storm_duration(mk([1.0, 2.0]), 10) == 0.0


def test_baseline_and_back_to_baseline() -> None:
    s = storm()
    base = baseline(s, T0 + 10)
    assert base == pytest.approx(2.0)
    # back within 10 % (or 1 point) of 2 from t=30, held for 20 s
    t = back_to_baseline(s, 2.0, tolerance_pct=10, abs_tolerance=1.0, hold_s=20)
    assert t == T0 + 30


def test_back_to_baseline_needs_the_full_hold() -> None:
    # back at t=30 but a spike at t=40 breaks a 20 s hold; the next quiet stretch starts at t=41
    v = [2.0] * 10 + [90.0] * 20 + [2.0] * 10 + [50.0] + [2.0] * 40
    s = mk(v)
    assert back_to_baseline(s, 2.0, tolerance_pct=10, abs_tolerance=1.0, hold_s=20) == T0 + 41
    # not enough samples after the return to prove a 60 s hold
    assert back_to_baseline(s, 2.0, tolerance_pct=10, abs_tolerance=1.0, hold_s=60) is None
    # still high at the end: never back
    assert back_to_baseline(mk([2.0, 90.0, 90.0]), 2.0, hold_s=0) is None


def test_back_to_baseline_tolerance_is_relative_to_the_baseline() -> None:
    v = [100.0] * 5 + [300.0] * 5 + [108.0] * 30
    s = mk(v)
    assert back_to_baseline(s, 100.0, tolerance_pct=10, hold_s=10) == T0 + 10
    assert back_to_baseline(s, 100.0, tolerance_pct=5, hold_s=10) is None


def test_summarize_fields() -> None:
    s = storm()
    out = summarize(s, threshold=50)
    assert out["peak"] == 90 and out["peak_ts_s"] == T0 + 12
    assert out["samples"] == 100
    assert out["time_above_s"] == pytest.approx(19.0)
    assert out["storm_duration_s"] == pytest.approx(19.0)
    assert out["first_crossing_ts_s"] == T0 + 11
    assert math.isclose(out["mean"], (2 * 80 + 40 + 70 + 90 + 60 * 17) / 100)
    assert summarize(mk([]))["samples"] == 0


def test_empty_series_raise() -> None:
    with pytest.raises(ValueError, match="no samples"):
        peak(mk([]))
