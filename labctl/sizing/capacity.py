"""Desktops per array from capacity (the 2012 paper's formula, section 6.3), and capacity headroom.

    NumVM = (ArrayCapacity - (15% * ArrayCapacity + vDiskSize * NumvDisk)) / (125% * (VMem + WCacheSize))

(paper line 763): the array keeps 15 % headroom (its criterion "at least 15 % spare capacity",
section 4.4.1) and holds the vDisk images; each desktop takes its RAM (the hypervisor's swap file
of an unreserved VM is the size of its RAM and sits on the datastore) and its write cache, with 25 %
headroom on both. Both headroom shares are parameters here, with the paper's values as defaults.

Units: every capacity in the same unit; the paper's is GB with 1 TB = 1,024 GB (its array of
"2.48 TB" is Table 8's 2,539.5 GB). Rounding: desktops per array round **down** (a desktop fits
whole or not at all); arrays for N desktops round **up**: ``ceil(N / whole desktops per array)``.

The paper's worked example uses ``WCacheSize`` = 1.5 GB although each desktop had a 2 GB write-cache
disk (section 5.4.1): 1.5 GB is the 75 % of it that the write cache never exceeded in ten hours
(section 5.4.6). Size with the write cache a desktop actually fills, measured, as the paper advises.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from labctl.sizing.exact import (
    Number,
    SizingInputError,
    count,
    non_negative,
    positive,
    share,
    show,
    show_share,
    whole_down,
    whole_up,
)
from labctl.sizing.result import SizingResult

ARRAY_HEADROOM_SHARE = Fraction(15, 100)  # 2012 paper, section 4.4.1 and line 767
VM_HEADROOM_SHARE = Fraction(25, 100)  # 2012 paper, line 767


@dataclass(frozen=True)
class DesktopsByCapacity(SizingResult):
    """The 2012 paper's capacity formula with every term, and arrays for a desktop count if given."""

    calculator: ClassVar[str] = "capacity"
    array_capacity_gb: Fraction
    vdisk_size_gb: Fraction
    vdisk_count: int
    vm_ram_gb: Fraction
    write_cache_gb: Fraction
    array_headroom_share: Fraction
    vm_headroom_share: Fraction
    desktops: int | None = None  # the population to place, if arrays are wanted

    @property
    def reserved_gb(self) -> Fraction:
        """Headroom plus vDisk images: ``headroom * ArrayCapacity + vDiskSize * NumvDisk``."""
        return self.array_headroom_share * self.array_capacity_gb + self.vdisk_size_gb * self.vdisk_count

    @property
    def usable_gb(self) -> Fraction:
        return self.array_capacity_gb - self.reserved_gb

    @property
    def per_desktop_gb(self) -> Fraction:
        """``(1 + VM headroom) * (VMem + WCacheSize)``."""
        return (1 + self.vm_headroom_share) * (self.vm_ram_gb + self.write_cache_gb)

    @property
    def desktops_per_array_exact(self) -> Fraction:
        return self.usable_gb / self.per_desktop_gb

    @property
    def desktops_per_array(self) -> int:
        return whole_down(self.desktops_per_array_exact)

    @property
    def arrays(self) -> int | None:
        if self.desktops is None:
            return None
        return whole_up(Fraction(self.desktops, self.desktops_per_array))

    def inputs(self) -> dict[str, Any]:
        return {
            "array_capacity_gb": self.array_capacity_gb,
            "vdisk_size_gb": self.vdisk_size_gb,
            "vdisk_count": self.vdisk_count,
            "vm_ram_gb": self.vm_ram_gb,
            "write_cache_gb": self.write_cache_gb,
            "array_headroom_share": self.array_headroom_share,
            "vm_headroom_share": self.vm_headroom_share,
            "desktops": self.desktops,
        }

    def outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "reserved_gb": self.reserved_gb,
            "usable_gb": self.usable_gb,
            "per_desktop_gb": self.per_desktop_gb,
            "desktops_per_array_exact": self.desktops_per_array_exact,
            "desktops_per_array": self.desktops_per_array,
        }
        if self.desktops is not None:
            out["arrays"] = self.arrays
        return out

    def lines(self) -> list[str]:
        c, h, v = show(self.array_capacity_gb), show(self.array_headroom_share), show(self.vdisk_size_gb)
        out = [
            "Desktops per array from capacity (2012 paper, section 6.3), capacities in GB:",
            "  NumVM = (ArrayCapacity - (headroom × ArrayCapacity + vDiskSize × NumvDisk))"
            " / ((1 + VM headroom) × (VMem + WCacheSize))",
            f"        = ({c} - ({h} × {c} + {v} × {self.vdisk_count}))"
            f" / ({show(1 + self.vm_headroom_share)} × ({show(self.vm_ram_gb)} + {show(self.write_cache_gb)}))",
            f"        = ({c} - {show(self.reserved_gb)}) / {show(self.per_desktop_gb)}",
            f"        = {show(self.usable_gb)} / {show(self.per_desktop_gb)}",
            f"        = {show(self.desktops_per_array_exact, 'desktops')}",
            f"  → {self.desktops_per_array} desktops per array (rounded down: a desktop fits whole or not at all)",
        ]
        if self.desktops is not None:
            out.append(
                f"  arrays for {self.desktops} desktops = {self.desktops} / {self.desktops_per_array}"
                f" = {show(Fraction(self.desktops, self.desktops_per_array))} → {self.arrays} (rounded up)"
            )
        return out


