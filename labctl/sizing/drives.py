"""Drives a RAID set needs for a load: steady state and boot storm, at a given IOPS per drive.

    raw IOPS      = host IOPS * ((1 - w) + w * penalty)            (:mod:`labctl.sizing.raid`)
    drives        = raw IOPS / IOPS per drive                        (exact)
    whole drives  = drives rounded up                                (a drive is bought whole)
    RAID set      = whole drives rounded up to the level's geometry  (RAID 10: even, at least 4 ...)

For desktops, the host IOPS of a phase are ``desktops * IOPS per desktop``; in a boot storm only the
desktops that were not pre-booted boot (the 2012 paper pre-booted 20 %: 126 of 630, section 5.5).
Drives are sized for the worse of the two phases.

Default IOPS per drive (small random I/O, one drive, no controller cache), by drive type:

=========  ==========  =======================================================================
type       IOPS/drive  source
=========  ==========  =======================================================================
ssd        6,000       the planning figure storage sizing guides list for an enterprise SATA/SAS
                       SSD; no reference paper gives one. The 2012 paper's SATA-II SSDs each
                       carried 1,335-1,727 IOPS at under 2 ms without saturating (its Table 4), so
                       measure (``labctl size measured``) or pass ``--iops-per-drive``.
15k        180         1 / (average seek + half a revolution) = 1 / (3.5 ms + 2.0 ms) = 182
10k        140         1 / (4.0 ms + 3.0 ms) = 143
7.2k       80          1 / (8.5 ms + 4.17 ms) = 79 (nearline SAS or SATA)
=========  ==========  =======================================================================

The rotational figures are the long-standing planning figures (15K 180, 10K 140, 7.2K 80) that
storage sizing guides list, and each is the random-I/O rate that datasheet seek times and the
spindle speed give (the seeks are in :data:`DRIVE_SEEK_MS`; tests check the figures against them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
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
from labctl.sizing.load import PhaseLoad
from labctl.sizing.raid import (
    FunctionalIops,
    RaidLevel,
    backend_cost,
    cost_terms,
    functional_iops,
    raid_level,
)
from labctl.sizing.result import SizingResult


class DriveType(StrEnum):
    SSD = "ssd"
    SAS_15K = "15k"
    SAS_10K = "10k"
    NL_7K2 = "7.2k"


DEFAULT_IOPS_PER_DRIVE: dict[DriveType, int] = {
    DriveType.SSD: 6000,
    DriveType.SAS_15K: 180,
    DriveType.SAS_10K: 140,
    DriveType.NL_7K2: 80,
}
# Datasheet average seek (ms) and spindle speed (rpm) behind the rotational defaults above.
DRIVE_SEEK_MS: dict[DriveType, tuple[Fraction, int]] = {
    DriveType.SAS_15K: (Fraction("3.5"), 15000),
    DriveType.SAS_10K: (Fraction("4.0"), 10000),
    DriveType.NL_7K2: (Fraction("8.5"), 7200),
}
_DRIVE_ALIASES = {
    "ssd": DriveType.SSD,
    "flash": DriveType.SSD,
    "15k": DriveType.SAS_15K,
    "15000": DriveType.SAS_15K,
    "10k": DriveType.SAS_10K,
    "10000": DriveType.SAS_10K,
    "7.2k": DriveType.NL_7K2,
    "7200": DriveType.NL_7K2,
    "7k2": DriveType.NL_7K2,
    "nl": DriveType.NL_7K2,
    "7.2k-nl": DriveType.NL_7K2,
    "nl-sas": DriveType.NL_7K2,
    "sata": DriveType.NL_7K2,
}


def drive_type(value: DriveType | str, field: str = "drive_type") -> DriveType:
    """``"15k"``, ``"15K"``, ``"15000"``, ``"7.2k"``, ``"nl-sas"``, ``"ssd"`` as a :class:`DriveType`."""
    if isinstance(value, DriveType):
        return value
    key = str(value).strip().lower().replace(" ", "").removesuffix("rpm")
    if key in _DRIVE_ALIASES:
        return _DRIVE_ALIASES[key]
    raise SizingInputError(field, str(value), "unknown drive type", "give one of ssd, 15k, 10k, 7.2k")


def iops_per_drive_for(
    drive: DriveType | str | None, iops_per_drive: Number | None
) -> tuple[Fraction, DriveType | None]:
    """The IOPS per drive to size with: ``iops_per_drive`` if given, else the drive type's default."""
    if iops_per_drive is not None:
        return positive(iops_per_drive, "iops_per_drive", "IOPS"), drive_type(drive) if drive else None
    if drive is None:
        raise SizingInputError(
            "drive_type",
            "(not given)",
            "no IOPS per drive",
            "give a drive type (ssd, 15k, 10k, 7.2k) or iops_per_drive",
        )
    kind = drive_type(drive)
    return Fraction(DEFAULT_IOPS_PER_DRIVE[kind]), kind


