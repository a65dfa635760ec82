"""Functional (front-end) IOPS from raw (back-end) IOPS through the RAID write penalty, and back.

A host write costs the RAID set ``penalty`` disk I/Os: a mirror (RAID 1, 10) writes both halves
(2); single parity (RAID 5, 50) reads the old data and parity and writes both back (4); double
parity (RAID 6, 60) reads and writes data and two parities (6); a plain stripe (RAID 0) writes
once (1). A read costs one disk I/O on every level. So with a write share ``w`` of the host I/Os,

    back-end I/Os per host I/O = (1 - w) + w * penalty
    functional IOPS            = raw IOPS / ((1 - w) + w * penalty)
    raw IOPS needed            = functional IOPS * ((1 - w) + w * penalty)

and the two are exact inverses. The penalties are the ones of issue ``certification-sizing``
(RAID 1/10: 2, RAID 5: 4, RAID 6: 6) and the lab twin's (``labctl/sim/twin/hardware.py``).

Reading of the write share: the share of the *host* (front-end) I/Os that are writes, which is what
an array's or a hypervisor's counters report and what the 2012 paper's Table 7 gives per phase. The
shortcut some VDI sizing guides print, ``raw * read% + raw * write% / penalty``, applies the write
share to the *back-end* I/Os instead and overstates the functional IOPS whenever there are reads and
writes (1,000 raw IOPS at 50 % writes on RAID 5: 625 by the shortcut, 400 by the formula here, and
400 host IOPS at 50 % writes do cost 200 + 200 * 4 = 1,000 disk I/Os).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from fractions import Fraction
from typing import Any, ClassVar

from labctl.sizing.exact import Number, SizingInputError, non_negative, share, show, show_share
from labctl.sizing.result import SizingResult


class RaidLevel(IntEnum):
    """A RAID level, with its write penalty and the drive counts it can be built from.

    The drive-count rules are the inventory's (``labctl inventory validate``): RAID 1 is exactly
    one mirror pair (more drives is RAID 10), RAID 50/60 two equal spans.
    """

    RAID0 = 0
    RAID1 = 1
    RAID5 = 5
    RAID6 = 6
    RAID10 = 10
    RAID50 = 50
    RAID60 = 60

    @property
    def write_penalty(self) -> int:
        """Disk I/Os one host write costs on this level."""
        return _PENALTY[self]

    @property
    def min_drives(self) -> int:
        return _GEOMETRY[self][0]

    @property
    def rule(self) -> str:
        """The drive counts this level is built from, in words."""
        return _GEOMETRY[self][2]

    def fits(self, drives: int) -> bool:
        """Whether a set of ``drives`` drives can be built on this level."""
        low, step, _ = _GEOMETRY[self]
        if self is RaidLevel.RAID1:
            return drives == 2
        return drives >= low and drives % step == 0

    def round_up(self, drives: int) -> int | None:
        """The smallest drive count >= ``drives`` this level is built from (None: RAID 1 past 2)."""
        if self is RaidLevel.RAID1:
            return 2 if drives <= 2 else None
        low, step, _ = _GEOMETRY[self]
        n = max(drives, low)
        return n + (-n) % step

    def __str__(self) -> str:
        return f"RAID {self.value}"


_PENALTY = {
    RaidLevel.RAID0: 1,
    RaidLevel.RAID1: 2,
    RaidLevel.RAID10: 2,
    RaidLevel.RAID5: 4,
    RaidLevel.RAID50: 4,
    RaidLevel.RAID6: 6,
    RaidLevel.RAID60: 6,
}
# level -> (fewest drives, drive-count step, rule in words)
_GEOMETRY = {
    RaidLevel.RAID0: (1, 1, "at least 1 drive"),
    RaidLevel.RAID1: (2, 2, "exactly 2 drives (more drives in mirror pairs is RAID 10)"),
    RaidLevel.RAID5: (3, 1, "at least 3 drives"),
    RaidLevel.RAID6: (4, 1, "at least 4 drives"),
    RaidLevel.RAID10: (4, 2, "an even number of drives, at least 4"),
    RaidLevel.RAID50: (6, 2, "an even number of drives, at least 6"),
    RaidLevel.RAID60: (8, 2, "an even number of drives, at least 8"),
}
KNOWN_LEVELS = ", ".join(str(level.value) for level in RaidLevel)


def raid_level(value: RaidLevel | int | str, field: str = "raid") -> RaidLevel:
    """``10``, ``"10"``, ``"raid10"`` or ``"RAID 1+0"`` as a :class:`RaidLevel`; else a one-line error.

    >>> raid_level("raid 5"), raid_level(10).write_penalty
    (<RaidLevel.RAID5: 5>, 2)
    """
    if isinstance(value, RaidLevel):
        return value
    text = str(value).strip().lower().replace(" ", "").replace("+", "").replace("/", "")
    text = text.removeprefix("raid")
    try:
        return RaidLevel(int(text))
    except ValueError:
        raise SizingInputError(
            field, str(value), "unknown RAID level", f"give one of {KNOWN_LEVELS}"
        ) from None


def backend_cost(write_share: Fraction, raid: RaidLevel) -> Fraction:
    """Disk I/Os per host I/O: ``(1 - w) + w * penalty``.

    >>> backend_cost(Fraction(87, 100), RaidLevel.RAID10)
    Fraction(187, 100)
    """
    return (1 - write_share) + write_share * raid.write_penalty


def cost_terms(write_share: Fraction, raid: RaidLevel) -> str:
    """``(1 - w) + w * penalty`` with the numbers, for the formula lines."""
    return f"({show(1 - write_share)} + {show(write_share)} × {raid.write_penalty})"


@dataclass(frozen=True)
class FunctionalIops(SizingResult):
    """Front-end IOPS a RAID set's raw IOPS give at a write share."""

    calculator: ClassVar[str] = "functional-iops"
    raw_iops: Fraction
    write_share: Fraction
    raid: RaidLevel
    functional_iops: Fraction
    drives: int | None = None  # when the raw IOPS came from drives x IOPS per drive
    iops_per_drive: Fraction | None = None

    def inputs(self) -> dict[str, Any]:
        given: dict[str, Any] = {"raw_iops": self.raw_iops}
        if self.drives is not None:
            given = {"drives": self.drives, "iops_per_drive": self.iops_per_drive}
        return {**given, "write_share": self.write_share, "raid": self.raid.value}

    def outputs(self) -> dict[str, Any]:
        return {
            "raw_iops": self.raw_iops,
            "write_penalty": self.raid.write_penalty,
            "backend_ios_per_host_io": backend_cost(self.write_share, self.raid),
            "functional_iops": self.functional_iops,
        }

    def lines(self) -> list[str]:
        out = [f"Functional IOPS of a {self.raid} set at {show_share(self.write_share)} writes:"]
        if self.drives is not None and self.iops_per_drive is not None:
            out.append(
                f"  raw IOPS        = drives × IOPS per drive = {self.drives} × {show(self.iops_per_drive)}"
                f" = {show(self.raw_iops, 'IOPS')}"
            )
        out += [
            "  functional IOPS = raw IOPS / (read share + write share × write penalty)",
            f"                  = {show(self.raw_iops)} / {cost_terms(self.write_share, self.raid)}",
            f"                  = {show(self.raw_iops)} / {show(backend_cost(self.write_share, self.raid))}",
            f"                  = {show(self.functional_iops, 'IOPS')} (front-end)",
        ]
        return out


