"""The queueing solution for one time step: how fast each client's requests go round.

Each active client is a closed loop: it works locally for ``Z`` seconds, sends a request (a read
with probability ``p_read``, else a write), waits for the answer, and so on, with up to ``k``
requests in flight. A request visits stations (CPU, NIC ports, volumes, ...); at each it waits
behind the work already queued there and then is served.

The solution is Schweitzer's approximate mean-value analysis, warm-started from the previous step
(queues change little in 20 ms, so one or two iterations per step keep it converged):

    wait[s]     = (backlog[s] - own work of this client at s) / parallel servers[s]
    R_read      = fixed delay + sum over stations of visits * wait + in-service time
    throughput  = 1 / (Z + R / k)                      (Little's law for one client)
    backlog[s]  = sum over clients of (customers at s) * (work each brings)

Nothing here knows about group sizes: queues, and so response times and retries, follow from
how much work the clients offer and how fast the stations are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Demands:
    """Per active client (rows) and role (columns): what one request costs where."""

    station: np.ndarray  # (A, roles) station index
    work_r: np.ndarray  # (A, roles) work a read brings to the station, seconds of one server
    work_w: np.ndarray
    lat_r: np.ndarray  # (A, roles) in-service time of a read there (visit-weighted), s
    lat_w: np.ndarray
    visit_r: np.ndarray  # (A, roles) expected visits per read
    visit_w: np.ndarray
    fixed_r: np.ndarray  # (A,) no-queue delays outside stations (wire latency, slower link), s
    fixed_w: np.ndarray
    p_read: np.ndarray  # (A,)
    think_s: np.ndarray  # (A,) local work per request, s
    window: np.ndarray | float  # (A,) requests a row keeps in flight (1: the streaming protocol)
    # (A, roles) disk reads per read request that nobody waits for (read-ahead): the station is busy
    # with them and counts them, the request's response does not include them
    async_io_r: np.ndarray | None = None


@dataclass
class Solution:
    rate: np.ndarray  # (A,) requests/s
    resp_r: np.ndarray  # (A,) mean response time of a read, s
    resp_w: np.ndarray
    util: np.ndarray  # (S,) busy fraction of each station (of its parallel servers)
    customers: np.ndarray  # (S,) requests present (queued + in service): Windows' queue length
    own: np.ndarray  # (A, roles) each client's work backlog at its stations (warm start)
    reads_at: np.ndarray  # (S,) read visits per second at each station
    writes_at: np.ndarray  # (S,) write visits per second


def solve(
    d: Demands,
    backlog: np.ndarray,
    own: np.ndarray,
    parallel: np.ndarray,
    open_backlog: np.ndarray,
    iterations: int = 3,
    count: np.ndarray | None = None,
) -> tuple[Solution, np.ndarray]:
    """One step of the fixed point. Returns the solution and the new station backlogs.

    ``count`` (optional) says how many identical clients each row stands for (the VDI twin solves
    one row per class of identical desktops); station loads are summed with it.
    """
    n_st = parallel.size
    st = d.station
    flat = st.ravel()
    p_r = d.p_read[:, None]
    p_w = 1.0 - p_r
    # work per visit (a customer at a station brings this much work)
    per_r = np.divide(d.work_r, d.visit_r, out=np.zeros_like(d.work_r), where=d.visit_r > 0)
    per_w = np.divide(d.work_w, d.visit_w, out=np.zeros_like(d.work_w), where=d.visit_w > 0)
    # the read/write mix is fixed within a step: fold it once
    #   residence = wait * V + L          (mixed over request kinds)
    #   own work  = rate * (wait * VW + LW)
    vis = p_r * d.visit_r + p_w * d.visit_w
    lat = p_r * d.lat_r + p_w * d.lat_w
    vis_work = p_r * d.visit_r * per_r + p_w * d.visit_w * per_w
    lat_work = p_r * d.lat_r * per_r + p_w * d.lat_w * per_w
    fixed = d.p_read * d.fixed_r + (1.0 - d.p_read) * d.fixed_w
    inv_par = (1.0 / parallel)[st]
    b = backlog
    k = np.ones(st.shape[0]) if count is None else count
    kc = k[:, None]
    rate = np.zeros(st.shape[0])
    wait = np.zeros(st.shape)
    for _ in range(iterations):
        wait = np.maximum(b[st] - own, 0.0) * inv_par
        resp = fixed + (wait * vis + lat).sum(axis=1)
        rate = 1.0 / (d.think_s + resp / d.window)
        own_new = rate[:, None] * (wait * vis_work + lat_work)
        b_new = np.bincount(flat, weights=(own_new * kc).ravel(), minlength=n_st) + open_backlog
        b = 0.5 * (b + b_new)
        own = 0.5 * (own + own_new)

    # Throughput can't exceed what a station serves: where the approximation overshoots, scale the
    # clients that pass through it (keeps CPU <= 100% and NICs <= line rate exactly).
    work = p_r * d.work_r + p_w * d.work_w
    util = np.bincount(flat, weights=(rate[:, None] * kc * work).ravel(), minlength=n_st) / parallel
    if util.max() > 1.0:
        over = np.maximum(util, 1.0)
        factor = np.where(work > 0, over[st], 1.0).max(axis=1)
        rate = rate / factor
        util = np.bincount(flat, weights=(rate[:, None] * kc * work).ravel(), minlength=n_st) / parallel
    res_r = d.visit_r * wait + d.lat_r
    res_w = d.visit_w * wait + d.lat_w
    r_read = d.fixed_r + res_r.sum(axis=1)
    r_write = d.fixed_w + res_w.sum(axis=1)
    rc = rate[:, None] * kc
    present = wait * vis + lat
    io_r = d.visit_r
    if d.async_io_r is not None:
        # work nobody waits for (read-ahead) is present at the station while it is served
        present = present + np.where(d.visit_r > 0, 0.0, p_r * d.work_r)
        io_r = d.visit_r + d.async_io_r
    customers = np.bincount(flat, weights=(rc * present).ravel(), minlength=n_st)
    reads_at = np.bincount(flat, weights=(rc * p_r * io_r).ravel(), minlength=n_st)
    writes_at = np.bincount(flat, weights=(rc * p_w * d.visit_w).ravel(), minlength=n_st)
    sol = Solution(rate, r_read, r_write, util, customers, own, reads_at, writes_at)
    return sol, b


def lognormal_tail(
    mean_s: np.ndarray, threshold_s: np.ndarray | float, sigma: np.ndarray | float
) -> np.ndarray:
    """P(response > threshold) for a lognormal response time with this mean and log-spread.

    Response times are right-skewed: most requests take about the queueing mean, a few much
    longer. ``sigma`` is the standard deviation of ln(response time); the median is
    ``mean * exp(-sigma^2 / 2)``.
    """
    mean = np.maximum(mean_s, 1e-9)
    z = (np.log(threshold_s / mean) + 0.5 * sigma * sigma) / sigma
    return 0.5 * _erfc(z / np.sqrt(2.0))


def _erf(x: np.ndarray) -> np.ndarray:
    return 1.0 - _erfc(x)


def _erfc(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 on |x|, reflected for negative x (|error| < 1.5e-7)
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = poly * np.exp(-ax * ax)
    return np.where(x >= 0, y, 2.0 - y)


def expected_resends(
    mean_s: np.ndarray,
    timeout_s: np.ndarray | float,
    sigma: np.ndarray | float,
    max_resends: int = 4,
    backoff: float = 1.0,
    max_timeout_s: float = np.inf,
) -> np.ndarray:
    """Re-sends one request causes: one per timeout it outlives.

    The first re-send goes out after ``timeout_s``; each later one waits ``backoff`` times longer
    than the one before (at most ``max_timeout_s``), so a request is re-sent for the j-th time
    when its response takes longer than T (1 + b + ... + b^(j-1)): with b = 1,
    P(R > T) + P(R > 2T) + ...; with the doubling of a retransmission timer (b = 2),
    P(R > T) + P(R > 3T) + P(R > 7T) + ...
    """
    mean_s = np.asarray(mean_s, dtype=float)
    total = np.zeros_like(mean_s)
    # a response whose mean is a small fraction of the timeout practically never outlives it
    live = np.flatnonzero(mean_s > np.asarray(timeout_s) / 100.0)
    if live.size == 0:
        return total
    m = mean_s[live]
    sig: np.ndarray | float = sigma if isinstance(sigma, float) else np.asarray(sigma, dtype=float)[live]
    step = np.full(live.size, timeout_s) if np.isscalar(timeout_s) else np.asarray(timeout_s)[live]
    due = np.zeros_like(m)
    acc = np.zeros_like(m)
    for _ in range(max_resends):
        due += step
        tail = lognormal_tail(m, due, sig)
        acc += tail
        if tail.max() < 1e-6:
            break
        step = np.minimum(step * backoff, max_timeout_s)
    total[live] = acc
    return total


def resends_while_waiting(
    wait_s: np.ndarray, timeout_s: float, backoff: float = 1.0, max_timeout_s: float = np.inf
) -> np.ndarray:
    """Re-sends a client sends while a request goes unanswered for ``wait_s`` (a server down).

    Timeouts T, bT, b^2 T, ... up to ``max_timeout_s``, then every ``max_timeout_s``.
    """
    wait = np.maximum(np.asarray(wait_s, dtype=float), 0.0)
    if backoff <= 1.0 or timeout_s >= max_timeout_s:
        return np.floor(wait / min(timeout_s, max_timeout_s))
    geo = np.floor(np.log(wait * (backoff - 1.0) / timeout_s + 1.0) / np.log(backoff))
    if not np.isfinite(max_timeout_s):
        return geo
    # geometric part: k timeouts take T (b^k - 1) / (b - 1) until the interval reaches the cap
    k_cap = max(0.0, np.ceil(np.log(max_timeout_s / timeout_s) / np.log(backoff)))
    t_cap = timeout_s * (backoff**k_cap - 1.0) / (backoff - 1.0)
    linear = k_cap + np.floor((wait - t_cap) / max_timeout_s)
    return np.where(wait < t_cap, geo, linear)


def adaptive_timeout(
    mean_r: np.ndarray,
    mean_w: np.ndarray,
    p_read: np.ndarray,
    sigma_r: np.ndarray | float,
    sigma_w: np.ndarray | float,
    floor_s: float,
    var_factor: float,
    max_s: float,
) -> np.ndarray:
    """A client's retransmission timeout from its response times, as RFC 2988 estimates it.

    RTO = SRTT + K x RTTVAR: SRTT converges to the mean response of the client's requests, RTTVAR
    to their mean absolute deviation from it. A lognormal response of mean m and log-spread s
    deviates from its mean by 2 m erf(s / (2 sqrt 2)) on average; a read/write mixture adds the
    distance of each kind's mean from the overall one. Bounded to [floor_s, max_s].
    """
    p_w = 1.0 - p_read
    srtt = p_read * mean_r + p_w * mean_w
    mad_r = 2.0 * mean_r * _erf(np.asarray(sigma_r, dtype=float) / (2.0 * math.sqrt(2.0)))
    mad_w = 2.0 * mean_w * _erf(np.asarray(sigma_w, dtype=float) / (2.0 * math.sqrt(2.0)))
    rttvar = p_read * (np.abs(mean_r - srtt) + mad_r) + p_w * (np.abs(mean_w - srtt) + mad_w)
    return np.clip(srtt + var_factor * rttvar, floor_s, max_s)
