"""The lab layer: the vocabulary a test plan speaks (power, readiness, metric sources, timeline).

    from labctl.lab import LabSession

    with LabSession(lab, clock) as s:
        s.power.on("first-25")                     # -> PowerReport (per machine, dispatch spread)
        s.wait_ready("first-25", timeout_s=600)    # -> {name: Readiness} (ready at t / timeout / error)
        s.power.state("first-25")                  # -> {name: MachineState}
        s.sources.for_plan()                       # -> metric sources for the recorder
        s.timeline.subscribe(recorder.record_event)

Names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Action": "labctl.lab.power",
    "MachineState": "labctl.lab.power",
    "PowerOutcome": "labctl.lab.power",
    "PowerReport": "labctl.lab.power",
    "State": "labctl.lab.power",
    "Readiness": "labctl.lab.ready",
    "DriverSettings": "labctl.lab.session",
    "LabSession": "labctl.lab.session",
    "Timeline": "labctl.lab.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'labctl.lab' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
