"""The copy/reboot matrix: file-copy physics per path, and retries as the streaming software counts them.

No published copy figure is used: the expectations are the hardware's (the bottleneck bound the
twin's own request costs give) and the protocols' (only a client's own streaming requests are
session retries).
"""

from __future__ import annotations

import numpy as np
import pytest

from labctl.inventory.model import Lab
from labctl.sim.ssh.filecopy import POLL_MAX_LAB_S, POLL_MIN_LAB_S, _poll_lab_s
from labctl.sim.twin import FastForwardClock, build_twin
from labctl.sim.twin.copies import CopyCellResult, copy_limits, expected_copy_s, run_copy_cell
from labctl.sim.twin.interface import CopyLocation, PowerAction
from labctl.sim.twin.model import TwinModel
from labctl.sim.twin.storm import warm_caches
from labctl.sim.twin.workload import Phase

CELLS = (
    ("share_to_share", 25, 25),
    ("local_to_local", 25, 25),
    ("share_to_local", 50, 0),
    ("local_to_share", 25, 0),
)


@pytest.fixture(scope="module")
def cells(lab: Lab) -> dict[tuple[str, int, int], CopyCellResult]:
    return {c: run_copy_cell(lab, *c, sample_s=2.0, tail_s=10.0) for c in CELLS}


def _during(r: CopyCellResult, series: np.ndarray) -> np.ndarray:
    """Samples while every copy is still running (the first minute after the start left out)."""
    end = float(np.nanmin(r.copy_s))
    return series[(r.t > 20.0) & (r.t < end - 5.0)]


def test_share_to_share_copiers_count_no_streaming_retries(cells) -> None:
    r = cells[("share_to_share", 25, 25)]
    assert np.isfinite(r.copy_s).all()
    # their SMB requests queue behind the share's disks for minutes: never a streaming retry
    assert r.copier_retries.sum() == 0
    assert np.isfinite(r.boot_s).all()


def test_retries_are_per_client_and_reset_when_it_boots(lab: Lab) -> None:
    model = TwinModel(lab, start_t=0.0)
    warm_caches(model)
    for name in model.topo.client_names:
        model.power(name, PowerAction.ON)
    model.advance_to(300.0)
    assert model.retries.sum() > 0  # a 100-client storm leaves some
    busy = int(np.argmax(model.retries))
    other = (busy + 1) % model.n
    before_other = int(model.retries[other])
    model.power(model.topo.client_names[busy], PowerAction.RESTART)
    model.advance_to(400.0)
    assert model.phase[busy] == Phase.IDLE and model.boot_count[busy] == 2
    assert model.retries[busy] == 0  # a new session on a quiet server
    assert model.retries[other] == before_other  # nobody else's counter moved


def test_each_path_takes_about_its_bottleneck_time(lab: Lab, cells) -> None:
    for (path, n, rebooters), r in cells.items():
        if rebooters:
            continue
        bound, resource = expected_copy_s(copy_limits(lab, path, n))
        median = float(np.median(r.copy_s))
        assert 0.95 * bound <= median <= 1.5 * bound, (path, n, resource, bound, median)


def test_the_limiting_resource_follows_the_destination(lab: Lab) -> None:
    # writes to a share land on its 2-disk RAID1; 50 local writes saturate the 4-disk write cache
    assert expected_copy_s(copy_limits(lab, "share_to_share", 50))[1] == "infra-01:system volume"
    assert expected_copy_s(copy_limits(lab, "local_to_share", 25))[1] == "infra-01:system volume"
    assert expected_copy_s(copy_limits(lab, "share_to_local", 50))[1] == "pvs-01:cache volume"
    alone, what = expected_copy_s(copy_limits(lab, "local_to_local", 1))
    assert what == "one client's request loop" and alone < 60


def test_sequential_copy_writes_drain_far_faster_than_random_boot_writes(lab: Lab) -> None:
    wc = next(v for v in copy_limits(lab, "share_to_local", 25) if v.resource == "pvs-01:cache volume")
    # the storm's 8 KB random writes: 374 writes/s at queue depth 1, ~3 MB/s; a copy's runs go
    # at near the two mirror pairs' media rate
    assert wc.capacity_mb_s > 100.0


def test_copiers_behind_a_crowded_uplink_finish_later(cells) -> None:
    r = cells[("local_to_local", 25, 25)]
    # clients 1-23 share pc5324-a's 1 GbE uplink, 24-25 sit behind pc5324-b
    crowded, quiet = r.copy_s[:23], r.copy_s[23:]
    assert quiet.max() < 0.85 * crowded.min()


def test_write_cache_queue_is_not_a_plateau_at_the_number_of_copiers(cells) -> None:
    # 25 copies behind a crowded uplink do not saturate the write cache: the queue follows the
    # rebooters' write burst and the copies' pace, well below one waiting write per copier
    r = cells[("local_to_local", 25, 25)]
    q = _during(r, r.disk_queue["pvs-01:cache"])
    assert q.size and float(np.median(q)) < 25 / 2
    assert q.std() > 0.25 * q.mean()


def test_share_writes_are_buffered_then_flushed_by_the_lazy_writer(lab: Lab, cells) -> None:
    r = cells[("local_to_share", 25, 0)]
    q = _during(r, r.disk_queue["infra-01:system"])
    assert q.max() <= lab.twin.lazy_writer_ios + 1.0  # throttled writers wait in memory
    mem = r.mem_available_mb["infra-01"]
    assert mem.min() < mem[-1] - 500.0  # dirty data held, then written out
    # the streaming server only reads the source: its write cache stays quiet
    assert r.disk_queue["pvs-01:cache"].max() < 1.0


def test_copy_time_grows_with_copiers_sharing_a_resource(lab: Lab, cells) -> None:
    alone = run_copy_cell(lab, "share_to_local", 1, 0, sample_s=5.0, tail_s=0.0)
    assert float(alone.copy_s[0]) * 3 < float(np.median(cells[("share_to_local", 50, 0)].copy_s))


def test_a_copy_to_a_share_fails_when_its_server_goes_down(lab: Lab) -> None:
    clock = FastForwardClock(scale=60.0)
    twin = build_twin(lab, clock)
    c = lab.clients[0].name
    twin.power(c, PowerAction.ON)
    clock.advance(120.0)
    job = twin.start_copy(c, CopyLocation.LOCAL, CopyLocation.SHARE, 512 * 1024 * 1024)
    clock.advance(2.0)
    assert twin.copy_status(job.job_id).eta_lab_s is not None
    twin.power("infra-01", PowerAction.FORCE_OFF)
    clock.advance(2.0)
    status = twin.copy_status(job.job_id)
    assert status.failed and status.finished_lab_s is None
    # the client still streams from pvs-01: no stall, no retries from the share going away
    assert twin.is_os_up(c)
    (dev,) = [d for d in twin.device_status("pvs-01") if d.name == c]
    assert dev.retries == 0


def test_the_simulated_copy_sleeps_until_the_estimated_end() -> None:
    clock = FastForwardClock(scale=60.0)
    assert _poll_lab_s(300.0, False, clock) == pytest.approx(POLL_MAX_LAB_S)
    assert _poll_lab_s(0.01, False, clock) >= POLL_MIN_LAB_S - 1e-9
    assert _poll_lab_s(8.0, False, clock) == pytest.approx(8.0)
    assert _poll_lab_s(300.0, True, clock) <= 1.5  # the drop fault needs it awake early (1 lab s)
