"""The two records everything measured in a lab turns into: metric samples and timeline events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One value of one metric of one entity, stamped with the *source's* own timestamp."""

    source: str  # e.g. "typeperf", "redfish", "unity", "vcenter", "pvs"
    entity: str  # machine, NIC instance, volume, LUN ... e.g. "pvs-01/D:"
    metric: str  # e.g. "cpu_pct", "nic_sent_bytes_per_s", "disk_queue_len"
    unit: str  # e.g. "%", "B/s", "requests", "s", "MB"
    source_ts: float  # lab seconds since the Unix epoch, as the source reported it
    value: float


@dataclass(frozen=True)
class Event:
    """Something that happened: a power action, a state change, a failure, a phase of a plan."""

    lab_ts: float  # the orchestrator's lab clock when it was recorded
    kind: str  # e.g. "power.action", "power.state", "ready", "timeout", "error", "phase"
    target: str  # machine, group or endpoint name ("" for the run itself)
    detail: dict[str, Any] = field(default_factory=dict)
