"""The 2007 boot storm against the published figures (shared/docs/lab-twin-targets.md).

Every expected number here is written down from the paper; the twin only provides the storm.
Measurements are computed in the test from the sampled series (1-s samples, like perfmon).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from labctl.inventory.model import Lab
from labctl.sim.twin.storm import StormResult

PAPER_LOCAL_BOOT_S = 27.0
GBE_PAYLOAD_BYTES_S = 125e6 * 1458 / 1478  # a 1 GbE client port, headers and frame gaps aside
SERVER = "pvs-01"
WRITE_CACHE = "pvs-01:cache"


def boot(r: StormResult) -> float:
    assert r.booted == r.clients, f"{r.clients - r.booted} of {r.clients} clients did not boot"
    return float(np.mean(r.boot_time_s))


def cpu(r: StormResult) -> np.ndarray:
    return r.cpu_pct[SERVER]


def nic_peak(r: StormResult) -> float:
    return max(float(v.max()) for k, v in r.nic_out_pct.items() if k.startswith(SERVER + "/"))


def queue(r: StormResult) -> np.ndarray:
    return r.disk_queue[WRITE_CACHE]


def test_one_client_boots_in_the_local_baseline_plus_streaming_the_image(lab: Lab, storms) -> None:
    image_mb = sum(ph.read_mb for ph in lab.twin.boot_phases())
    implied = PAPER_LOCAL_BOOT_S + image_mb * 2**20 / GBE_PAYLOAD_BYTES_S
    assert abs(boot(storms[1]) - implied) <= 5.0
    for n in (5, 10):
        assert abs(boot(storms[n]) - implied) <= 5.0


def test_boot_time_grows_about_15_s_from_25_to_100_and_10_s_from_50_to_75(storms) -> None:
    assert abs(boot(storms[100]) - boot(storms[25]) - 15.0) <= 5.0
    assert abs(boot(storms[75]) - boot(storms[50]) - 10.0) <= 5.0
    assert 0.0 <= boot(storms[25]) - boot(storms[1]) <= 5.0  # a slow rise below 25


def test_boot_time_and_retries_rise_with_group_size(storms) -> None:
    boots = [boot(storms[n]) for n in sorted(storms)]
    retries = [float(storms[n].retries.mean()) for n in sorted(storms)]
    assert all(b >= a - 0.5 for a, b in itertools.pairwise(boots)), boots
    assert all(b >= a - 0.5 for a, b in itertools.pairwise(retries)), retries
    assert boots[-1] > boots[0] + 10


def test_retries_about_2_at_50_about_6_at_75_and_100_low_below(storms) -> None:
    for n in (1, 5, 10, 25):
        assert storms[n].retries.mean() <= 2.0
    assert abs(storms[50].retries.mean() - 2.0) <= 2.0
    assert abs(storms[75].retries.mean() - 6.0) <= 2.0
    assert abs(storms[100].retries.mean() - 6.0) <= 2.0


def test_cpu_50_clients_average_60_peak_85_and_100_percent_from_75(storms) -> None:
    r50 = storms[50]
    window = r50.window()
    assert abs(cpu(r50)[window].mean() - 60.0) <= 10.0
    assert abs(cpu(r50).max() - 85.0) <= 10.0
    assert cpu(storms[75]).max() >= 97.0
    assert cpu(storms[100]).max() >= 97.0
    # longer at 100 than at 75
    assert (cpu(storms[100]) >= 97.0).sum() > (cpu(storms[75]) >= 97.0).sum()


def test_nic_over_60_percent_from_50_clients_and_about_98_at_75_and_100(storms) -> None:
    assert nic_peak(storms[50]) > 60.0
    assert nic_peak(storms[75]) >= 93.0
    assert nic_peak(storms[100]) >= 93.0
    assert nic_peak(storms[25]) < 60.0


def test_both_ports_carry_the_same_load(storms) -> None:
    a, b = storms[100].nic_out_pct[f"{SERVER}/0"], storms[100].nic_out_pct[f"{SERVER}/1"]
    assert abs(a.max() - b.max()) < 5.0


@pytest.mark.parametrize("n", [1, 5, 10, 25, 50])
def test_write_cache_queue_stays_at_or_below_10_up_to_50_clients(storms, n: int) -> None:
    assert queue(storms[n]).max() <= 10.0


@pytest.mark.parametrize("n", [75, 100])
def test_write_cache_queue_between_20_and_70_during_the_storm_from_75(storms, n: int) -> None:
    q = queue(storms[n])
    assert 20.0 <= q.max() <= 70.0
    assert (q > 8.0).sum() >= 10  # a sustained bottleneck, not a blip


def test_vdisk_volume_barely_stressed(storms) -> None:
    # reads come from the server's file cache; the RAID1 sees next to nothing
    assert storms[100].disk_queue["pvs-01:system"].max() < 1.0


def test_memory_over_3_gb_free_grows_with_clients_and_falls_after(storms) -> None:
    mins = [float(storms[n].mem_available_mb[SERVER].min()) for n in sorted(storms)]
    assert min(mins) > 3072.0
    assert all(b <= a for a, b in itertools.pairwise(mins))  # more clients, more used
    mem = storms[100].mem_available_mb[SERVER]
    assert mem[-1] > mem.min() + 50.0  # used memory falls after the storm


@pytest.mark.parametrize("n", [25, 50, 75, 100])
def test_back_to_idle_after_the_storm(storms, n: int) -> None:
    r = storms[n]
    last_minute = r.t >= r.t[-1] - 60
    assert cpu(r)[last_minute].mean() < 10.0
    assert queue(r)[last_minute].mean() < 2.0
    assert nic_peak(r) > 0 and max(v[last_minute].mean() for v in r.nic_out_pct.values()) < 5.0


def test_peaks_and_their_duration_rise_with_group_size(storms) -> None:
    sizes = sorted(storms)
    cpu_peaks = [cpu(storms[n]).max() for n in sizes]
    nic_peaks = [nic_peak(storms[n]) for n in sizes]
    q_peaks = [queue(storms[n]).max() for n in sizes]
    for series in (cpu_peaks, nic_peaks, q_peaks):
        assert all(b >= a - 1.0 for a, b in itertools.pairwise(series)), series
    over8 = [(queue(storms[n]) > 8).sum() for n in sizes]
    assert over8[-1] > over8[-2] > 0
