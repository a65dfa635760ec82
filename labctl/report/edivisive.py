"""E-divisive means: change points in a figure's history (Matteson & James, "A Nonparametric
Approach for Multiple Change Point Analysis of Multivariate Data", JASA 109 (2014) 334-345).

Apache Otava (formerly Hunter, Fleming et al., ICPE 2023) runs the same method over performance
test histories; its PyPI package pins numpy 2.2 and pulls BigQuery, Slack and PostgreSQL clients,
and MongoDB's ``signal-processing-algorithms`` needs numpy < 2, so neither installs beside
labctl's numpy: this is the method itself, small.

For a split of a stretch ``Z`` into ``X = Z[s:tau]`` (n values) and ``Y = Z[tau:kappa]`` (m values),
with ``|a - b|^alpha`` distances (``alpha`` in (0, 2); 1 here), the empirical energy divergence

    E(X, Y) = 2/(n m) sum|x - y|^a  -  sum_{i<k}|x_i - x_k|^a / C(n,2)  -  sum_{j<k}|y_j - y_k|^a / C(m,2)

grows when the two sides come from different distributions (any change: level or spread). The
scaled ``Q(X, Y) = n m / (n + m) * E`` is maximised over ``tau`` and ``kappa`` within every current
segment; the best split is tested by permutation: the values are shuffled within each current
segment (the segments found so far stay), the maximum is recomputed, and the split is a change
point when ``p = (1 + #{Q_perm >= Q}) / (1 + R) <= alpha_cp``. Found points split their segment and
the search repeats until a split is not significant. Permutations stop early once ``p`` can no
longer reach ``alpha_cp`` (Besag & Clifford, Biometrika 78 (1991) 301-304).

Used by the comparison to find the stretches of a history that share one level, so that the
history's spread can measure the noise (a step in the history would otherwise inflate it), and
to report where a figure's level moved.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA_CP = 0.05  # significance of a change point
PERMUTATIONS = 199  # R: p-values in steps of 1/200
MIN_SIZE = 3  # a level has to hold for this many runs to be a segment (a single outlier is not one)
EXPONENT = 1.0  # alpha of the distances: 1 detects changes of any moment the series has


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first index of the new segment
    q: float  # the statistic at the split
    p_value: float


def _best_split(z: np.ndarray, start: int, end: int, min_size: int) -> tuple[float, int]:
    """The largest Q over splits of ``z[start:end]`` and its tau (absolute); (-inf, -1) if none fits."""
    seg = z[start:end]
    length = len(seg)
    if length < 2 * min_size:
        return -np.inf, -1
    d = np.abs(seg[:, None] - seg[None, :]) ** EXPONENT
    p = np.zeros((length + 1, length + 1))
    p[1:, 1:] = d.cumsum(0).cumsum(1)
    t = np.arange(min_size, length - min_size + 1)[:, None]  # tau - start
    k = np.arange(2 * min_size, length + 1)[None, :]  # kappa - start
    valid = k - t >= min_size
    t_b, k_b = np.broadcast_arrays(t, k)
    t_i, k_i = np.where(valid, t_b, min_size), np.where(valid, k_b, 2 * min_size)
    between = p[t_i, k_i] - p[0, k_i] - p[t_i, t_i] + p[0, t_i]
    within_x = p[t_i, t_i] / 2.0
    within_y = (p[k_i, k_i] - p[t_i, k_i] - p[k_i, t_i] + p[t_i, t_i]) / 2.0
    n = t_i.astype(float)
    m = (k_i - t_i).astype(float)
    e = 2.0 * between / (n * m) - within_x / (n * (n - 1) / 2.0) - within_y / (m * (m - 1) / 2.0)
    q = np.where(valid, n * m / (n + m) * e, -np.inf)
    i = int(np.argmax(q))
    best_t, _ = np.unravel_index(i, q.shape)
    return float(q.flat[i]), int(t[best_t, 0]) + start


def _bounds(n: int, points: Sequence[int]) -> list[tuple[int, int]]:
    edges = [0, *sorted(points), n]
    return list(itertools.pairwise(edges))


def _max_q(z: np.ndarray, points: Sequence[int], min_size: int) -> tuple[float, int]:
    best = (-np.inf, -1)
    for s, e in _bounds(len(z), points):
        cand = _best_split(z, s, e, min_size)
        if cand[0] > best[0]:
            best = cand
    return best


def e_divisive(
    values: Sequence[float],
    *,
    alpha_cp: float = ALPHA_CP,
    permutations: int = PERMUTATIONS,
    min_size: int = MIN_SIZE,
    seed: int = 0,
) -> list[ChangePoint]:
    """The significant change points of ``values`` (in time order), by index, in index order.
    Deterministic for a given ``seed``."""
    z = np.asarray(values, dtype=float)
    if len(z) < 2 * min_size or not np.all(np.isfinite(z)):
        return []
    rng = np.random.default_rng(seed)
    found: list[ChangePoint] = []
    # at most (1 + #{perm >= q}) / (1 + R) <= alpha: more exceedances than this and it is not significant
    allowed = int(np.floor(alpha_cp * (permutations + 1))) - 1
    while True:
        points = [c.index for c in found]
        q, tau = _max_q(z, points, min_size)
        if tau < 0 or not q > 0:
            break
        exceed = 0
        for _ in range(permutations):
            shuffled = z.copy()
            for s, e in _bounds(len(z), points):
                rng.shuffle(shuffled[s:e])
            if _max_q(shuffled, points, min_size)[0] >= q:
                exceed += 1
                if exceed > allowed:
                    break
        if exceed > allowed:
            break
        found.append(ChangePoint(tau, q, (1 + exceed) / (1 + permutations)))
        found.sort(key=lambda c: c.index)
    return found


def segments(n: int, points: Sequence[ChangePoint]) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` of the stretches between change points."""
    return _bounds(n, [c.index for c in points])
