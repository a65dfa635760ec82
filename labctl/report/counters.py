"""Which series a figure or a table column shows for a server: its CPU, used memory, the busier
of its NICs, and the write-cache volume (or its busiest volume), chosen from the cells' summaries
(``entities`` names them; peaks over the window decide between NICs), never from raw samples.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from labctl.report.run_view import VDI_HOST_SOURCES, CellView


@dataclass(frozen=True)
class Counter:
    key: str
    title: str
    metrics: tuple[str, ...]  # the first one the cells recorded wins
    unit: str  # axis label of the first metric
    server_level: bool = False  # an entity of the server itself ("pvs-01"), not "pvs-01/D:"
    ymax: float | None = None
    scale: dict[str, tuple[float, str]] | None = None  # metric -> (factor, unit)


CPU = Counter("cpu", "CPU utilisation", ("cpu_pct",), "%", server_level=True, ymax=105)
MEMORY = Counter("memory", "Used memory", ("memory_used_mb",), "MB", server_level=True)
NIC = Counter(
    "nic",
    "NIC utilisation (outbound)",
    ("nic_sent_util_pct", "nic_sent_bytes_per_s"),
    "%",
    ymax=105,
    scale={"nic_sent_bytes_per_s": (1 / 1e6, "MB/s")},
)
DISK = Counter("disk", "Average disk queue length", ("disk_queue_len",), "requests")
COUNTERS = (CPU, MEMORY, NIC, DISK)

_NOT_A_DEVICE = ("Loopback", "_Total", "isatap", "Teredo")


def _device(entity: str, server: str) -> bool:
    return entity.startswith(server + "/") and not any(x in entity for x in _NOT_A_DEVICE)


@dataclass(frozen=True)
class Picked:
    """The series a chart of ``counter`` shows for ``server``."""

    counter: Counter
    server: str
    entity: str
    metric: str
    factor: float
    unit: str
    note: str  # which entity and why, for the caption

    @property
    def ymax(self) -> float | None:
        return self.counter.ymax if self.factor == 1.0 else None


def write_cache_disk(cells: Sequence[CellView], server: str) -> str | None:
    """The write-cache volume the cells name, when it is on ``server``."""
    for c in cells:
        wc = c.entity("write_cache_disk")
        if wc and wc.startswith(server + "/"):
            return wc
    return None


def pick(counter: Counter, server: str, cells: Sequence[CellView]) -> Picked | None:
    """The entity and metric a chart or column of ``counter`` shows for ``server`` over ``cells``:
    the server itself for CPU and memory; the write-cache volume when it is on this server;
    else the device of the server with the highest peak in the cells' summaries (the loaded NIC
    of two, like the paper's figure)."""
    for metric in counter.metrics:
        peaks: dict[str, float] = defaultdict(lambda: -math.inf)
        for c in cells:
            for m in c.metrics.values():
                if m.metric != metric:
                    continue
                ok = m.entity == server if counter.server_level else _device(m.entity, server)
                if ok:
                    peaks[m.entity] = max(peaks[m.entity], m.peak if m.peak is not None else -math.inf)
        if not peaks:
            continue
        factor, unit = (
            counter.scale.get(metric, (1.0, counter.unit)) if counter.scale else (1.0, counter.unit)
        )
        wc = write_cache_disk(cells, server) if counter is DISK else None
        if wc in peaks:
            return Picked(counter, server, wc, metric, factor, unit, f"{wc} (the write-cache volume)")
        chosen = max(peaks, key=lambda e: (peaks[e], e))
        note = chosen
        if len(peaks) > 1:
            others = ", ".join(e.removeprefix(server + "/") for e in sorted(peaks) if e != chosen)
            note = f"{chosen}, the busiest of {len(peaks)} (also {others})"
        return Picked(counter, server, chosen, metric, factor, unit, note)
    return None


@dataclass(frozen=True)
class Server:
    name: str
    role: str  # "streaming server", "write cache and vDisks", "" (another measured server)

    @property
    def title(self) -> str:
        return f"{self.name} ({self.role})" if self.role else self.name


def servers(cells: Sequence[CellView]) -> list[Server]:
    """The servers the cells measured, streaming servers first: those the summaries name, then
    every other machine with a CPU series (the second streaming server and the NAS of HA)."""
    streaming: list[str] = []
    roles: dict[str, str] = {}
    for c in cells:
        for key, value in sorted(c.entities.items()):
            if key.startswith("streaming_server") and value not in streaming:
                streaming.append(value)
    for c in cells:
        for key, role in (("write_cache_disk", "write cache and vDisks"), ("share_server", "file share")):
            named = c.entity(key)
            if named:
                host = named.split("/", 1)[0]
                if host not in streaming:
                    roles.setdefault(host, role)
    # a VDI host the lab also has (vCenter's) is no server of a 2007 storm: no frames for it
    measured = sorted(
        {
            m.entity
            for c in cells
            for m in c.metrics.values()
            if m.metric == "cpu_pct" and m.source not in VDI_HOST_SOURCES
        }
    )
    measured = [e for e in measured if "/" not in e]
    out = [Server(s, "streaming server") for s in streaming]
    # unnamed servers next (HA's second streaming server), then the storage and share servers
    others = sorted((s for s in measured if s not in streaming), key=lambda s: (s in roles, s))
    out += [Server(s, roles.get(s, "")) for s in others]
    return out
