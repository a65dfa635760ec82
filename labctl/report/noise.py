"""Run-to-run noise of a key figure: how far apart two runs of the same configuration may land.

The comparison (:mod:`labctl.report.compare`) calls a change a regression only when it is outside
the noise, so the noise has to be known even with a single baseline run. It is estimated as a
standard deviation ``sd`` with ``df`` degrees of freedom, combining two sources (the conjugate
update of a normal variance, Gelman et al., *Bayesian Data Analysis*, 3rd ed., §3.3):

- a **prior** per metric kind and statistic (:data:`PRIORS`): ``sd0 = hypot(rel * level, abs)``,
  worth :data:`PRIOR_DF` runs of evidence. It is what one baseline run is compared with, and why
  each value is what it is is written beside it;
- the **data**: the spread of the figure over repeated runs, pooled within groups that share one
  level (the baseline runs; or the history's segments between change points, see
  :mod:`labctl.report.edivisive`): ``ss = sum((x - mean_group)^2)``, ``df_data = sum(n_group - 1)``.

    sd^2 = (PRIOR_DF * sd0^2 + ss) / (PRIOR_DF + df_data),   df = PRIOR_DF + df_data

With a few runs the prior dominates; with a long history the data do. A new run's value then lies
within ``t(1 - alpha, df) * sd * sqrt(1 + 1/n)`` of the mean of ``n`` baseline runs with probability
``1 - alpha`` (a Student-t prediction interval), which is the comparison's tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PRIOR_DF = 8.0  # the priors below count as much as 8 runs' worth of spread: estimates, not measurements


@dataclass(frozen=True)
class Prior:
    """Noise of one figure kind: ``sd0 = hypot(rel * |level|, abs)`` in the figure's unit. For a mean
    over ``n`` machines (``per_machine``), ``abs`` is one machine's jitter and shrinks by sqrt(n):
    the run-wide part (``rel``) does not average out, the per-machine part does."""

    rel: float
    abs: float
    why: str
    per_machine: bool = False

    def sd(self, level: float, n: int = 1) -> float:
        spread = self.abs / math.sqrt(max(n, 1)) if self.per_machine else self.abs
        return math.hypot(self.rel * abs(level), spread)


# (kind, statistic) -> prior. A run's figure moves with the lab's state (caches, arrival order of
# requests, where the samples fall in a short storm) even when nothing changed; these say how much.
PRIORS: dict[tuple[str, str], Prior] = {
    ("boot_time_s", "mean"): Prior(
        0.02, 2.0, "run-wide: the server's cache; per machine: one boot's jitter", True
    ),
    ("boot_time_s", "max"): Prior(0.08, 2.0, "the slowest machine: one client's retries and back-off"),
    ("retries", "mean"): Prior(
        0.15, 1.0, "counts: one client re-sending a request or two more or less", True
    ),
    ("retries", "max"): Prior(0.25, 2.0, "the worst client: an extreme of a count"),
    ("time_to_ready_s", "mean"): Prior(0.10, 5.0, "includes the orchestrator's polling interval"),
    ("copy_s", "mean"): Prior(
        0.05, 3.0, "run-wide: share and disk contention; per machine: its own copy", True
    ),
    ("copy_s", "max"): Prior(0.10, 2.0, "the slowest copier"),
    ("login_s", "mean"): Prior(
        0.05, 3.0, "run-wide: the brokers' and hosts' load; per desktop: its own logon", True
    ),
    ("login_s", "max"): Prior(0.10, 5.0, "the slowest logon"),
    # the response-time index (records.figures.INDEX_FIGURES)
    ("rt_index", "baseline_s"): Prior(0.05, 0.05, "the fastest samples of a run: the lab's idle speed"),
    ("rt_index", "sessions"): Prior(0.05, 10.0, "where a run of samples first stays above the limit"),
    ("rt_index", "saturated"): Prior(0.0, 0.1, "saturated or not is never noise"),
    ("desktops_good", "count"): Prior(0.02, 2.0, "desktops near the good band's edge"),
    ("desktops_rated", "count"): Prior(0.0, 0.1, "the desktops run: a parameter, not a measurement"),
    ("desktops_unmeasured", "count"): Prior(0.0, 0.1, "a desktop that could not be read is never noise"),
    ("never_booted", "count"): Prior(0.0, 0.1, "a machine that does not boot is never noise"),
    # a peak is one sample: in a storm shorter than a few sample intervals it depends on where the
    # samples fall, so it moves by a large share of itself; a mean over the window moves far less
    ("cpu_pct", "peak"): Prior(0.30, 5.0, "one sample of a burst; percent points"),
    ("cpu_pct", "mean"): Prior(0.10, 1.0, "over the window"),
    ("disk_queue_len", "peak"): Prior(0.30, 0.5, "one sample of a burst; queued requests"),
    ("disk_queue_len", "mean"): Prior(0.15, 0.05, "over the window"),
    ("disk_latency_ms", "peak"): Prior(0.30, 1.0, "one sample of a burst"),
    ("disk_latency_ms", "mean"): Prior(0.15, 0.2, "over the window"),
    ("disk_busy_pct", "peak"): Prior(0.30, 5.0, "one sample of a burst"),
    ("disk_busy_pct", "mean"): Prior(0.10, 1.0, "over the window"),
    ("latency_ms", "peak"): Prior(0.30, 1.0, "the array's own 20 s or 60 s averages"),
    ("latency_ms", "mean"): Prior(0.15, 0.2, "over the window"),
    ("cpu.usage.average", "peak"): Prior(0.30, 5.0, "vCenter's 20 s averages of a burst"),
    ("cpu.usage.average", "mean"): Prior(0.10, 2.0, "over the window"),
    ("mem.vmmemctl.average", "peak"): Prior(0.20, 1.0, "ballooned memory"),
    ("memory_used_mb", "peak"): Prior(0.05, 20.0, "cache fill of the streaming server"),
    ("memory_committed_pct", "peak"): Prior(0.05, 1.0, "commit charge"),
    ("nic_sent_util_pct", "peak"): Prior(0.30, 2.0, "one sample of a burst"),
    ("nic_sent_util_pct", "mean"): Prior(0.15, 0.5, "over the window"),
    ("nic_received_util_pct", "peak"): Prior(0.30, 1.0, "one sample of a burst"),
    ("disk_iops", "peak"): Prior(0.30, 10.0, "one sample of a burst"),
    ("disk_iops", "mean"): Prior(0.15, 2.0, "over the window"),
    ("iops", "peak"): Prior(0.30, 10.0, "one sample of a burst"),
    ("iops", "mean"): Prior(0.15, 2.0, "over the window"),
    ("throughput_mb_s", "peak"): Prior(0.30, 1.0, "one sample of a burst"),
    ("power_w", "peak"): Prior(0.10, 10.0, "the BMC's reading"),
    ("power_w", "mean"): Prior(0.05, 5.0, "over the window"),
    ("mem.usage.average", "peak"): Prior(0.10, 2.0, "host memory"),
    ("net.usage.average", "peak"): Prior(0.30, 100.0, "vCenter's 20 s averages of a burst"),
}
# a kind without its own prior (a metric added to the figures later)
FALLBACK = {
    "peak": Prior(0.30, 0.0, "one sample"),
    "max": Prior(0.10, 0.0, "an extreme"),
    "mean": Prior(0.10, 0.0, "a mean"),
    "count": Prior(0.0, 0.1, "a count"),
}


def prior(kind: str, statistic: str) -> Prior:
    return PRIORS.get((kind, statistic)) or FALLBACK.get(statistic) or Prior(0.10, 0.0, "default")


@dataclass(frozen=True)
class Noise:
    """A figure's noise: standard deviation and its degrees of freedom."""

    sd: float
    df: float
    data_df: int  # of that, from measured runs
    source: str  # e.g. "prior", "prior + 3 baseline runs", "prior + history of 12 runs (1 change)"


def estimate(prior_sd: float, groups: Sequence[Sequence[float]], source: str = "") -> Noise:
    """Pool the prior with the spread within ``groups`` (each a set of runs at one level)."""
    ss, df = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            m = math.fsum(g) / len(g)
            ss += math.fsum((x - m) ** 2 for x in g)
            df += len(g) - 1
    var = (PRIOR_DF * prior_sd**2 + ss) / (PRIOR_DF + df)
    return Noise(math.sqrt(var), PRIOR_DF + df, df, source if df else "prior")


# --- Student's t ------------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Press et al.,
    *Numerical Recipes*, 3rd ed., §6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf`, to 1e-9)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-9 * max(1.0, hi):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0
