"""vCenter performance statistics: batched QueryPerf over hosts, VMs and datastores, normalised.

vCenter's real-time statistics are 20 s samples (``intervalId`` 20), one value per counter and
instance, in vCenter's units: percent in hundredths, KB, KB/s, MHz, ms, I/Os per second (all
integers). Datastore I/O at 20 s is a host statistic: each host reports ``datastore.*`` with the
datastore's volume id as the instance (the last part of its ``summary.url``, e.g.
``ds:///vmfs/volumes/5a1b...-.../``); a datastore's IOPS are the sum over the hosts that use it and
its latency their IOPS-weighted mean. A VM's disk I/O is ``virtualDisk.*`` per virtual disk
(``scsi0:0``), summed the same way.

One round is one list of QuerySpecs (every host, the chosen VMs), built once and sent in chunks of
``batch`` specs (real-time queries have no entity limit; one large call is the cheapest for the
client, whose XML decoding is most of a round), on a few threads when there are several.

Normalised metrics (:data:`METRICS`): ``cpu_pct`` (%), ``cpu_mhz`` (MHz), ``mem_usage_pct`` (%),
``mem_active_kb``, ``mem_consumed_kb``, ``mem_balloon_kb`` (KB), ``net_kbps`` (KB/s) for hosts and
VMs; ``ds_read_iops``, ``ds_write_iops`` (IO/s), ``ds_read_latency_ms``, ``ds_write_latency_ms``
(ms) for VMs (their disks) and datastores. Entities are the host, VM and datastore names.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from pyVmomi import vim

from labctl.drivers.readings import Reading

if TYPE_CHECKING:
    from labctl.drivers.vsphere import CounterInfo, VCenterClient

REALTIME_INTERVAL_S = 20
ALL_INSTANCES = "*"

# vCenter counter -> (labctl metric, unit, factor from vCenter's unit)
ENTITY_METRICS: dict[str, tuple[str, str, float]] = {
    "cpu.usage.average": ("cpu_pct", "%", 0.01),
    "cpu.usagemhz.average": ("cpu_mhz", "MHz", 1.0),
    "mem.usage.average": ("mem_usage_pct", "%", 0.01),
    "mem.active.average": ("mem_active_kb", "KB", 1.0),
    "mem.consumed.average": ("mem_consumed_kb", "KB", 1.0),
    "mem.vmmemctl.average": ("mem_balloon_kb", "KB", 1.0),
    "net.usage.average": ("net_kbps", "KB/s", 1.0),
}
# per-instance I/O counters (group virtualDisk for VMs, datastore for hosts): name -> (metric, unit)
IO_METRICS: dict[str, tuple[str, str]] = {
    "numberReadAveraged": ("ds_read_iops", "IO/s"),
    "numberWriteAveraged": ("ds_write_iops", "IO/s"),
    "totalReadLatency": ("ds_read_latency_ms", "ms"),
    "totalWriteLatency": ("ds_write_latency_ms", "ms"),
}
_LATENCY_OF = {"totalReadLatency": "numberReadAveraged", "totalWriteLatency": "numberWriteAveraged"}

HOST_COUNTERS = tuple(ENTITY_METRICS)
VM_COUNTERS = (
    "cpu.usage.average",
    "cpu.usagemhz.average",
    "mem.usage.average",
    "mem.active.average",
    "mem.vmmemctl.average",
    "net.usage.average",
    *(f"virtualDisk.{n}.average" for n in IO_METRICS),
)
DATASTORE_COUNTERS = tuple(f"datastore.{n}.average" for n in IO_METRICS)
METRICS: dict[str, str] = {m: u for m, u, _ in ENTITY_METRICS.values()} | dict(IO_METRICS.values())


class PerfValue(NamedTuple):
    """One value of one sample, in vCenter's units (a tuple: a round makes tens of thousands)."""

    entity: str  # display name of the host or VM
    instance: str  # "" for the whole entity, a disk or a datastore's volume id
    counter: str  # group.name.rollup
    ts: float  # the sample's own time, epoch seconds
    value: float


@dataclass(frozen=True)
class PerfTarget:
    """Entities queried with one set of counters (each counter with its instance)."""

    entities: dict[str, Any]  # display name -> managed object
    counters: tuple[tuple[str, str], ...]  # (group.name.rollup, instance)