@dataclass(frozen=True)
class DrivesNeeded(SizingResult):
    """Drives of a RAID set for one host load."""

    calculator: ClassVar[str] = "drives"
    functional_iops: Fraction
    write_share: Fraction
    raid: RaidLevel
    iops_per_drive: Fraction
    drive: DriveType | None
    raw_iops: Fraction
    drives_exact: Fraction
    drives_whole: int
    drives: int  # rounded up to the RAID level's geometry

    def inputs(self) -> dict[str, Any]:
        return {
            "functional_iops": self.functional_iops,
            "write_share": self.write_share,
            "raid": self.raid.value,
            "drive_type": str(self.drive) if self.drive else None,
            "iops_per_drive": self.iops_per_drive,
        }

    def outputs(self) -> dict[str, Any]:
        return {
            "raw_iops": self.raw_iops,
            "drives_exact": self.drives_exact,
            "drives_whole": self.drives_whole,
            "drives": self.drives,
        }

    def lines(self) -> list[str]:
        return [
            f"Drives a {self.raid} set needs for {show(self.functional_iops)} host IOPS at"
            f" {show_share(self.write_share)} writes:",
            *self.steps(),
        ]

    def steps(self, indent: str = "  ") -> list[str]:
        """The formula lines, without a heading (for results that contain this one)."""
        kind = f" ({self.drive} default)" if self.drive else ""
        out = [
            f"{indent}raw IOPS = host IOPS × (read share + write share × write penalty)",
            f"{indent}         = {show(self.functional_iops)} × {cost_terms(self.write_share, self.raid)}"
            f" = {show(self.raw_iops, 'IOPS')}",
            f"{indent}drives   = raw IOPS / IOPS per drive = {show(self.raw_iops)} / {show(self.iops_per_drive)}{kind}"
            f" = {show(self.drives_exact)}",
            f"{indent}         → {self.drives_whole} whole drives (rounded up)",
        ]
        if self.drives != self.drives_whole:
            out.append(f"{indent}         → {self.drives} drives for {self.raid} ({self.raid.rule})")
        return out


def drives_needed(
    functional_iops: Number,
    write_share: Number,
    raid: RaidLevel | int | str,
    drive: DriveType | str | None = None,
    iops_per_drive: Number | None = None,
) -> DrivesNeeded:
    """Drives a ``raid`` set needs to serve ``functional_iops`` host IOPS at ``write_share`` writes.

    Give the drive type (its default IOPS per drive, see the module docstring) or ``iops_per_drive``.
    The one-array steady state of the 2012 paper (4,500 IOPS at 99.8 % writes) on RAID 10 of 15K:

    >>> r = drives_needed(4500, "99.8%", 10, "15k")
    >>> r.raw_iops, r.drives_exact, r.drives
    (Fraction(8991, 1), Fraction(999, 20), 50)
    """
    f = non_negative(functional_iops, "functional_iops", "IOPS")
    w = share(write_share, "write_share")
    level = raid_level(raid)
    per_drive, kind = iops_per_drive_for(drive, iops_per_drive)
    raw = f * backend_cost(w, level)
    exact = raw / per_drive
    whole = whole_up(exact)
    drives = level.round_up(whole)
    if drives is None:
        raise SizingInputError(
            "raid",
            "1",
            f"a RAID 1 mirror holds 2 drives and this load needs {whole}",
            "use RAID 10 for more drives",
        )
    return DrivesNeeded(f, w, level, per_drive, kind, raw, exact, whole, drives)


def booting_desktops(desktops: Number, preboot_share: Number = 0) -> int:
    """Desktops that boot in the storm when ``preboot_share`` of them were booted beforehand.

    Pre-booted desktops are rounded down (never assume more pre-booted than asked), so the storm
    is rounded up. The 2012 paper's 20 % pre-boot of 630 desktops: 126 pre-booted, 504 boot.

    >>> booting_desktops(630, "20%")
    504
    """
    n = count(desktops, "desktops")
    return n - whole_down(n * share(preboot_share, "preboot_share"))


