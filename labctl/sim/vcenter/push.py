"""What the twin's side sends labctl-vcsim: state changes since the last push, and a snapshot of
the cumulative counters at each 20 lab-second boundary.

Only VMs, hosts and datastores whose state changed are sent (a 3,000-desktop lab changes a few
dozen per tick). Counters go as base64 columns of little-endian float64, in the topology's order,
so a snapshot of 3,000 VMs is ~450 KB of JSON that both sides encode in about a millisecond.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labctl.clock import LabClock
from labctl.sim.vcenter.columns import DS_FIELDS, HOST_FIELDS, VM_FIELDS, GuestColumns, PerfColumns
from labctl.sim.vcenter.topology import Topology

REALTIME_INTERVAL_S = 20.0  # vCenter's real-time statistics interval, lab seconds


def b64(values: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode()


def boundary_of(lab_t: float) -> float:
    """The last 20 s boundary at or before ``lab_t`` (boundaries are multiples of 20 lab seconds)."""
    return math.floor(lab_t / REALTIME_INTERVAL_S + 1e-9) * REALTIME_INTERVAL_S


def wall_of(clock: LabClock, lab_t: float) -> float:
    """The wall time at which the lab clock reads ``lab_t`` (vCenter stamps samples in wall time)."""
    return clock.anchor_wall_s + (lab_t - clock.anchor_wall_s) / clock.scale


def perf_body(p: PerfColumns, boundary: float, clock: LabClock) -> dict[str, Any]:
    return {
        "boundary_lab_s": boundary,
        "lab_time_s": p.lab_time_s,
        "stamp_wall_s": wall_of(clock, boundary),
        "vm": {f: b64(p.vm[f], "<f8") for f in VM_FIELDS},
        "vm_on": b64(p.vm_on, "u1"),
        "vm_host": b64(p.vm_host, "<i4"),
        "host": {f: b64(p.host[f], "<f8") for f in HOST_FIELDS},
        "host_datastore": {f: b64(p.host_datastore[f], "<f8") for f in DS_FIELDS},
    }


def zero_body(p: PerfColumns, start_lab_s: float, clock: LabClock) -> dict[str, Any]:
    """The counters at the twin's start, all zero: a snapshot before the first one, so vCenter has
    a sample (the average since the start) as soon as the first snapshot arrives."""
    boundary = min(boundary_of(start_lab_s), boundary_of(p.lab_time_s) - REALTIME_INTERVAL_S)
    zero = PerfColumns(
        start_lab_s,
        {f: np.zeros_like(v) for f, v in p.vm.items()} | {f: p.vm[f] for f in ("vcpus", "mem_configured_kb")},
        np.zeros_like(p.vm_on),
        p.vm_host,
        {f: np.zeros_like(v) for f, v in p.host.items()}
        | {f: p.host[f] for f in ("cpu_capacity_mhz", "cpu_mhz_per_core", "mem_total_kb")},
        {f: np.zeros_like(v) for f, v in p.host_datastore.items()},
    )
    return perf_body(zero, boundary, clock)


@dataclass
class Pending:
    """One push, and what to remember once labctl-vcsim has taken it."""

    body: dict[str, Any]
    vm_rows: np.ndarray  # VM indexes sent
    guest: GuestColumns
    hosts_sent: bool = False
    datastores_sent: bool = False
    boundary: float | None = None


@dataclass
class StatePusher:
    """The last state labctl-vcsim took, to send only what changed."""

    topo: Topology
    power: np.ndarray = field(init=False)
    tools: np.ndarray = field(init=False)
    stunned: np.ndarray = field(init=False)
    host: np.ndarray = field(init=False)
    ips: list[str | None] = field(init=False)
    maintenance: np.ndarray | None = None
    ds_capacity: np.ndarray | None = None
    ds_free: np.ndarray | None = None
    acked: int = 0
    last_boundary: float = -math.inf

    def __post_init__(self) -> None:
        # labctl-vcsim starts with every VM off, no Tools, on its topology host
        n = len(self.topo.vms)
        names = [h.name for h in self.topo.host_specs] or list(self.topo.hosts)
        pos = {h: i for i, h in enumerate(names)}
        self.host_names = names
        self.power = np.zeros(n, dtype=bool)
        self.tools = np.zeros(n, dtype=bool)
        self.stunned = np.zeros(n, dtype=bool)
        self.host = np.array([pos.get(v.host, -1) for v in self.topo.vms], dtype=np.int64)
        self.ips = [None] * n
        self.maintenance = np.zeros(len(names), dtype=bool)
        self.ds_capacity = np.array([float(d.capacity_bytes) for d in self.topo.datastores])
        self.ds_free = self.ds_capacity.copy()

    def changed_vms(self, g: GuestColumns) -> np.ndarray:
        up = g.tools & g.power_on
        mask = (
            (g.power_on != self.power)
            | (up != self.tools)
            | (g.stunned != self.stunned)
            | (g.host != self.host)
        )
        for i in np.flatnonzero(up & ~mask):
            if g.ips[i] != self.ips[i]:
                mask[i] = True
        return np.flatnonzero(mask)

    def build(
        self, g: GuestColumns, ack: int, perf: PerfColumns | None, clock: LabClock, reports_hosts: bool
    ) -> Pending | None:
        """The next push, or None when nothing changed and nothing new was applied."""
        rows = self.changed_vms(g)
        vms = []
        for i in rows:
            up = bool(g.tools[i] and g.power_on[i])
            h = int(g.host[i])
            vms.append(
                {
                    "name": self.topo.vms[i].name,
                    "power": "on" if g.power_on[i] else "off",
                    "tools": up,
                    "ip": (g.ips[i] or "") if up else "",
                    "host": self.host_names[h] if 0 <= h < len(self.host_names) else "",
                    "stunned": bool(g.stunned[i]),
                }
            )
        hosts = []
        if g.maintenance is not None and self.maintenance is not None:
            for k in np.flatnonzero(g.maintenance != self.maintenance):
                hosts.append({"name": self.host_names[k], "maintenance": bool(g.maintenance[k])})
        stores = []
        if g.ds_free_bytes is not None and g.ds_capacity_bytes is not None:
            assert self.ds_capacity is not None and self.ds_free is not None
            diff = (g.ds_free_bytes != self.ds_free) | (g.ds_capacity_bytes != self.ds_capacity)
            for j in np.flatnonzero(diff):
                stores.append(
                    {
                        "name": self.topo.datastores[j].name,
                        "capacity_bytes": float(g.ds_capacity_bytes[j]),
                        "free_bytes": float(g.ds_free_bytes[j]),
                    }
                )
        boundary = None
        body: dict[str, Any] = {"ack": ack, "reports_hosts": reports_hosts}
        if perf is not None:
            boundary = boundary_of(perf.lab_time_s)
            body["perf"] = perf_body(perf, boundary, clock)
        if not (vms or hosts or stores or perf is not None or ack > self.acked):
            return None
        body.update(vms=vms, hosts=hosts, datastores=stores)
        return Pending(body, rows, g, bool(hosts), bool(stores), boundary)

    def taken(self, p: Pending, ignored: tuple[str, ...]) -> None:
        """labctl-vcsim took ``p``; the VMs it ignored (their state predates a power operation) are
        sent again next time."""
        g = p.guest
        rows = p.vm_rows
        up = g.tools & g.power_on
        self.power[rows] = g.power_on[rows]
        self.tools[rows] = up[rows]
        self.stunned[rows] = g.stunned[rows]
        self.host[rows] = g.host[rows]
        for i in rows:
            self.ips[i] = g.ips[i] if up[i] else None
        if p.hosts_sent and g.maintenance is not None:
            self.maintenance = g.maintenance.copy()
        if p.datastores_sent and g.ds_free_bytes is not None and g.ds_capacity_bytes is not None:
            self.ds_free = g.ds_free_bytes.copy()
            self.ds_capacity = g.ds_capacity_bytes.copy()
        if ignored:
            index = {v.name: i for i, v in enumerate(self.topo.vms)}
            for name in ignored:
                i = index.get(name)
                if i is not None:
                    self.power[i] = not g.power_on[i]  # differs from any state: sent again
        self.acked = max(self.acked, int(p.body["ack"]))
        if p.boundary is not None:
            self.last_boundary = p.boundary

    def due(self, lab_t: float) -> bool:
        """A new 20 s boundary has passed since the last snapshot labctl-vcsim took."""
        return boundary_of(lab_t) > self.last_boundary