def volume_id(url: str) -> str:
    """A datastore's volume id, the instance of its ``datastore.*`` counters, from its URL."""
    return url.rstrip("/").rsplit("/", 1)[-1]


class PerfQuery:
    """QuerySpecs of every target, built once and sent each round (chunked, on a few threads)."""

    def __init__(
        self,
        client: VCenterClient,
        targets: Sequence[PerfTarget],
        *,
        interval_id: int = REALTIME_INTERVAL_S,
        batch: int = 5000,
        workers: int = 2,
    ):
        self.client = client
        self.batch = batch
        self.workers = workers
        resolved, missing = client.resolve_counters(c for t in targets for c, _ in t.counters)
        if missing:
            from labctl.drivers.vsphere import VSphereError  # vsphere imports this module

            raise VSphereError(
                client.endpoint,
                "query performance",
                f"counters not found: {', '.join(sorted(set(missing)))}",
                "check the names (group.name.rollup) against this vCenter's PerformanceManager",
            )
        self.by_key: dict[int, CounterInfo] = {c.key: c for c in resolved.values()}
        self.names: dict[str, str] = {}
        self.specs: list[Any] = []
        for t in targets:
            ids = [
                vim.PerformanceManager.MetricId(counterId=resolved[c].key, instance=i) for c, i in t.counters
            ]
            for name, obj in t.entities.items():
                self.names[obj._moId] = name
                self.specs.append(
                    vim.PerformanceManager.QuerySpec(
                        entity=obj, metricId=ids, intervalId=interval_id, maxSample=1, format="normal"
                    )
                )

    def run(self, *, max_sample: int = 1, start_time: datetime | None = None) -> list[PerfValue]:
        """The latest ``max_sample`` samples (after ``start_time``) of every target."""
        if max_sample < 1:
            raise ValueError("max_sample must be at least 1")
        if not self.specs:
            return []
        for spec in self.specs:
            spec.maxSample = max_sample
            spec.startTime = start_time
        pm = self.client.content.perfManager
        chunks = [self.specs[i : i + self.batch] for i in range(0, len(self.specs), self.batch)]

        def one(chunk: list[Any]) -> list[PerfValue]:
            got = self.client._call(
                f"query performance of {len(chunk)} entities",
                functools.partial(pm.QueryPerf, querySpec=chunk),
            )
            return _values(got, self.names, self.by_key)

        if len(chunks) == 1 or self.workers <= 1:
            return [v for c in chunks for v in one(c)]
        with ThreadPoolExecutor(
            max_workers=min(self.workers, len(chunks)), thread_name_prefix="queryperf"
        ) as pool:
            return [v for part in pool.map(one, chunks) for v in part]


def query(
    client: VCenterClient,
    targets: Sequence[PerfTarget],
    *,
    interval_id: int = REALTIME_INTERVAL_S,
    max_sample: int = 1,
    start_time: datetime | None = None,
    batch: int = 5000,
    workers: int = 2,
) -> list[PerfValue]:
    """The latest ``max_sample`` samples (after ``start_time``) of every target, in chunked QueryPerf calls."""
    q = PerfQuery(client, targets, interval_id=interval_id, batch=batch, workers=workers)
    return q.run(max_sample=max_sample, start_time=start_time)


def _values(results: Any, names: dict[str, str], by_key: dict[int, CounterInfo]) -> list[PerfValue]:
    out = []
    for em in results or []:
        entity = names.get(em.entity._moId, em.entity._moId)
        stamps = [s.timestamp.timestamp() for s in em.sampleInfo or []]
        for series in em.value or []:
            info = by_key.get(series.id.counterId)
            if info is None:
                continue
            for ts, v in zip(stamps, series.value or [], strict=False):
                if v is None or v < 0:  # -1: no data for that interval
                    continue
                out.append(PerfValue(entity, series.id.instance or "", info.name, ts, float(v)))
    return out


def entity_readings(values: Iterable[PerfValue]) -> list[Reading]:
    """Whole-entity counters (instance "") of hosts and VMs as normalised readings."""
    out = []
    for v in values:
        m = ENTITY_METRICS.get(v.counter)
        if m is not None and v.instance == "":
            out.append(Reading(v.entity, m[0], m[1], v.ts, v.value * m[2]))
    return out


