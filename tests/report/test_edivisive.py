"""E-divisive means (Matteson & James 2014): change points in a history, with a permutation test."""

from __future__ import annotations

import numpy as np

from labctl.report.edivisive import ALPHA_CP, e_divisive, segments


def test_one_step_is_found_where_it_is() -> None:
    rng = np.random.default_rng(1)
    x = [*rng.normal(10, 1, 12), *rng.normal(14, 1, 8)]
    (cp,) = e_divisive(x)
    assert cp.index == 12 and cp.p_value <= ALPHA_CP
    assert segments(len(x), [cp]) == [(0, 12), (12, 20)]


def test_two_steps_and_back() -> None:
    rng = np.random.default_rng(2)
    x = [*rng.normal(10, 1, 10), *rng.normal(16, 1, 10), *rng.normal(10, 1, 10)]
    found = [c.index for c in e_divisive(x)]
    assert {10, 20} <= set(found) and len(found) <= 3  # a third, spurious one is allowed at alpha 0.05


def test_a_change_of_spread_is_a_change_too() -> None:
    """Same mean, thirty times the spread: found (near where it is) in most histories; a test of
    the mean alone (a t-test) would never see it."""
    hits = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        found = e_divisive([*rng.normal(10, 0.1, 20), *rng.normal(10, 3.0, 20)])
        hits += bool(found) and abs(found[0].index - 20) <= 2
    assert hits >= 5


def test_no_change_is_found_in_noise_about_as_often_as_alpha() -> None:
    rng = np.random.default_rng(4)
    found = sum(bool(e_divisive(rng.normal(10, 1, 20), seed=s)) for s in range(60))
    assert found <= 8  # alpha 0.05 of 60 is 3; a broken test would find one nearly every time


def test_a_single_outlier_at_the_end_is_not_a_level() -> None:
    assert e_divisive([1.0] * 8 + [5.0]) == []
    assert e_divisive([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 9.0]) == []


def test_too_short_or_not_finite_gives_nothing_and_the_same_seed_the_same_answer() -> None:
    assert e_divisive([1.0, 2.0, 3.0, 4.0, 5.0]) == []
    assert e_divisive([1.0] * 6 + [float("nan")] * 6) == []
    rng = np.random.default_rng(5)
    x = [*rng.normal(0, 1, 9), *rng.normal(2.5, 1, 9)]
    assert e_divisive(x, seed=7) == e_divisive(x, seed=7)