@dataclass(frozen=True)
class RawIops(SizingResult):
    """Back-end IOPS a RAID set must deliver for a front-end load."""

    calculator: ClassVar[str] = "raw-iops"
    functional_iops: Fraction
    write_share: Fraction
    raid: RaidLevel
    raw_iops: Fraction

    def inputs(self) -> dict[str, Any]:
        return {
            "functional_iops": self.functional_iops,
            "write_share": self.write_share,
            "raid": self.raid.value,
        }

    def outputs(self) -> dict[str, Any]:
        return {
            "write_penalty": self.raid.write_penalty,
            "backend_ios_per_host_io": backend_cost(self.write_share, self.raid),
            "raw_iops": self.raw_iops,
        }

    def lines(self) -> list[str]:
        return [
            f"Raw IOPS a {self.raid} set needs for {show(self.functional_iops)} IOPS at"
            f" {show_share(self.write_share)} writes:",
            "  raw IOPS = functional IOPS × (read share + write share × write penalty)",
            f"           = {show(self.functional_iops)} × {cost_terms(self.write_share, self.raid)}",
            f"           = {show(self.functional_iops)} × {show(backend_cost(self.write_share, self.raid))}",
            f"           = {show(self.raw_iops, 'IOPS')} (back-end)",
        ]


def functional_iops(raw_iops: Number, write_share: Number, raid: RaidLevel | int | str) -> FunctionalIops:
    """Front-end IOPS that ``raw_iops`` back-end IOPS give at ``write_share`` writes on ``raid``.

    >>> r = functional_iops(1000, "50%", 5)
    >>> r.functional_iops
    Fraction(400, 1)
    >>> print(r.text())
    Functional IOPS of a RAID 5 set at 50 % writes:
      functional IOPS = raw IOPS / (read share + write share × write penalty)
                      = 1000 / (0.5 + 0.5 × 4)
                      = 1000 / 2.5
                      = 400 IOPS (front-end)
    """
    raw = non_negative(raw_iops, "raw_iops", "IOPS")
    w = share(write_share, "write_share")
    level = raid_level(raid)
    return FunctionalIops(raw, w, level, raw / backend_cost(w, level))


def raw_iops_needed(functional_iops: Number, write_share: Number, raid: RaidLevel | int | str) -> RawIops:
    """Back-end IOPS needed to serve ``functional_iops`` host IOPS at ``write_share`` writes on ``raid``.

    The 2012 paper's one-array steady state (4,500 IOPS, Table 6) at its 99.8 % writes (Table 7) on
    RAID 10:

    >>> raw_iops_needed(4500, "99.8%", "10").raw_iops
    Fraction(8991, 1)
    """
    f = non_negative(functional_iops, "functional_iops", "IOPS")
    w = share(write_share, "write_share")
    level = raid_level(raid)
    return RawIops(f, w, level, f * backend_cost(w, level))
