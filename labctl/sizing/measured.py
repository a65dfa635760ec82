"""Sizing from measured figures: per-desktop IOPS per phase, write shares and an array's capability.

Inputs are plain typed figures (:class:`MeasuredProfile`), so the same function serves figures
typed in, read from a paper or read from a run folder:

- ``phases``: for each phase measured (boot, login, steady), the host IOPS per desktop and the
  write share (:class:`~labctl.sizing.load.PhaseLoad`); :func:`per_desktop_iops` turns an array
  total into a per-desktop figure;
- ``array``: what one array was seen to sustain within the run's criteria (e.g. latency under
  20 ms): host IOPS, the write share at the time, and its RAID level (:class:`ArrayCapability`).

Seam for run folders: the run-record owner adds ``measured_profile(run_folder) -> MeasuredProfile``
(in ``labctl/sizing/from_run.py``) and a ``--run`` option to ``labctl size measured``; nothing here
reads files.

The arithmetic: an array's capability is converted to back-end I/Os with the RAID penalty at the
write share it was measured at, ``raw = IOPS * ((1 - w) + w * penalty)``; a desktop in phase ``p``
costs ``IOPS_p * ((1 - w_p) + w_p * penalty)`` back-end I/Os. So

    desktops per array (phase p) = raw capability / back-end I/Os per desktop in p   (rounded down)
    desktops per array           = the smallest over the phases (the limiting phase)
    arrays for N desktops        = ceil(N / desktops per array), and, if capacity was sized too,
                                   the larger of that and the arrays for capacity (paper line 789)
    drives for the boot storm    = :func:`~labctl.sizing.drives.drives_needed` for the booting desktops

A capability taken from a run where the array was *not* saturated (the 2012 paper's arrays stayed
under 10 ms) understates what the array can do, so the arrays it gives err on the safe side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from labctl.sizing.drives import DrivesNeeded, DriveType, booting_desktops, drives_needed
from labctl.sizing.exact import (
    Number,
    SizingInputError,
    count,
    positive,
    share,
    show,
    show_share,
    whole_down,
    whole_up,
)
from labctl.sizing.load import Phase, PhaseLoad
from labctl.sizing.raid import RaidLevel, backend_cost, cost_terms, raid_level
from labctl.sizing.result import SizingResult


def per_desktop_iops(array_iops: Number, desktops: Number) -> Fraction:
    """Host IOPS per desktop from an array total: the 2012 paper's 4,500 IOPS over 630 desktops.

    >>> per_desktop_iops(4500, 630)
    Fraction(50, 7)
    """
    return positive(array_iops, "array_iops", "IOPS") / count(desktops, "desktops")


@dataclass(frozen=True)
class ArrayCapability:
    """Host IOPS one array sustained within the criteria, at the write share it had, on its RAID level."""

    iops: Fraction
    write_share: Fraction
    raid: RaidLevel

    @classmethod
    def of(cls, iops: Number, write_share: Number, raid: RaidLevel | int | str) -> ArrayCapability:
        """Validated; errors name ``array_iops``, ``array_write_share``, ``raid``."""
        return cls(
            positive(iops, "array_iops", "IOPS"), share(write_share, "array_write_share"), raid_level(raid)
        )

    @property
    def raw_iops(self) -> Fraction:
        return self.iops * backend_cost(self.write_share, self.raid)


@dataclass(frozen=True)
class MeasuredProfile:
    """What a run (or a paper) measured: per-phase loads per desktop and one array's capability."""

    phases: Mapping[Phase, PhaseLoad]
    array: ArrayCapability
    source: str = ""  # where the figures come from (a run id, a paper's table)


@dataclass(frozen=True)
class PhaseFit:
    phase: Phase
    load: PhaseLoad
    raw_per_desktop: Fraction
    desktops_exact: Fraction

    @property
    def desktops(self) -> int:
        return whole_down(self.desktops_exact)