def desktops_per_array(
    array_capacity_gb: Number,
    vdisk_size_gb: Number,
    vdisk_count: Number,
    vm_ram_gb: Number,
    write_cache_gb: Number,
    array_headroom_share: Number = ARRAY_HEADROOM_SHARE,
    vm_headroom_share: Number = VM_HEADROOM_SHARE,
    desktops: Number | None = None,
) -> DesktopsByCapacity:
    """Desktops one array holds by capacity (and arrays for ``desktops``, if given).

    The paper's sample calculation (line 785: 2,539 GB, six 25 GB vDisks, 1 GB RAM, 1.5 GB write
    cache), "around 640 desktops":

    >>> r = desktops_per_array(2539, 25, 6, 1, "1.5")
    >>> r.desktops_per_array_exact, r.desktops_per_array
    (Fraction(80326, 125), 642)
    >>> print(r.text())
    Desktops per array from capacity (2012 paper, section 6.3), capacities in GB:
      NumVM = (ArrayCapacity - (headroom × ArrayCapacity + vDiskSize × NumvDisk)) / ((1 + VM headroom) × (VMem + WCacheSize))
            = (2539 - (0.15 × 2539 + 25 × 6)) / (1.25 × (1 + 1.5))
            = (2539 - 530.85) / 3.125
            = 2008.15 / 3.125
            = 642.608 desktops
      → 642 desktops per array (rounded down: a desktop fits whole or not at all)
    """
    capacity = positive(array_capacity_gb, "array_capacity_gb", "GB")
    headroom = share(array_headroom_share, "array_headroom_share")
    if headroom == 1:
        raise SizingInputError(
            "array_headroom_share",
            "100 %",
            "leaves no capacity for desktops",
            "give less than 100 %, e.g. 15%",
        )
    ram = non_negative(vm_ram_gb, "vm_ram_gb", "GB")
    cache = non_negative(write_cache_gb, "write_cache_gb", "GB")
    if ram + cache == 0:
        raise SizingInputError(
            "write_cache_gb",
            "0",
            "a desktop of 0 GB RAM and 0 GB write cache takes no space",
            "give the desktop's sizes",
        )
    result = DesktopsByCapacity(
        capacity,
        non_negative(vdisk_size_gb, "vdisk_size_gb", "GB"),
        count(vdisk_count, "vdisk_count", minimum=0),
        ram,
        cache,
        headroom,
        non_negative(vm_headroom_share, "vm_headroom_share"),
        None if desktops is None else count(desktops, "desktops"),
    )
    if result.desktops_per_array < 1:
        raise SizingInputError(
            "array_capacity_gb",
            show(capacity, "GB"),
            f"holds no desktop after {show_share(headroom)} headroom and {show(result.reserved_gb - headroom * capacity)} GB"
            f" of vDisks ({show(result.usable_gb)} GB left, {show(result.per_desktop_gb)} GB per desktop)",
            "give a larger array, fewer vDisks or less headroom",
        )
    return result


@dataclass(frozen=True)
class CapacityHeadroom(SizingResult):
    """Spare capacity of an array against a required share (the 2012 paper's 15 %)."""

    calculator: ClassVar[str] = "headroom"
    array_capacity_gb: Fraction
    used_gb: Fraction
    required_share: Fraction

    @property
    def free_gb(self) -> Fraction:
        return self.array_capacity_gb - self.used_gb

    @property
    def free_share(self) -> Fraction:
        return self.free_gb / self.array_capacity_gb

    @property
    def meets(self) -> bool:
        return self.free_share >= self.required_share

    def inputs(self) -> dict[str, Any]:
        return {
            "array_capacity_gb": self.array_capacity_gb,
            "used_gb": self.used_gb,
            "required_share": self.required_share,
        }

    def outputs(self) -> dict[str, Any]:
        return {"free_gb": self.free_gb, "free_share": self.free_share, "meets_required": self.meets}

    def lines(self) -> list[str]:
        verdict = "meets" if self.meets else "does NOT meet"
        return [
            "Capacity headroom of an array, capacities in GB:",
            "  free share = (ArrayCapacity - used) / ArrayCapacity",
            f"             = ({show(self.array_capacity_gb)} - {show(self.used_gb)}) / {show(self.array_capacity_gb)}",
            f"             = {show(self.free_gb)} / {show(self.array_capacity_gb)} = {show_share(self.free_share)}",
            f"  {verdict} the required {show_share(self.required_share)} spare capacity",
        ]


def capacity_headroom(
    array_capacity_gb: Number, used_gb: Number, required_share: Number = ARRAY_HEADROOM_SHARE
) -> CapacityHeadroom:
    """Spare share of an array with ``used_gb`` allocated, against ``required_share``.

    The paper's single array (Table 2: 2.48 TB, 384.87 GB free, "15.2 %"):

    >>> r = capacity_headroom("2539.5", "2154.63")
    >>> show_share(r.free_share), r.meets
    ('≈15.1553 %', True)
    """
    capacity = positive(array_capacity_gb, "array_capacity_gb", "GB")
    used = non_negative(used_gb, "used_gb", "GB")
    if used > capacity:
        raise SizingInputError(
            "used_gb",
            show(used, "GB"),
            f"is more than the array's {show(capacity, 'GB')}",
            "give the allocated capacity",
        )
    return CapacityHeadroom(capacity, used, share(required_share, "required_share"))
