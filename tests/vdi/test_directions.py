"""Directions the VDI twin must get right for configurations no paper measured (physics, not tables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labctl.inventory.vdi import VdiLab
from labctl.sim.twin.vdi.calibration import scale_out
from labctl.sim.twin.vdi.model import VdiModel
from labctl.sim.twin.vdi.scenarios import boot_storm, preboot
from tests.vdi.labs import HDD_15K, SSD, load, vdi_yaml

LINKED = "{kind: linked_clone, image_gb: 40, delta_gb: 3}"


def _vdi(tmp_path: Path, **kw: object) -> VdiLab:
    lab = load(tmp_path, vdi_yaml(**kw))  # type: ignore[arg-type]
    assert lab.vdi is not None
    return lab.vdi


def working(vdi: VdiLab, minutes: float = 30.0, measure_s: float = 600.0) -> dict[str, float]:
    """Every desktop pre-booted and working; figures over the last ``measure_s``."""
    m = VdiModel(vdi, 0.0)
    preboot(m, np.arange(m.n))
    for i in range(m.n):
        m.start_session(i, f"u{i}")
    m.advance_to(minutes * 60 - measure_s)
    v0 = {k: x.copy() for k, x in m.vol.items()}
    hd0 = (m.hd["reads"] + m.hd["writes"]).sum()
    ops0 = m.ops.n
    m.advance_to(minutes * 60)
    d = {k: m.vol[k] - v0[k] for k in v0}
    ios = d["reads"].sum() + d["writes"].sum()
    resp = m.ops.response[ops0 : m.ops.n]
    return {
        "iops": ios / measure_s,
        "latency_ms": (d["rresp"].sum() + d["wresp"].sum()) / ios * 1e3,
        "host_iops_per_desktop": ((m.hd["reads"] + m.hd["writes"]).sum() - hd0) / measure_s / m.n,
        "op_response_s": float(resp.mean()) if resp.size else float("nan"),
        "stretch": float(m.stretch.max()),
        "balloon_mb": float(m.vm_balloon_mb.sum()),
        "consumed_mb": float(m.vm_consumed_mb.sum()),
        "sync": float(m.sync.any()),
    }


def test_more_spindles_give_lower_latency(tmp_path: Path) -> None:
    few = working(
        _vdi(
            tmp_path,
            desktops=64,
            provisioning=LINKED,
            cache_gb=0.25,
            tiers=("{drive: 15k, count: 12, capacity_gb: 600, raid: 10}",),
        )
    )
    many = working(
        _vdi(
            tmp_path,
            desktops=64,
            provisioning=LINKED,
            cache_gb=0.25,
            tiers=("{drive: 15k, count: 48, capacity_gb: 600, raid: 10}",),
        )
    )
    assert many["latency_ms"] < 0.8 * few["latency_ms"]
    assert many["iops"] >= few["iops"]  # closed loop: faster storage, never less work done


def test_an_ssd_tier_makes_a_linked_clone_boot_storm_shorter(tmp_path: Path) -> None:
    kw = {"desktops": 120, "provisioning": LINKED, "cache_gb": 0.25}
    hdd = boot_storm(_vdi(tmp_path, tiers=("{drive: 15k, count: 12, capacity_gb: 600, raid: 10}",), **kw))
    ssd = boot_storm(_vdi(tmp_path, tiers=(SSD, "{drive: 15k, count: 12, capacity_gb: 600, raid: 10}"), **kw))
    assert ssd.marks["all_up"] < hdd.marks["all_up"] - 10  # the guests' image reads come from flash
    assert ssd.max_latency_ms() < hdd.max_latency_ms()


def test_two_arrays_carry_twice_the_load_of_one(tmp_path: Path) -> None:
    # power workers writing to eight nearline drives in RAID 5: the drives, not the desktops, set the pace
    nl = ("{drive: nl, count: 8, capacity_gb: 2000, raid: 5, raid_width: 8}",)
    one_vdi = _vdi(tmp_path, desktops=60, workload="power", tiers=nl, cache_gb=1)
    one = working(one_vdi, minutes=40)
    two = working(scale_out(one_vdi), minutes=40)
    assert one["sync"] == 1.0  # the write cache filled: writes wait for the drives
    assert 1.8 <= two["iops"] / one["iops"] <= 2.2
    assert two["latency_ms"] == pytest.approx(one["latency_ms"], rel=0.3)
    unloaded = working(_vdi(tmp_path, desktops=60, workload="power", tiers=(HDD_15K, SSD)), minutes=40)
    assert unloaded["iops"] > 1.5 * one["iops"]  # the same desktops do more when storage keeps up


def test_pvs_ram_cache_with_overflow_takes_most_io_off_the_host(tmp_path: Path) -> None:
    disk = working(
        _vdi(tmp_path, provisioning="{kind: pvs, pvs_servers: [pvs-01], write_cache: device_disk}")
    )
    ram = working(
        _vdi(
            tmp_path,
            provisioning="{kind: pvs, pvs_servers: [pvs-01], write_cache: device_ram_overflow, ram_cache_mb: 512}",
        )
    )
    assert disk["host_iops_per_desktop"] > 5.0
    assert ram["host_iops_per_desktop"] < disk["host_iops_per_desktop"] / 5
    assert ram["consumed_mb"] > disk["consumed_mb"]  # the cache lives in the guests' RAM


def test_a_busy_host_cpu_slows_the_users_operations(tmp_path: Path) -> None:
    roomy = working(_vdi(tmp_path, desktops=40, hosts=1, host_cores=8), minutes=20)
    tight = working(_vdi(tmp_path, desktops=40, hosts=1, host_cores=1), minutes=20)
    assert roomy["stretch"] == 1.0 and tight["stretch"] > 1.3
    assert tight["op_response_s"] > 1.3 * roomy["op_response_s"]


def test_an_overcommitted_host_balloons_and_stays_within_its_ram(tmp_path: Path) -> None:
    ok = working(_vdi(tmp_path, desktops=40, hosts=1, host_ram_gb=64), minutes=10)
    tight = working(_vdi(tmp_path, desktops=40, hosts=1, host_ram_gb=16), minutes=10)
    assert ok["balloon_mb"] == 0 and tight["balloon_mb"] > 1000
    assert tight["consumed_mb"] <= 16 * 1024 * (1 - 0.06)  # ESXi keeps its free-memory reserve
