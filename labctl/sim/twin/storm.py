"""Fast-forward: run a whole boot storm in process, without sockets or wall-clock waits.

``run_storm(lab, 100)`` wakes the first 100 clients at once (as Wake-on-LAN from the orchestrator
does, within ``wol_spread_s``), samples the servers' counters every ``sample_s`` lab seconds the way
perfmon does (rates from deltas of the raw counters), and returns the series with per-client
boot times and retries. The model's own tests and ``labctl sim calibrate`` use it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.model import Lab, Machine, MachineKind
from labctl.sim.twin.interface import PowerAction
from labctl.sim.twin.model import TwinModel
from labctl.sim.twin.topology import StationKind
from labctl.sim.twin.workload import Phase

STORM_WINDOW_S = 360.0  # the 2007 paper's 6-minute boot storm


@dataclass
class StormResult:
    clients: int
    configuration: str
    t: np.ndarray  # sample times, lab s after the first magic packet
    cpu_pct: dict[str, np.ndarray]  # server -> % Processor Time per sample
    nic_out_pct: dict[str, np.ndarray]  # "server/port" -> outbound utilisation per sample, %
    disk_queue: dict[str, np.ndarray]  # "server:volume" -> Avg. Disk Queue Length per sample
    disk_reads: dict[str, float]  # "server:volume" -> reads during the run
    disk_writes: dict[str, float]
    mem_available_mb: dict[str, np.ndarray]
    boot_time_s: np.ndarray  # per client (nan: did not finish)
    retries: np.ndarray  # per client, in the run window
    first_contact_s: float  # earliest first network contact, s after the first magic packet
    last_agent_s: float  # latest agent start
    wall_s: float  # wall-clock time the run took
    steps: int
    notes: list[str] = field(default_factory=list)

    @property
    def booted(self) -> int:
        return int(np.isfinite(self.boot_time_s).sum())

    def mean_boot_s(self) -> float:
        ok = np.isfinite(self.boot_time_s)
        return float(self.boot_time_s[ok].mean()) if ok.any() else float("nan")

    def window(self) -> np.ndarray:
        """Samples inside the boot window (first network contact to last agent start)."""
        return (self.t > self.first_contact_s) & (self.t <= self.last_agent_s + 1e-9)


def scaled_lab(lab: Lab, clients: int) -> Lab:
    """The same lab with ``clients`` clients cloned from the first one (names, MACs, IPs)."""
    proto = lab.clients[0]
    others = {k: m for k, m in lab.machines.items() if m.kind is not MachineKind.CLIENT}
    stem = proto.name.rsplit("-", 1)[0] if "-" in proto.name else proto.name
    width = max(3, len(str(clients)))
    new: dict[str, Machine] = {}
    for i in range(clients):
        name = f"{stem}-{i + 1:0{width}d}"
        mac = "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}".format(
            *(((i + 1) >> s) & 0xFF for s in (32, 24, 16, 8, 0))
        )
        new[name] = proto.model_copy(update={"name": name, "mac": mac, "ip": None})
    machines = {**new, **others}
    return lab.model_copy(update={"machines": machines, "groups": {}})


def warm_caches(model: TwinModel) -> None:
    """Servers that booted this image before hold its boot files in their file cache."""
    boot_chunks = np.arange(0, int(model.table.copy_base_chunk))
    for cache in model.caches.values():
        cache.warm(boot_chunks, model.t)


def run_storm(
    lab: Lab,
    clients: int | None = None,
    *,
    duration_s: float = STORM_WINDOW_S,
    sample_s: float = 1.0,
    warm_cache: bool = True,
    wol_spread_s: float = 0.5,
    model: TwinModel | None = None,
) -> StormResult:
    """Boot ``clients`` clients (default: all) at once and sample the servers for ``duration_s``."""
    started = time.perf_counter()
    n = len(lab.clients) if clients is None else clients
    if n > len(lab.clients):
        lab = scaled_lab(lab, n)
    if model is None:
        model = TwinModel(lab, start_t=0.0)
        if warm_cache:
            warm_caches(model)
    t0 = model.t
    names = model.topo.client_names[:n]
    spread = np.linspace(0.0, wol_spread_s, n) if n > 1 else np.zeros(1)
    pending = list(zip(spread.tolist(), names, strict=True))
    sampler = Sampler(model)
    sampler.sample()
    times = np.arange(sample_s, duration_s + 1e-9, sample_s)
    retries_before = model.retries.copy()
    for ts in times:
        while pending and pending[0][0] <= ts:
            at, name = pending.pop(0)
            model.advance_to(t0 + at)
            model.power(name, PowerAction.ON)
        model.advance_to(t0 + ts)
        sampler.sample()
    idx = np.array([model.client_index[c] for c in names])
    boot = model.last_boot_s[idx].copy()
    boot[model.boot_count[idx] == 0] = np.nan
    starts = model.boot_start[idx] - t0
    ends = starts + boot
    res = StormResult(
        clients=n,
        configuration=lab.configuration.name if lab.configuration else "",
        t=times,
        cpu_pct=sampler.series("cpu"),
        nic_out_pct=sampler.series("nic"),
        disk_queue=sampler.series("queue"),
        disk_reads=sampler.totals("reads"),
        disk_writes=sampler.totals("writes"),
        mem_available_mb=sampler.series("mem"),
        boot_time_s=boot,
        retries=(model.retries[idx] - np.where(model.boot_count[idx] > 0, 0, retries_before[idx])).astype(
            float
        ),
        first_contact_s=float(np.nanmin(starts)) if np.isfinite(starts).any() else float("nan"),
        last_agent_s=float(np.nanmax(ends)) if np.isfinite(ends).any() else float("nan"),
        wall_s=time.perf_counter() - started,
        steps=model.steps,
    )
    return res


class Sampler:
    """Perfmon-style sampling of the model's raw counters: each sample is the rate over the interval
    since the previous one (``% Processor Time``, Bytes Sent/s, Avg. Disk Queue Length), memory is
    the instantaneous value. Whatever the interval, it is a counter delta, as typeperf computes it.
    """

    def __init__(self, model: TwinModel):
        self.m = model
        self.times: list[float] = []
        self.rows: list[dict[str, float]] = []
        self.prev: dict[str, float] | None = None
        self.prev_t = model.t
        self.first: dict[str, float] | None = None

    def _raw(self) -> dict[str, float]:
        m = self.m
        raw: dict[str, float] = {}
        for name, node in m.topo.servers.items():
            raw[f"cpu|{name}"] = float(m.busy_s[node.cpu]) / float(m.topo.m[node.cpu])
            for j, (st, st_in) in enumerate(zip(node.nic_out, node.nic_in, strict=True)):
                # Bytes Sent (Received) as the counter counts them, over Current Bandwidth (bits),
                # as perfmon does
                per_busy_s = node.nic_rate * 8.0 / (node.hw.nics.speed_gbps * 1e9)
                raw[f"nic|{name}/{j}"] = float(m.busy_s[st]) * per_busy_s
                raw[f"nicin|{name}/{j}"] = float(m.busy_s[st_in]) * per_busy_s
            raw[f"mem|{name}"] = node.hw.ram_gb * 1024.0 - m.memory_used_mb(name)
            for v in node.volumes:
                key = f"{name}:{v.volume.name}"
                raw[f"queue|{key}"] = float(m.q_integral[v.station])
                raw[f"reads|{key}"] = float(m.st_reads[v.station])
                raw[f"writes|{key}"] = float(m.st_writes[v.station])
        return raw

    def sample(self) -> None:
        raw = self._raw()
        if self.prev is not None:
            dt = max(self.m.t - self.prev_t, 1e-9)
            row: dict[str, float] = {}
            for k, v in raw.items():
                kind = k.split("|", 1)[0]
                if kind == "mem":
                    row[k] = v
                elif kind in ("cpu", "nic", "nicin"):
                    row[k] = min(100.0, 100.0 * (v - self.prev[k]) / dt)
                elif kind == "queue":
                    row[k] = (v - self.prev[k]) / dt
            self.rows.append(row)
            self.times.append(self.m.t)
        else:
            self.first = raw
        self.prev, self.prev_t = raw, self.m.t
        self.last = raw

    def series(self, kind: str) -> dict[str, np.ndarray]:
        keys = [k for k in (self.rows[0] if self.rows else {}) if k.startswith(kind + "|")]
        return {k.split("|", 1)[1]: np.array([r[k] for r in self.rows]) for k in keys}

    def totals(self, kind: str) -> dict[str, float]:
        assert self.first is not None
        return {
            k.split("|", 1)[1]: self.last[k] - self.first[k] for k in self.last if k.startswith(kind + "|")
        }


__all__ = [
    "STORM_WINDOW_S",
    "Phase",
    "Sampler",
    "StationKind",
    "StormResult",
    "run_storm",
    "scaled_lab",
    "warm_caches",
]
