"""The noise model of the comparison: Student-t quantiles, the per-kind priors and their pooling."""

from __future__ import annotations

import math

import pytest

from labctl.records.figures import CLIENT_KINDS, SERIES_KINDS
from labctl.report.noise import FALLBACK, PRIOR_DF, PRIORS, estimate, prior, t_cdf, t_quantile


@pytest.mark.parametrize(
    ("p", "df", "table"),
    # Student's t table (e.g. Abramowitz & Stegun 26.7; NIST/SEMATECH e-Handbook 1.3.6.7.2)
    [
        (0.975, 1, 12.706),
        (0.975, 10, 2.228),
        (0.995, 2, 9.925),
        (0.999, 4, 7.173),
        (0.999, 8, 4.501),
        (0.95, 30, 1.697),
    ],
)
def test_t_quantiles_match_the_tables(p: float, df: float, table: float) -> None:
    assert t_quantile(p, df) == pytest.approx(table, abs=1e-3)
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_t_tends_to_the_normal_and_is_symmetric() -> None:
    assert t_quantile(0.975, 1e6) == pytest.approx(1.95996, abs=1e-4)
    assert t_quantile(0.025, 7) == pytest.approx(-t_quantile(0.975, 7))
    assert t_cdf(0.0, 3) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        t_quantile(1.0, 5)


def test_every_figure_kind_has_its_own_prior() -> None:
    kinds = [(k, st) for k, (spec, _) in CLIENT_KINDS.items() for st in spec.statistics]
    kinds += [(k, st) for k, spec in SERIES_KINDS.items() for st in spec.statistics]
    kinds.append(("never_booted", "count"))
    missing = [k for k in kinds if k not in PRIORS]
    assert missing == []
    assert all(p.why for p in PRIORS.values())
    assert prior("a_new_metric", "peak") is FALLBACK["peak"]


def test_a_mean_over_machines_averages_their_jitter_out() -> None:
    boot = prior("boot_time_s", "mean")
    assert boot.sd(35.0, 1) > 2 * boot.sd(35.0, 100)
    assert boot.sd(35.0, 100) >= boot.rel * 35.0  # the run-wide part stays
    peak = prior("cpu_pct", "peak")
    assert peak.sd(50.0, 1) == peak.sd(50.0, 100)


def test_pooling_the_prior_with_measured_spread() -> None:
    alone = estimate(2.0, [[10.0]])
    assert (alone.sd, alone.df, alone.source) == (2.0, PRIOR_DF, "prior")
    # runs that agree closely pull the estimate down; the prior keeps it from reaching zero
    tight = estimate(2.0, [[10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.0, 10.02]], "runs")
    assert tight.data_df == 8 and tight.df == PRIOR_DF + 8 and 0.5 < tight.sd < 2.0
    # two stretches at different levels: the spread is measured within each, the step is not noise
    steps = estimate(0.1, [[1.0, 1.1, 0.9], [5.0, 5.1, 4.9]], "history")
    assert steps.sd < 0.2
    assert math.isclose(steps.sd, math.sqrt((PRIOR_DF * 0.01 + 0.02 + 0.02) / (PRIOR_DF + 4)))