@dataclass(frozen=True)
class StormDrives(SizingResult):
    """Drives for a desktop population: steady state and boot storm, and the larger of the two."""

    calculator: ClassVar[str] = "drives"
    desktops: int
    booting: int
    steady_load: PhaseLoad
    boot_load: PhaseLoad
    steady: DrivesNeeded
    boot: DrivesNeeded

    @property
    def drives(self) -> int:
        return max(self.steady.drives, self.boot.drives)

    @property
    def limiting_phase(self) -> str:
        return "boot" if self.boot.drives > self.steady.drives else "steady"

    def inputs(self) -> dict[str, Any]:
        return {
            "desktops": self.desktops,
            "booting_desktops": self.booting,
            "steady_iops_per_desktop": self.steady_load.iops_per_desktop,
            "steady_write_share": self.steady_load.write_share,
            "boot_iops_per_desktop": self.boot_load.iops_per_desktop,
            "boot_write_share": self.boot_load.write_share,
            "raid": self.steady.raid.value,
            "drive_type": str(self.steady.drive) if self.steady.drive else None,
            "iops_per_drive": self.steady.iops_per_drive,
        }

    def outputs(self) -> dict[str, Any]:
        return {
            "steady": self.steady.outputs() | {"host_iops": self.steady.functional_iops},
            "boot": self.boot.outputs() | {"host_iops": self.boot.functional_iops},
            "drives": self.drives,
            "limiting_phase": self.limiting_phase,
        }

    def lines(self) -> list[str]:
        s, b = self.steady_load, self.boot_load
        return [
            f"Drives for {self.desktops} desktops on {self.steady.raid}:",
            f"Steady state: host IOPS = desktops × IOPS per desktop = {self.desktops} × {show(s.iops_per_desktop)}"
            f" = {show(self.steady.functional_iops, 'IOPS')} at {show_share(s.write_share)} writes",
            *self.steady.steps(),
            f"Boot storm: host IOPS = booting desktops × IOPS per desktop = {self.booting} × {show(b.iops_per_desktop)}"
            f" = {show(self.boot.functional_iops, 'IOPS')} at {show_share(b.write_share)} writes",
            *self.boot.steps(),
            f"Drives needed: max({self.steady.drives}, {self.boot.drives}) = {self.drives} ({self.limiting_phase} limits)",
        ]


def storm_drives(
    desktops: Number,
    steady: PhaseLoad,
    boot: PhaseLoad,
    raid: RaidLevel | int | str,
    drive: DriveType | str | None = None,
    iops_per_drive: Number | None = None,
    preboot_share: Number = 0,
) -> StormDrives:
    """Drives for ``desktops`` in steady state and in a boot storm of the ones not pre-booted.

    The 2012 paper's task worker (Table 7, upper ends: steady 8 IOPS at 99.8 % writes, boot 18 at
    87 %) for 630 desktops on RAID 10 of 15K drives:

    >>> r = storm_drives(630, PhaseLoad.of(8, "99.8%"), PhaseLoad.of(18, "87%"), 10, "15k")
    >>> r.steady.drives, r.boot.drives, r.drives, r.limiting_phase
    (56, 118, 118, 'boot')
    """
    n = count(desktops, "desktops")
    booting = booting_desktops(n, preboot_share)
    level = raid_level(raid)
    steady_result = drives_needed(
        n * steady.iops_per_desktop, steady.write_share, level, drive, iops_per_drive
    )
    boot_result = drives_needed(
        booting * boot.iops_per_desktop, boot.write_share, level, drive, iops_per_drive
    )
    return StormDrives(n, booting, steady, boot, steady_result, boot_result)


def raid_set_functional_iops(
    drives: Number,
    write_share: Number,
    raid: RaidLevel | int | str,
    drive: DriveType | str | None = None,
    iops_per_drive: Number | None = None,
) -> FunctionalIops:
    """Front-end IOPS of a RAID set of ``drives`` drives: raw = drives × IOPS per drive, then the penalty.

    The 2007 paper's write-cache volume, RAID 10 of four 10K SAS drives, at 100 % writes:

    >>> raid_set_functional_iops(4, "100%", 10, "10k").functional_iops
    Fraction(280, 1)
    """
    n = count(drives, "drives")
    level = raid_level(raid)
    if not level.fits(n):
        raise SizingInputError(
            "drives", str(n), f"{level} cannot be built from {n} drive(s)", f"{level} needs {level.rule}"
        )
    per_drive, _ = iops_per_drive_for(drive, iops_per_drive)
    result = functional_iops(n * per_drive, write_share, level)
    return replace(result, drives=n, iops_per_drive=per_drive)
