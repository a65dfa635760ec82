"""The one value type metric-reading drivers return; the lab layer stamps it into a Sample.

Drivers sit below the lab layer, so they do not build :class:`labctl.records.samples.Sample`
themselves; a :class:`Reading` is a Sample without its source name.
"""

from __future__ import annotations

from typing import NamedTuple


class Reading(NamedTuple):
    entity: str  # machine, NIC instance, volume, LUN ... e.g. "pvs-01/D:"
    metric: str  # e.g. "cpu_pct"
    unit: str  # e.g. "%"
    source_ts: float  # seconds since the epoch, as the source reported it
    value: float
