"""The lab's clock. Real labs run at scale 1; the simulated lab runs faster (e.g. 60x).

Everything that waits or timestamps goes through a :class:`LabClock`, so a plan written in lab
seconds ("sample for 360 s") runs unchanged on a real and on a simulated lab. Lab time is
``anchor + (wall - anchor) * scale``: two clocks with the same anchor and scale agree without
talking to each other (the simulator publishes its anchor in its state file).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass(frozen=True)
class LabClock:
    scale: float = 1.0
    anchor_wall_s: float = field(default_factory=time.time)

    def now(self) -> float:
        """Lab time, in seconds since the Unix epoch (as the lab's own devices would report it)."""
        wall = time.time()
        return self.anchor_wall_s + (wall - self.anchor_wall_s) * self.scale

    def now_dt(self) -> datetime:
        return datetime.fromtimestamp(self.now(), tz=UTC)

    def to_wall_s(self, lab_seconds: float) -> float:
        """A duration in lab seconds as wall-clock seconds."""
        return lab_seconds / self.scale

    def to_lab_s(self, wall_seconds: float) -> float:
        return wall_seconds * self.scale

    def sleep(self, lab_seconds: float, stop: threading.Event | None = None) -> bool:
        """Sleep for lab seconds. Returns False early if ``stop`` is set."""
        wall = max(0.0, lab_seconds / self.scale)
        if stop is None:
            time.sleep(wall)
            return True
        return not stop.wait(wall)

    def deadline(self, lab_seconds: float) -> float:
        """The lab time ``lab_seconds`` from now."""
        return self.now() + lab_seconds
