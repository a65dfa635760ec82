"""Metric sources: what the recorder samples. Each has a ``name`` and a ``read()``.

``read()`` returns a batch of :class:`~labctl.records.samples.Sample` (polled sources), or, for
``typeperf`` in streaming mode, an iterator that yields samples as the server prints each row
(``close()`` ends the stream). Samples carry the source's own timestamp where it has one
(typeperf rows, Unity query results, vCenter samples); PVS device status and Redfish power
readings have none, so they are stamped with the lab clock when read.

    srcs = session.sources.for_plan()           # everything the lab offers for a storm
    srcs = [session.sources.typeperf("pvs-01"), session.sources.pvs()]
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from labctl.drivers import pvs as pvs_driver
from labctl.drivers import typeperf as tp
from labctl.drivers.readings import Reading
from labctl.drivers.ssh import SshStream
from labctl.drivers.vsphere import HOST_COUNTERS
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, MachineKind
from labctl.lab.session import LabSession
from labctl.records.samples import Sample


def to_samples(source: str, readings: Iterable[Reading]) -> list[Sample]:
    return [Sample(source, r.entity, r.metric, r.unit, r.source_ts, r.value) for r in readings]


class TypeperfSource:
    """Windows performance counters of one server over SSH (CPU, memory, NICs, disks).

    Streaming (default): one ``typeperf ... -si S`` that runs until closed, each row becoming
    samples as it arrives. Polled: ``typeperf ... -sc 1 -si S`` per read.
    """

    def __init__(
        self,
        session: LabSession,
        machine: Machine,
        counters: Sequence[str] = tp.SERVER_COUNTERS,
        *,
        interval_s: float = 5.0,
        stream: bool = True,
    ):
        self.s = session
        self.machine = machine
        self.counters = tuple(counters)
        self.interval_s = interval_s
        self.stream = stream
        self.name = f"typeperf:{machine.name}"
        hw = machine.server_hardware
        self.memory_total_mb = hw.ram_gb * 1024 if hw else None
        self._stream: SshStream | None = None
        self._lock = threading.Lock()

    def read(self) -> Iterable[Sample]:
        target = self.s.ssh_target(self.machine)
        interval_wall = self.s.clock.to_wall_s(max(1.0, self.interval_s))
        if not self.stream:
            res = self.s.ssh.run(
                target,
                tp.sample_argv(self.counters, 1, self.interval_s),
                timeout_s=interval_wall * 2 + self.s.settings.ssh_connect_timeout_s + 10,
                action="read performance counters (typeperf)",
                check=True,
            )
            return to_samples(
                "typeperf",
                tp.samples_from_pdh(res.stdout, self.machine.name, memory_total_mb=self.memory_total_mb),
            )
        argv = ["typeperf", *self.counters, "-si", tp.interval_arg(self.interval_s)]
        st = self.s.ssh.stream(
            target,
            argv,
            idle_timeout_s=interval_wall * 3 + self.s.settings.ssh_connect_timeout_s + 10,
            action="stream performance counters (typeperf)",
        )
        with self._lock:
            self._stream = st
        return self._iterate(st)

    def _iterate(self, st: SshStream) -> Iterator[Sample]:
        parser = tp.PdhStream(self.machine.name, memory_total_mb=self.memory_total_mb)
        try:
            for line in st.lines():
                rows = parser.feed(line)
                if rows:
                    yield from to_samples("typeperf", rows)
        finally:
            st.close()

    def close(self) -> None:
        with self._lock:
            st, self._stream = self._stream, None
        if st is not None:
            st.close()


class PvsSource:
    """Boot time, retries and activity of every client, from one streaming server.

    Each client's value is recorded when it changes, and every ``refresh_s`` lab seconds in any
    case (sample-and-hold: a value holds until the next sample). Polling 100 clients x 4 figures
    every interval otherwise made nine tenths of a run's series file out of repeated values.
    """

    def __init__(self, session: LabSession, server: Machine, *, refresh_s: float = 60.0):
        self.s = session
        self.server = server
        self.name = f"pvs:{server.name}"
        self.refresh_s = refresh_s
        self._last: dict[tuple[str, str], tuple[float, float]] = {}  # (entity, metric) -> (value, ts)

    def read(self) -> list[Sample]:
        res = self.s.ssh.run(
            self.s.ssh_target(self.server),
            pvs_driver.DEVICE_INFO_COMMAND,
            timeout_s=60.0,
            action="read device status",
            check=True,
        )
        devices = pvs_driver.parse_device_info(res.stdout)
        return self._changed(to_samples("pvs", pvs_driver.readings(devices, self.s.clock.now())))

    def _changed(self, samples: list[Sample]) -> list[Sample]:
        out = []
        for x in samples:
            key = (x.entity, x.metric)
            last = self._last.get(key)
            if last is None or last[0] != x.value or x.source_ts - last[1] >= self.refresh_s:
                self._last[key] = (x.value, x.source_ts)
                out.append(x)
        return out


class RedfishPowerSource:
    """Power drawn by each server, from its BMC (``PowerConsumedWatts``)."""

    def __init__(self, session: LabSession, servers: Sequence[Machine]):
        self.s = session
        self.servers = [m for m in servers if m.bmc is not None]
        self.name = "redfish:power" if len(self.servers) != 1 else f"redfish:{self.servers[0].name}"

    def read(self) -> list[Sample]:
        out: list[Sample] = []
        errors = []
        for m in self.servers:
            try:
                out.extend(to_samples("redfish", [self.s.redfish(m).power_reading(self.s.clock.now)]))
            except EndpointError as exc:
                errors.append(exc)
        if errors and not out:
            raise errors[0]
        return out


class StorageSource:
    """Volume, tier and controller figures of one array (IOPS, MB/s, latency, I/O size, state),
    normalised by its driver whatever the kind (:mod:`labctl.drivers.storage.base`)."""

    def __init__(self, session: LabSession, array: str, *, interval_s: float = 5.0):
        self.s = session
        self.array = array
        self.interval_s = interval_s
        self.name = f"storage:{array}"
        self._started = False

    def read(self) -> list[Sample]:
        drv = self.s.storage(self.array)
        if not self._started:
            drv.start_metrics(self.interval_s)
            self._started = True
        kind = self.s.lab.storage[self.array].kind.value
        return to_samples(kind, drv.read_metrics().readings(self.array))

    def close(self) -> None:
        if self._started:
            self._started = False
            try:
                self.s.storage(self.array).stop_metrics()
            except EndpointError:
                pass


class VCenterPerfSource:
    """Host CPU, memory, ballooning and network (and optionally per-VM counters) from vCenter.

    vCenter stamps samples with its own clock; on a simulated lab that clock is vcsim's wall
    clock, so timestamps are mapped onto the lab timeline (identical on a real lab, scale 1).
    """

    def __init__(
        self,
        session: LabSession,
        vcenter: str,
        counters: Sequence[str] = HOST_COUNTERS,
        *,
        vm_counters: Sequence[str] = (),
        vms: Sequence[str] = (),
    ):
        self.s = session
        self.vcenter = vcenter
        self.counters = tuple(counters)
        self.vm_counters = tuple(vm_counters)
        self.vms = tuple(vms)
        self.name = f"vcenter:{vcenter}"

    def read(self) -> list[Sample]:
        vc = self.s.vcenter(self.vcenter)
        readings = vc.query_perf(vc.hosts(), self.counters, max_sample=1)
        if self.vm_counters and self.vms:
            refs, _ = vc.vm_refs(self.vms)
            readings += vc.query_perf(refs, self.vm_counters, max_sample=1)
        c = self.s.clock
        return [
            Sample(
                "vcenter",
                r.entity,
                r.metric,
                r.unit,
                c.anchor_wall_s + (r.source_ts - c.anchor_wall_s) * c.scale,
                r.value,
            )
            for r in readings
        ]


_S = TypeVar("_S")


class Sources:
    """Factory for the sources of one lab session; closes what it made."""

    def __init__(self, session: LabSession):
        self.s = session
        self._made: list[object] = []

    def _keep(self, src: _S) -> _S:
        self._made.append(src)
        return src

    def typeperf(self, machine: str | Machine, **kw: object) -> TypeperfSource:
        m = machine if isinstance(machine, Machine) else self.s.lab.machine(machine)
        return self._keep(TypeperfSource(self.s, m, **kw))  # type: ignore[arg-type]

    def pvs(self, server: str | Machine | None = None) -> list[PvsSource]:
        servers = (
            [server if isinstance(server, Machine) else self.s.lab.machine(server)]
            if server
            else self.s.streaming_servers
        )
        return [self._keep(PvsSource(self.s, m)) for m in servers]

    def redfish_power(self, selector: str = "servers") -> RedfishPowerSource:
        return self._keep(
            RedfishPowerSource(self.s, [m for m in self.s.machines(selector) if m.kind is MachineKind.SERVER])
        )

    def storage(self, array: str, **kw: object) -> StorageSource:
        return self._keep(StorageSource(self.s, array, **kw))  # type: ignore[arg-type]

    def vcenter(self, name: str, **kw: object) -> VCenterPerfSource:
        return self._keep(VCenterPerfSource(self.s, name, **kw))  # type: ignore[arg-type]

    def for_plan(self, *, interval_s: float = 5.0) -> list[object]:
        """Every source the lab offers: typeperf on the configuration's streaming, storage and
        share servers, PVS status, BMC power, each array and each vCenter."""
        lab = self.s.lab
        servers: dict[str, Machine] = {m.name: m for m in self.s.streaming_servers}
        if lab.configuration is not None:
            for n in (lab.configuration.vdisk_server, lab.configuration.write_cache_server):
                if n in lab.machines:
                    servers.setdefault(n, lab.machines[n])
        out: list[object] = [self.typeperf(m, interval_s=interval_s) for m in servers.values() if m.ssh]
        out += self.pvs()
        bmcs = [m for m in lab.servers if m.bmc is not None]
        if bmcs:
            out.append(self._keep(RedfishPowerSource(self.s, bmcs)))
        out += [self.storage(a, interval_s=interval_s) for a in lab.storage]
        out += [self.vcenter(v) for v in lab.vcenters]
        return out

    def close(self) -> None:
        for src in self._made:
            close = getattr(src, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    pass
        self._made.clear()
