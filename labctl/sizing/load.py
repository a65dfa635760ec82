"""A desktop's storage load in one phase of its day (boot, login, steady state).

The 2012 paper's Table 7 (task worker, PVS write cache on the desktop's disk) is the example:
steady 7-8 IOPS per desktop at 0.2 % reads / 99.8 % writes, login 11-13 at 3 / 97 %, boot 16-18 at
13 / 87 %.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from labctl.sizing.exact import Number, non_negative, share, show, show_share


class Phase(StrEnum):
    BOOT = "boot"
    LOGIN = "login"
    STEADY = "steady"


@dataclass(frozen=True)
class PhaseLoad:
    """Host (front-end) IOPS one desktop generates in a phase, and the share of them that are writes."""

    iops_per_desktop: Fraction
    write_share: Fraction

    @classmethod
    def of(cls, iops_per_desktop: Number, write_share: Number, prefix: str = "") -> PhaseLoad:
        """Validated; errors name ``{prefix}iops_per_desktop`` / ``{prefix}write_share``.

        >>> PhaseLoad.of("16", "87%")
        PhaseLoad(iops_per_desktop=Fraction(16, 1), write_share=Fraction(87, 100))
        """
        return cls(
            non_negative(iops_per_desktop, f"{prefix}iops_per_desktop", "IOPS"),
            share(write_share, f"{prefix}write_share"),
        )

    def __str__(self) -> str:
        return f"{show(self.iops_per_desktop)} IOPS per desktop at {show_share(self.write_share)} writes"
