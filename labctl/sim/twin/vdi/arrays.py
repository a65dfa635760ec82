"""From array hardware to queueing figures: drive service times, RAID penalties, caches, data placement.

Pure functions of the inventory (:class:`~labctl.inventory.vdi.ArrayHardware`) and the VDI twin
parameters, so a reader can check every number the array stations run on
(``labctl sim calibrate`` prints them for the lab's arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

from labctl.inventory.vdi import ArrayHardware, ControllerMode, DriveClass, Tier
from labctl.inventory.vdi_params import VdiTwinParameters

KB = 1024.0
MB = 1024.0 * 1024.0

# A host write costs this many drive I/Os: mirrors write both halves; parity RAID reads old data
# and parity and writes both back.
RAID_WRITE_PENALTY: dict[int, int] = {1: 2, 10: 2, 5: 4, 50: 4, 6: 6, 60: 6}
# Array kinds whose pools write new data to the fastest tier whatever the data's placement
# (Compellent Data Progression: writes land on tier 1 RAID 10, pages move down later).
WRITES_TO_FASTEST_TIER = frozenset({"sc"})


@dataclass(frozen=True)
class TierTiming:
    """One tier as a station: its drives serve in parallel."""

    name: str
    drives: int
    servers: int  # drives x I/Os each serves at once (SSD channels; 1 for a spindle)
    positioning_s: float  # per I/O: seek + half a revolution, or an SSD's service time
    s_per_kb: float  # transfer per KB
    penalty: int  # drive I/Os per host write
    usable_mb: float  # capacity for data after RAID and the array's reserve

    def io_s(self, kb: float) -> float:
        """Service of one I/O of ``kb`` on one drive, s."""
        return self.positioning_s + kb * self.s_per_kb


def tier_timing(tier: Tier, p: VdiTwinParameters) -> TierTiming:
    if tier.drive is DriveClass.SSD:
        pos = (tier.service_time_ms or p.ssd_service_ms) / 1e3
        return TierTiming(
            tier.name,
            tier.count,
            tier.count * p.ssd_channels,
            pos,
            KB / (p.ssd_media_mb_s * MB),
            RAID_WRITE_PENALTY[tier.raid],
            tier.usable_gb * 1024.0 * (1.0 - p.tier_reserve_share),
        )
    cls = tier.drive.value
    if tier.service_time_ms is not None:
        pos = tier.service_time_ms / 1e3
    else:
        half_rotation_s = 0.5 * 60.0 / p.hdd_rpm[cls]
        pos = p.hdd_seek_ms[cls] * p.hdd_seek_share / 1e3 + half_rotation_s
    return TierTiming(
        tier.name,
        tier.count,
        tier.count,
        pos,
        KB / (p.hdd_media_mb_s * MB),
        RAID_WRITE_PENALTY[tier.raid],
        tier.usable_gb * 1024.0 * (1.0 - p.tier_reserve_share),
    )


def active_controllers(hw: ArrayHardware) -> int:
    return 1 if hw.controller_mode is ControllerMode.ACTIVE_STANDBY else len(hw.controllers)


def write_cache_mb(hw: ArrayHardware, p: VdiTwinParameters) -> float:
    """Dirty data the array holds before host writes wait for the drives, MB (each active controller
    holds its own volumes' writes, mirrored to its peer)."""
    per = hw.write_cache_mb if hw.write_cache_mb is not None else hw.cache_gb * 1024.0 * p.write_cache_share
    return per * active_controllers(hw)


def read_cache_mb(hw: ArrayHardware, p: VdiTwinParameters) -> float:
    return hw.cache_gb * 1024.0 * p.read_cache_share * active_controllers(hw)


def controller_service_s(hw: ArrayHardware, p: VdiTwinParameters) -> float:
    """Processing of one I/O by a controller (its queueing part), s."""
    iops = hw.controller_max_iops or p.controller_max_iops.get(hw.kind, 50_000.0)
    return 1.0 / iops


def port_s_per_kb(hw: ArrayHardware, p: VdiTwinParameters) -> float:
    return KB / (hw.ports.speed_gbps * 1e9 / 8.0 * p.network_efficiency)


@dataclass(frozen=True)
class Placement:
    """Where an array serves reads from, and where writes land, as shares per tier (fastest first)."""

    image_read_miss: float  # share of image reads the read cache misses
    private_read_miss: float
    image_tiers: tuple[float, ...]  # share of image-read misses per tier
    private_tiers: tuple[float, ...]
    write_tiers: tuple[float, ...]  # share of written data per tier


def _fill(sizes_mb: list[float], tiers: tuple[TierTiming, ...]) -> list[tuple[float, ...]]:
    """Hot data classes (hottest first) poured into the tiers, fastest first: each class's share per tier.

    Auto-tiering keeps the most active data on the fastest drives as far as they hold it; what does
    not fit spills to the next tier, and the last tier takes whatever is left.
    """
    free = [t.usable_mb for t in tiers]
    out = []
    for size in sizes_mb:
        left = size
        shares = [0.0] * len(tiers)
        for k in range(len(tiers)):
            take = min(left, free[k]) if k < len(tiers) - 1 else left
            free[k] -= min(take, free[k])
            shares[k] = take / size if size > 0 else (1.0 if k == 0 else 0.0)
            left -= take
            if left <= 1e-9:
                break
        out.append(tuple(shares))
    return out


def placement(
    hw: ArrayHardware,
    tiers: tuple[TierTiming, ...],
    p: VdiTwinParameters,
    image_copies: int,
    desktops: int,
    private_active_mb: float,
) -> Placement:
    """Read-cache misses and tier shares from the array's capacities and the data it holds.

    ``image_copies`` shared images (a PVS vDisk, a replica or an MCS base disk per datastore) of
    ``image_hot_mb`` each are the hottest data; then each desktop's active private data
    (``private_active_mb``, its write footprint). The read cache holds image data first (shared by
    every desktop), then each desktop's most recent writes (``private_hot_mb``).
    """
    rc = read_cache_mb(hw, p)
    img_hot = image_copies * p.image_hot_mb
    img_miss = 1.0 - min(1.0, rc / img_hot) if img_hot > 0 else 0.0
    left = max(0.0, rc - img_hot)
    priv_hot = desktops * p.private_hot_mb
    priv_miss = 1.0 - min(1.0, left / priv_hot) if priv_hot > 0 else 0.0
    img_t, priv_t = _fill([max(img_hot, 1.0), max(desktops * private_active_mb, 1.0)], tiers)
    write_t = (
        tuple(1.0 if k == 0 else 0.0 for k in range(len(tiers)))
        if hw.kind in WRITES_TO_FASTEST_TIER
        else priv_t
    )
    return Placement(img_miss, priv_miss, img_t, priv_t, write_t)


def describe(hw: ArrayHardware, p: VdiTwinParameters, write_kb: float = 8.0) -> list[str]:
    """The array's capacities in words: drives, RAID, what a tier takes, caches."""
    tiers = tuple(tier_timing(t, p) for t in hw.tiers)
    out = [
        f"{hw.name} ({hw.kind} {hw.model}): {len(hw.controllers)} controllers {hw.controller_mode.value}, "
        f"write cache {write_cache_mb(hw, p):.0f} MB, read cache {read_cache_mb(hw, p):.0f} MB, "
        f"{1 / controller_service_s(hw, p):,.0f} IOPS per controller"
    ]
    for t, tt in zip(hw.tiers, tiers, strict=True):
        w_iops = tt.servers / tt.penalty / tt.io_s(write_kb)
        out.append(
            f"  tier {t.name}: {t.count} x {t.capacity_gb:g} GB RAID {t.raid} (penalty {tt.penalty}), "
            f"{tt.io_s(write_kb) * 1e3:.2f} ms per {write_kb:g} KB I/O, {w_iops:,.0f} host writes/s, "
            f"{tt.usable_mb / 1024:,.0f} GB usable"
        )
    return out
