"""The building blocks: hardware arithmetic, the queueing solution, the cache, the retry tail."""

from __future__ import annotations

import numpy as np
import pytest

from labctl.inventory.model import DiskType, Volume, VolumePurpose
from labctl.inventory.twin_params import TwinParameters
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.cache import ChunkCache
from labctl.sim.twin.solver import (
    Demands,
    adaptive_timeout,
    expected_resends,
    lognormal_tail,
    resends_while_waiting,
    solve,
)

P = TwinParameters()


def volume(**kw) -> Volume:
    base = dict(
        name="v",
        purposes=(VolumePurpose.WRITE_CACHE,),
        raid=10,
        disks=4,
        disk_type=DiskType.SAS,
        rpm=10000,
        capacity_gb=300,
    )
    return Volume.model_validate({**base, **kw})


def test_disk_service_time_from_rpm_and_seek() -> None:
    t = hwm.disk_timing(volume(), P)
    # half a revolution at 10K rpm (3 ms) + a short-stroked 4.5 ms seek
    assert t.positioning_ms == pytest.approx(3.0 + 4.5 * P.short_stroke_factor)
    assert t.io_ms(8) == pytest.approx(t.positioning_ms + 8 * 1024 / (80 * 2**20) * 1e3)
    assert hwm.disk_timing(volume(rpm=15000), P).positioning_ms < t.positioning_ms
    assert hwm.disk_timing(volume(service_time_ms=9.0), P).positioning_ms == 9.0
    assert hwm.disk_timing(volume(disk_type=DiskType.SSD, rpm=None), P).positioning_ms < 0.5


def test_raid_write_penalty_sets_the_write_capacity() -> None:
    r10 = hwm.write_capacity_iops(volume(), P, 8)
    assert r10 == pytest.approx(4 / 2 / (hwm.disk_timing(volume(), P).io_ms(8) / 1e3))
    assert 300 < r10 < 450  # a 4-disk 10K RAID10 takes a few hundred small writes a second
    assert hwm.write_capacity_iops(volume(disks=8), P, 8) == pytest.approx(2 * r10)
    assert hwm.write_capacity_iops(volume(raid=5), P, 8) == pytest.approx(r10 / 2)
    assert hwm.read_capacity_iops(volume(), P, 8) == pytest.approx(2 * r10)


def test_a_saturated_gbe_port_reads_about_98_percent() -> None:
    counted = hwm.nic_counted_bytes_per_s(1.0, P)
    assert 0.97 < counted * 8 / 1e9 < 0.99


def _one_station(n: int, d_s: float, z_s: float) -> Demands:
    a = np.zeros((n, 1))
    return Demands(
        station=np.zeros((n, 1), dtype=np.int64),
        work_r=a + d_s,
        work_w=a + d_s,
        lat_r=a + d_s,
        lat_w=a + d_s,
        visit_r=a + 1,
        visit_w=a + 1,
        fixed_r=np.zeros(n),
        fixed_w=np.zeros(n),
        p_read=np.ones(n),
        think_s=np.full(n, z_s),
        window=1.0,
    )


def _exact_mva(n: int, d_s: float, z_s: float) -> float:
    q = 0.0
    x = 0.0
    for k in range(1, n + 1):
        r = d_s * (1 + q)
        x = k / (z_s + r)
        q = x * r
    return x


@pytest.mark.parametrize("n", [1, 5, 20, 80])
def test_the_solver_agrees_with_exact_mva_on_one_station(n: int) -> None:
    d_s, z_s = 0.001, 0.010
    b, own = np.zeros(1), np.zeros((n, 1))
    for _ in range(100):  # steps at a steady state converge
        sol, b = solve(_one_station(n, d_s, z_s), b, own, np.ones(1), np.zeros(1))
        own = sol.own
    x = float(sol.rate.sum())
    assert x == pytest.approx(_exact_mva(n, d_s, z_s), rel=0.05)
    assert sol.util[0] <= 1.0 + 1e-9
    # Little: requests present = throughput x residence time
    assert sol.customers[0] == pytest.approx(x * (sol.resp_r.mean()), rel=0.02)
    if n == 1:
        assert sol.resp_r[0] == pytest.approx(d_s)  # alone, no queueing


def test_the_cache_is_shared_and_least_recently_used() -> None:
    c = ChunkCache(file_mb=10, chunk_kb=256, capacity_mb=1, trim_s=30)  # room for 4 chunks
    assert c.touch(np.array([0, 1, 2]), now=0) == 3
    assert c.touch(np.array([0, 1, 2]), now=1) == 0  # the next reader hits
    c.touch(np.array([0]), now=2)
    assert c.touch(np.array([3, 4]), now=3) == 2
    assert c.hit(np.array([0, 1, 2, 3, 4])).tolist() == [True, False, True, True, True]  # 1 was oldest
    assert c.working_set_mb(now=3) == pytest.approx(1.0)
    assert c.working_set_mb(now=100) == 0.0 and c.resident_mb() == pytest.approx(1.0)


def test_the_retry_tail_follows_the_response_time() -> None:
    means = np.array([0.001, 0.02, 0.05, 0.1, 0.2, 0.5])
    p = lognormal_tail(means, 0.2, 1.0)
    assert np.all(np.diff(p) > 0) and p[0] < 1e-6 and p[-1] > 0.5
    assert lognormal_tail(np.array([0.05]), 0.2, 2.0)[0] > lognormal_tail(np.array([0.05]), 0.2, 0.5)[0]
    # a request slower than 2 timeouts is re-sent twice
    assert expected_resends(np.array([1.0]), 0.2, 0.1)[0] == pytest.approx(4.0, abs=0.05)


def test_a_doubling_timer_re_sends_a_slow_request_fewer_times() -> None:
    slow = np.array([1.0])  # a response of ~1 s against a 200 ms timer
    fixed = expected_resends(slow, 0.2, 0.05)[0]
    doubling = expected_resends(slow, 0.2, 0.05, backoff=2.0)[0]
    assert fixed == pytest.approx(4.0, abs=0.05)  # re-sent at 0.2, 0.4, 0.6, 0.8 s
    assert doubling == pytest.approx(2.0, abs=0.05)  # at 0.2 and 0.6 s (then 1.4 s)


def test_a_client_facing_a_dead_server_re_sends_at_every_timeout() -> None:
    assert resends_while_waiting(np.array([1.0]), 0.2)[0] == 5
    assert resends_while_waiting(np.array([1.0]), 0.2, backoff=2.0)[0] == 2  # 0.2, 0.6
    # doubling stops at the cap: 0.2, 0.6, 1.4, then every 1 s
    assert resends_while_waiting(np.array([4.45]), 0.2, backoff=2.0, max_timeout_s=1.0)[0] == 6


def test_an_adaptive_timer_stays_at_its_floor_until_responses_approach_it() -> None:
    p_read = np.array([0.5, 0.5])
    rto = adaptive_timeout(np.array([0.005, 0.08]), np.array([0.02, 0.3]), p_read, 0.5, 1.6, 0.2, 4.0, 10.0)
    assert rto[0] == pytest.approx(0.2)  # the storm's tens of ms leave it on the 200 ms floor
    assert rto[1] > 0.5