def io_readings(
    values: Iterable[PerfValue], group: str, entity_of: dict[tuple[str, str], str]
) -> list[Reading]:
    """Per-instance I/O counters of ``group`` (virtualDisk, datastore) summed into entities: IOPS add
    up, latency is the IOPS-weighted mean (0 when nothing was done). ``entity_of`` maps (reporting
    entity, instance) to the entity the reading belongs to; pairs it does not name are left out."""
    # (entity, ts) -> counter name -> list of (value, weight source key)
    per: dict[tuple[str, float], dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for v in values:
        g, _, rest = v.counter.partition(".")
        name = rest.rsplit(".", 1)[0]
        if g != group or name not in IO_METRICS or not v.instance:
            continue
        target = entity_of.get((v.entity, v.instance))
        if target is None:
            continue
        per[(target, v.ts)][name].append((f"{v.entity}/{v.instance}", v.value))
    out = []
    for (target, ts), by_name in per.items():
        for name, vals in by_name.items():
            metric, unit = IO_METRICS[name]
            if name in _LATENCY_OF:
                weights = dict(by_name.get(_LATENCY_OF[name], []))
                total = sum(weights.get(src, 0.0) for src, _ in vals)
                value = sum(lat * weights.get(src, 0.0) for src, lat in vals) / total if total > 0 else 0.0
            else:
                value = sum(x for _, x in vals)
            out.append(Reading(target, metric, unit, ts, value))
    return out


class PerfReader:
    """Hosts, chosen VMs and datastores of one vCenter, read in one batched round per call."""

    def __init__(
        self,
        client: VCenterClient,
        *,
        vms: Sequence[str] = (),
        hosts: bool = True,
        datastores: bool = True,
        host_counters: Sequence[str] = HOST_COUNTERS,
        vm_counters: Sequence[str] = VM_COUNTERS,
        batch: int = 5000,
        workers: int = 2,
    ):
        self.client = client
        self.vms = tuple(vms)
        self.hosts = hosts
        self.datastores = datastores
        self.host_counters = tuple(host_counters)
        self.vm_counters = tuple(vm_counters)
        self.batch = batch
        self.workers = workers
        self._targets: list[PerfTarget] | None = None
        self._query: PerfQuery | None = None
        self._ds_of: dict[tuple[str, str], str] = {}  # (host, volume id) -> datastore

    @staticmethod
    def _instance(counter: str) -> str:
        return ALL_INSTANCES if counter.split(".", 1)[0] in ("virtualDisk", "datastore") else ""

    def targets(self) -> list[PerfTarget]:
        if self._targets is None:
            c = self.client
            targets = []
            if self.hosts or self.datastores:
                hosts = c.hosts()
                counters = list(self.host_counters) if self.hosts else []
                if self.datastores:
                    counters += DATASTORE_COUNTERS
                    volumes = {volume_id(d.url): d.name for d in c.datastores().values()}
                    self._ds_of = {(h, vol): name for h in hosts for vol, name in volumes.items()}
                targets.append(PerfTarget(hosts, tuple((x, self._instance(x)) for x in counters)))
            if self.vms:
                refs, unknown = c.vm_refs(self.vms)
                if unknown:
                    from labctl.drivers.vsphere import VSphereError  # vsphere imports this module

                    raise VSphereError(
                        c.endpoint,
                        "query performance",
                        f"VMs not found: {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}",
                        "check the VM names against the inventory",
                    )
                targets.append(PerfTarget(refs, tuple((x, self._instance(x)) for x in self.vm_counters)))
            self._targets = targets
        return self._targets

    def read_values(self, *, max_sample: int = 1, start_time: datetime | None = None) -> list[PerfValue]:
        if self._query is None:
            self._query = PerfQuery(self.client, self.targets(), batch=self.batch, workers=self.workers)
        return self._query.run(max_sample=max_sample, start_time=start_time)

    def readings(self, values: Sequence[PerfValue]) -> list[Reading]:
        """Normalised readings of one round: hosts and VMs, each VM's disks, each datastore."""
        vms = set(self.vms)
        out = [r for r in entity_readings(values) if self.hosts or r.entity in vms]
        if self.vms:
            disks = {(v.entity, v.instance): v.entity for v in values if v.entity in vms and v.instance}
            out += io_readings(values, "virtualDisk", disks)
        if self.datastores:
            out += io_readings(values, "datastore", self._ds_of)
        return out

    def read(self, *, max_sample: int = 1, start_time: datetime | None = None) -> list[Reading]:
        return self.readings(self.read_values(max_sample=max_sample, start_time=start_time))
