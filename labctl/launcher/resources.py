"""The launcher's own CPU and memory (itself and its clients), so a saturated launcher is seen as
one and not blamed on the hosts. Linux reads /proc; elsewhere nothing is reported."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
_PAGE_MB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 1e6


def _proc(pid: int) -> tuple[float, float]:
    """(cpu seconds incl. reaped children, resident MB) of one process."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = sum(int(x) for x in f[11:15]) * _TICK_S  # utime stime cutime cstime
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE_MB
        return cpu, rss
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0


class Usage:
    """CPU % (of one core) since the previous sample, and resident memory, of launcher + clients."""

    def __init__(self) -> None:
        self._last: tuple[float, float] | None = None

    def sample(self, client_pids: list[int]) -> dict[str, float]:
        if not sys.platform.startswith("linux"):
            return {}
        cpu, rss = _proc(os.getpid())
        for pid in client_pids:
            c, r = _proc(pid)
            cpu, rss = cpu + c, rss + r
        now = time.monotonic()
        pct = 0.0
        if self._last is not None and now > self._last[0]:
            pct = max(0.0, (cpu - self._last[1]) / (now - self._last[0]) * 100.0)
        self._last = (now, cpu)
        return {
            "launcher_cpu_pct": round(pct, 1),
            "launcher_cpu_s": round(cpu, 2),
            "launcher_rss_mb": round(rss, 1),
            "launcher_load1": round(os.getloadavg()[0], 2),
        }
