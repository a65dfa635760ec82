"""Configurations no paper measured: the twin must move in the direction physics says.

Each test changes the hardware in the Lab model (or the client count) and compares with the 2007
lab; the expected *direction* is the assertion, never a number taken from the model.
"""

from __future__ import annotations

import numpy as np

from labctl.inventory.model import DiskType, Lab, Nics
from labctl.sim.twin.interface import PowerAction
from labctl.sim.twin.model import TwinModel
from labctl.sim.twin.storm import StormResult, run_storm
from tests.twin.conftest import with_server_hw, with_volume

WC = "pvs-01:cache"


def nic_peak(r: StormResult) -> float:
    return max(float(v.max()) for k, v in r.nic_out_pct.items() if k.startswith("pvs-01/"))


def cpu_saturated_s(r: StormResult) -> float:
    return float((r.cpu_pct["pvs-01"] >= 97.0).sum())


def test_twice_the_spindles_lowers_the_queue_and_the_retries_at_100(lab: Lab, storms) -> None:
    base = storms[100]
    eight = run_storm(with_volume(lab, "pvs-01", "cache", disks=8), 100)
    assert eight.disk_queue[WC].max() < base.disk_queue[WC].max()
    assert eight.retries.mean() < base.retries.mean()
    assert (eight.disk_queue[WC] > 8).sum() <= (base.disk_queue[WC] > 8).sum()


def test_ssd_write_cache_removes_the_queue(lab: Lab, storms) -> None:
    ssd = run_storm(with_volume(lab, "pvs-01", "cache", disk_type=DiskType.SSD, rpm=None), 100)
    assert ssd.disk_queue[WC].max() < 2.0 < storms[100].disk_queue[WC].max()
    assert ssd.retries.mean() < storms[100].retries.mean()


def test_one_nic_saturates_at_a_smaller_group(lab: Lab, storms) -> None:
    one = with_server_hw(lab, "pvs-01", nics=Nics(count=1, speed_gbps=1))
    one_50 = run_storm(one, 50)
    # two ports at 50 clients are not saturated; one port at 50 is, as the paper predicted
    assert nic_peak(storms[50]) < 90.0 <= nic_peak(one_50)
    assert one_50.mean_boot_s() > storms[50].mean_boot_s()


def test_10_gbe_removes_the_nic_limit_and_the_cpu_becomes_the_bottleneck(lab: Lab, storms) -> None:
    ten = run_storm(with_server_hw(lab, "pvs-01", nics=Nics(count=2, speed_gbps=10)), 100)
    assert nic_peak(ten) < 50.0  # far from the ports' limit
    assert cpu_saturated_s(ten) > cpu_saturated_s(storms[100]) + 5  # the CPU now paces the storm
    # no longer NIC-bound, but the CPU caps the gain: faster, not free
    assert ten.mean_boot_s() <= storms[100].mean_boot_s()
    assert ten.mean_boot_s() > storms[1].mean_boot_s()


def test_200_clients_take_longer_than_100(lab: Lab, storms) -> None:
    r200 = run_storm(lab, 200)
    assert r200.booted == 200
    assert r200.mean_boot_s() > storms[100].mean_boot_s() + 10
    assert r200.retries.mean() > storms[100].retries.mean()


def _vdisk_reads_in_second_storm(lab: Lab, clients: int = 20) -> tuple[float, float]:
    """vDisk volume reads during a first cold boot and during a reboot of the same clients."""
    m = TwinModel(lab)
    vd = next(v.station for v in m.topo.volumes if v.server == "pvs-01" and v.volume.name == "system")
    names = m.topo.client_names[:clients]
    for name in names:
        m.power(name, PowerAction.ON)
    m.advance_to(200.0)
    first = float(m.st_reads[vd])
    for name in names:
        m.power(name, PowerAction.RESTART)
    m.advance_to(400.0)
    assert int(m.boot_count[:clients].min()) == 2
    return first, float(m.st_reads[vd]) - first


def test_a_larger_ram_cache_lowers_vdisk_reads_after_the_first_boots(lab: Lab) -> None:
    small = with_server_hw(lab, "pvs-01", fs_cache_mb=32)  # smaller than the boot image
    first_big, again_big = _vdisk_reads_in_second_storm(lab)
    first_small, again_small = _vdisk_reads_in_second_storm(small)
    assert first_big > 0 and first_small > 0  # a cold cache reads the image from the RAID1
    assert again_big < 0.05 * first_big  # the 960 MB cache holds it: reboots come from RAM
    assert again_small > 0.5 * first_small  # 32 MB does not: the reboot reads it again
    assert again_small > again_big


def test_faster_disks_beat_slower_ones(lab: Lab, storms) -> None:
    slow = run_storm(with_volume(lab, "pvs-01", "cache", rpm=7200), 100)
    fast = run_storm(with_volume(lab, "pvs-01", "cache", rpm=15000), 100)
    q = [r.disk_queue[WC].max() for r in (slow, storms[100], fast)]
    assert q[0] > q[1] > q[2]


def test_ha_spreads_clients_and_moves_the_storage_load_to_the_nas(ha_lab: Lab) -> None:
    r = run_storm(ha_lab, 100)
    assert r.booted == 100
    # both streaming servers carry load; neither volume of theirs holds write caches any more
    for server in ("pvs-01", "pvs-02"):
        assert max(v.max() for k, v in r.nic_out_pct.items() if k.startswith(server + "/")) > 20.0
    assert r.disk_writes["nas-01:data"] > 0
    assert r.disk_writes.get("pvs-01:cache", 0.0) == 0.0
    assert np.isfinite(r.boot_time_s).all()
