"""The reference papers' sizing arithmetic, exact, as pure functions (``labctl size`` on the command line).

One module per calculator family; each function takes plain typed inputs, computes with fractions,
and returns a result with its inputs, outputs and the formula with the numbers filled in:

- :mod:`.raid`: :func:`functional_iops`, :func:`raw_iops_needed` (RAID write penalty);
- :mod:`.drives`: :func:`drives_needed`, :func:`storm_drives` (steady state and boot storm),
  :func:`raid_set_functional_iops`, default IOPS per drive type with their source;
- :mod:`.capacity`: :func:`desktops_per_array` (the 2012 paper's capacity formula),
  :func:`capacity_headroom`;
- :mod:`.measured`: :func:`size_from_measurements` over a :class:`MeasuredProfile`;
- :mod:`.network`: :func:`nic_ports_needed` (the 2007 paper's NIC reasoning).

Rounding (:mod:`.exact`): what must be provisioned rounds up, what must fit rounds down.
"""

from labctl.sizing.capacity import CapacityHeadroom, DesktopsByCapacity, capacity_headroom, desktops_per_array
from labctl.sizing.drives import (
    DEFAULT_IOPS_PER_DRIVE,
    DrivesNeeded,
    DriveType,
    StormDrives,
    booting_desktops,
    drives_needed,
    raid_set_functional_iops,
    storm_drives,
)
from labctl.sizing.exact import SizingInputError
from labctl.sizing.load import Phase, PhaseLoad
from labctl.sizing.measured import (
    ArrayCapability,
    MeasuredProfile,
    MeasuredSizing,
    per_desktop_iops,
    size_from_measurements,
)
from labctl.sizing.network import NicPorts, nic_ports_needed
from labctl.sizing.raid import FunctionalIops, RaidLevel, RawIops, functional_iops, raw_iops_needed
from labctl.sizing.result import SizingResult

__all__ = [
    "DEFAULT_IOPS_PER_DRIVE",
    "ArrayCapability",
    "CapacityHeadroom",
    "DesktopsByCapacity",
    "DriveType",
    "DrivesNeeded",
    "FunctionalIops",
    "MeasuredProfile",
    "MeasuredSizing",
    "NicPorts",
    "Phase",
    "PhaseLoad",
    "RaidLevel",
    "RawIops",
    "SizingInputError",
    "SizingResult",
    "StormDrives",
    "booting_desktops",
    "capacity_headroom",
    "desktops_per_array",
    "drives_needed",
    "functional_iops",
    "nic_ports_needed",
    "per_desktop_iops",
    "raid_set_functional_iops",
    "raw_iops_needed",
    "size_from_measurements",
    "storm_drives",
]