@dataclass(frozen=True)
class MeasuredSizing(SizingResult):
    calculator: ClassVar[str] = "measured"
    profile: MeasuredProfile
    desktops: int
    fits: tuple[PhaseFit, ...]
    desktops_per_array_by_capacity: int | None = None
    booting: int | None = None
    boot_drives: DrivesNeeded | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def limiting(self) -> PhaseFit:
        return min(self.fits, key=lambda f: f.desktops_exact)

    @property
    def desktops_per_array(self) -> int:
        return self.limiting.desktops

    @property
    def arrays_by_iops(self) -> int:
        return whole_up(Fraction(self.desktops, self.desktops_per_array))

    @property
    def arrays_by_capacity(self) -> int | None:
        if self.desktops_per_array_by_capacity is None:
            return None
        return whole_up(Fraction(self.desktops, self.desktops_per_array_by_capacity))

    @property
    def arrays(self) -> int:
        return max(self.arrays_by_iops, self.arrays_by_capacity or 0)

    def inputs(self) -> dict[str, Any]:
        p = self.profile
        out: dict[str, Any] = {"desktops": self.desktops, "source": p.source}
        for phase, load in p.phases.items():
            out[f"{phase}_iops_per_desktop"] = load.iops_per_desktop
            out[f"{phase}_write_share"] = load.write_share
        out |= {
            "array_iops": p.array.iops,
            "array_write_share": p.array.write_share,
            "raid": p.array.raid.value,
        }
        if self.desktops_per_array_by_capacity is not None:
            out["desktops_per_array_by_capacity"] = self.desktops_per_array_by_capacity
        return out

    def outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "array_raw_iops": self.profile.array.raw_iops,
            "phases": {
                str(f.phase): {
                    "raw_iops_per_desktop": f.raw_per_desktop,
                    "desktops_per_array_exact": f.desktops_exact,
                    "desktops_per_array": f.desktops,
                }
                for f in self.fits
            },
            "limiting_phase": str(self.limiting.phase),
            "desktops_per_array": self.desktops_per_array,
            "arrays_by_iops": self.arrays_by_iops,
            "arrays": self.arrays,
        }
        if self.arrays_by_capacity is not None:
            out["arrays_by_capacity"] = self.arrays_by_capacity
        if self.boot_drives is not None:
            out["boot_storm"] = {"booting_desktops": self.booting, **self.boot_drives.outputs()}
        return out

    def lines(self) -> list[str]:
        a = self.profile.array
        src = f" ({self.profile.source})" if self.profile.source else ""
        out = [
            f"Sizing from measured figures{src}:",
            f"Array capability: {show(a.iops)} host IOPS at {show_share(a.write_share)} writes on {a.raid}",
            f"  raw = {show(a.iops)} × {cost_terms(a.write_share, a.raid)} = {show(a.raw_iops, 'back-end IOPS')}",
        ]
        for f in self.fits:
            out += [
                f"{str(f.phase).capitalize()}: {f.load}",
                f"  per desktop = {show(f.load.iops_per_desktop)} × {cost_terms(f.load.write_share, a.raid)}"
                f" = {show(f.raw_per_desktop, 'back-end IOPS')}",
                f"  desktops per array = {show(a.raw_iops)} / {show(f.raw_per_desktop)} = {show(f.desktops_exact)}"
                f" → {f.desktops} (rounded down)",
            ]
        out.append(f"Desktops per array: {self.desktops_per_array} ({self.limiting.phase} limits)")
        out.append(
            f"Arrays for {self.desktops} desktops by IOPS = {self.desktops} / {self.desktops_per_array}"
            f" = {show(Fraction(self.desktops, self.desktops_per_array))} → {self.arrays_by_iops} (rounded up)"
        )
        if self.arrays_by_capacity is not None:
            out += [
                f"Arrays by capacity = {self.desktops} / {self.desktops_per_array_by_capacity}"
                f" → {self.arrays_by_capacity} (rounded up)",
                f"Arrays = max(by IOPS, by capacity) = max({self.arrays_by_iops}, {self.arrays_by_capacity})"
                f" = {self.arrays}",
            ]
        if self.boot_drives is not None:
            b = self.profile.phases[Phase.BOOT]
            out.append(
                f"Drives for the boot storm of {self.booting} desktops: {self.booting} × {show(b.iops_per_desktop)}"
                f" = {show(self.boot_drives.functional_iops, 'host IOPS')} on {self.boot_drives.raid}"
            )
            out += self.boot_drives.steps()
        out += list(self.notes)
        return out


def size_from_measurements(
    profile: MeasuredProfile,
    desktops: Number,
    *,
    drive: DriveType | str | None = None,
    iops_per_drive: Number | None = None,
    drive_raid: RaidLevel | int | str | None = None,
    preboot_share: Number = 0,
    desktops_per_array_by_capacity: Number | None = None,
) -> MeasuredSizing:
    """Desktops per array, arrays for ``desktops`` and drives for their boot storm, from measurements.

    Drives for the boot storm are given when the profile has a boot phase and a drive type or
    ``iops_per_drive`` is given; their RAID level is ``drive_raid`` (default: the array's).

    The 2012 paper's one-array figures (Table 6 over 630 desktops, Table 7's write shares, the boot
    peak of 10,000 IOPS as the capability; RAID 10 is an assumption, the paper does not say):

    >>> profile = MeasuredProfile(
    ...     {Phase.STEADY: PhaseLoad.of(per_desktop_iops(4500, 630), "99.8%"),
    ...      Phase.BOOT: PhaseLoad.of(per_desktop_iops(10000, 630), "87%")},
    ...     ArrayCapability.of(10000, "87%", 10))
    >>> r = size_from_measurements(profile, 1270)
    >>> r.desktops_per_array, r.limiting.phase, r.arrays
    (630, <Phase.BOOT: 'boot'>, 3)
    """
    if not profile.phases:
        raise SizingInputError(
            "phases", "(none)", "no phase measured", "give at least one phase's IOPS per desktop"
        )
    n = count(desktops, "desktops")
    array = profile.array
    fits = []
    for phase, load in profile.phases.items():
        raw_per_desktop = load.iops_per_desktop * backend_cost(load.write_share, array.raid)
        if raw_per_desktop == 0:
            raise SizingInputError(
                f"{phase}_iops_per_desktop",
                "0",
                "a phase without I/O sizes nothing",
                "give the measured IOPS per desktop",
            )
        fits.append(PhaseFit(phase, load, raw_per_desktop, array.raw_iops / raw_per_desktop))
    by_capacity = (
        None
        if desktops_per_array_by_capacity is None
        else count(desktops_per_array_by_capacity, "desktops_per_array_by_capacity")
    )
    notes: list[str] = []
    if min(f.desktops for f in fits) < 1:
        raise SizingInputError(
            "array_iops",
            show(array.iops, "IOPS"),
            "holds less than one desktop",
            "give the array's measured capability",
        )
    booting = boot = None
    if Phase.BOOT in profile.phases and (drive is not None or iops_per_drive is not None):
        load = profile.phases[Phase.BOOT]
        booting = booting_desktops(n, preboot_share)
        level = array.raid if drive_raid is None else raid_level(drive_raid, "drive_raid")
        boot = drives_needed(booting * load.iops_per_desktop, load.write_share, level, drive, iops_per_drive)
    elif drive is not None or iops_per_drive is not None:
        notes.append("No boot phase measured: no drives for a boot storm.")
    return MeasuredSizing(profile, n, tuple(fits), by_capacity, booting, boot, tuple(notes))
