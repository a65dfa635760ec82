"""One session as the launcher holds it: its client process, milestones and workload's hello."""

from __future__ import annotations

import collections
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from labctl.launcher.connectors import Launch


@dataclass
class Session:
    id: str
    desktop: str
    user: str
    workload: str
    launch_ts: float
    state: str = "logging_in"
    proc: subprocess.Popen[bytes] | None = None
    launch: Launch | None = None
    client_ts: float | None = None
    marks: dict[str, float] = field(default_factory=dict)
    security: str = ""
    error: str = ""
    tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=20))
    hello: dict[str, Any] | None = None
    hello_ts: float | None = None
    clock_offset_s: float = 0.0  # launcher clock minus the desktop's, at hello
    ops: int = 0
    waterfall_sent: bool = False
    logoff_ts: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def live(self) -> bool:
        return self.state in ("logging_in", "active", "logging_off")
