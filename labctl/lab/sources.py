"""Metric sources: what the recorder samples. Each has a ``name``, an ``interval_s`` (the lab
seconds it promises between two samples of a series) and a ``read()``.

``read()`` returns a batch of :class:`~labctl.records.samples.Sample` (polled sources), or, for
``typeperf`` in streaming mode, an iterator that yields samples as the server prints each row
(``close()`` ends the stream). Samples carry the source's own timestamp where it has one
(typeperf rows, Unity query results, vCenter samples); PVS device status and Redfish power
readings have none, so they are stamped with the lab clock when read.

Polled sources read their endpoints concurrently, each against its own deadline (one poll
interval, at least ``DEADLINE_FLOOR_WALL_S``), with :class:`~labctl.lab.polling.EndpointPoller`: a BMC that
hangs or answers 503 never holds back another BMC's samples. When an endpoint fails, ``read()``
raises :class:`~labctl.records.samples.PartialRead` naming each failed endpoint and carrying the
samples the others gave.

    srcs = session.sources.for_plan()           # everything the lab offers for a storm
    srcs = [session.sources.typeperf("pvs-01"), session.sources.pvs()]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from labctl.drivers import pvs as pvs_driver
from labctl.drivers import typeperf as tp
from labctl.drivers import vsphere_perf as perf
from labctl.drivers.readings import Reading
from labctl.drivers.ssh import SshStream
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, MachineKind
from labctl.lab.context import LabContext
from labctl.lab.polling import EndpointPoller
from labctl.records.samples import PartialRead, Sample

# A polled endpoint that has not answered within one interval, or this many wall seconds if that
# is longer, is reported as failing for that read; its samples come with a later read if it answers
# after all. The floor is wall time because the simulators' own work is: at 60x one interval is
# 83 ms, and a TLS login or a vcsim performance query on a 2-core machine running two test workers
# took over 1 s (a healthy vCenter reported "no answer within 60 lab s").
DEADLINE_FLOOR_WALL_S = 2.0
# A poll waits for the endpoints' answers half an interval, at least this long (a read that takes
# longer is returned by the next poll with its own timestamp, so nothing is lost).
WAIT_FLOOR_WALL_S = 0.05


def to_samples(source: str, readings: Iterable[Reading]) -> list[Sample]:
    return [Sample(source, r.entity, r.metric, r.unit, r.source_ts, r.value) for r in readings]


_E = TypeVar("_E", bound=Hashable)


class PolledSource(Generic[_E]):
    """A polled source over endpoints read concurrently, each against its own deadline.

    Subclasses set ``name`` and ``interval_s`` and implement ``_endpoints()``, ``_endpoint_name()``
    and ``_read_one(endpoint) -> list[Sample]`` (run in the endpoint's own thread, never two at
    once for one endpoint).
    """

    name: str
    interval_s: float | None
    ctx: LabContext

    _poller: EndpointPoller[_E, list[Sample]] | None = None

    def _endpoints(self) -> Sequence[_E]:
        raise NotImplementedError

    def _endpoint_name(self, ep: _E) -> str:
        return str(ep)

    def _read_one(self, ep: _E) -> list[Sample]:
        raise NotImplementedError

    def _poll_lab_s(self) -> float:
        """Lab seconds between two reads: the deadline of one endpoint's read and the wait."""
        return self.interval_s if self.interval_s is not None else 5.0

    def _make_poller(self) -> EndpointPoller[_E, list[Sample]]:
        clock = self.ctx.clock
        deadline = max(DEADLINE_FLOOR_WALL_S, clock.to_wall_s(self._poll_lab_s()))
        return EndpointPoller(
            self._endpoints(),
            self._read_one,
            name=self._endpoint_name,
            deadline_wall_s=deadline,
            deadline_text=f"{clock.to_lab_s(deadline):.3g} lab s",
            # a poll waits at most half an interval: no endpoint's hang delays the next read of another
            wait_wall_s=max(WAIT_FLOOR_WALL_S, 0.5 * clock.to_wall_s(self._poll_lab_s())),
        )

    def read(self) -> list[Sample]:
        if self._poller is None:
            self._poller = self._make_poller()
        poller = self._poller
        results, errors = poller.poll()
        samples = [x for ep in poller.endpoints if ep in results for x in results[ep]]
        if errors:
            raise PartialRead(samples, {self._endpoint_name(ep): why for ep, why in errors.items()})
        return samples

    def close(self) -> None:
        poller, self._poller = self._poller, None
        if poller is not None:
            poller.close()


class TypeperfSource:
    """Windows performance counters of one server over SSH (CPU, memory, NICs, disks).

    Streaming (default): one ``typeperf ... -si S`` that runs until closed, each row becoming
    samples as it arrives. Polled: ``typeperf ... -sc 1 -si S`` per read.
    """

    def __init__(
        self,
        ctx: LabContext,
        machine: Machine,
        counters: Sequence[str] = tp.SERVER_COUNTERS,
        *,
        interval_s: float = 5.0,
        stream: bool = True,
    ):
        self.ctx = ctx
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
        target = self.ctx.ssh_target(self.machine)
        interval_wall = self.ctx.clock.to_wall_s(max(1.0, self.interval_s))
        if not self.stream:
            res = self.ctx.ssh.run(
                target,
                tp.sample_argv(self.counters, 1, self.interval_s),
                timeout_s=interval_wall * 2 + self.ctx.settings.ssh_connect_timeout_s + 10,
                action="read performance counters (typeperf)",
                check=True,
            )
            return to_samples(
                "typeperf",
                tp.samples_from_pdh(
                    res.stdout,
                    self.machine.name,
                    time_zone=self.machine.time_zone,
                    memory_total_mb=self.memory_total_mb,
                ),
            )
        argv = ["typeperf", *self.counters, "-si", tp.interval_arg(self.interval_s)]
        st = self.ctx.ssh.stream(
            target,
            argv,
            idle_timeout_s=interval_wall * 3 + self.ctx.settings.ssh_connect_timeout_s + 10,
            action="stream performance counters (typeperf)",
        )
        with self._lock:
            self._stream = st
        return self._iterate(st)

    def _iterate(self, st: SshStream) -> Iterator[Sample]:
        parser = tp.PdhStream(
            self.machine.name, time_zone=self.machine.time_zone, memory_total_mb=self.memory_total_mb
        )
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


class PvsSource(PolledSource[Machine]):
    """Boot time, retries and activity of every client, from one streaming server.

    Each client's value is recorded when it changes, and every ``refresh_s`` lab seconds in any
    case (sample-and-hold: a value holds until the next sample, so ``interval_s`` is
    ``refresh_s``). Polling 100 clients x 4 figures every interval otherwise made nine tenths of
    a run's series file out of repeated values.
    """

    def __init__(self, ctx: LabContext, server: Machine, *, refresh_s: float = 60.0, poll_s: float = 5.0):
        self.ctx = ctx
        self.server = server
        self.name = f"pvs:{server.name}"
        self.refresh_s = refresh_s
        self.interval_s = refresh_s
        self.poll_s = poll_s  # how often it is read (changes show within this)
        self._last: dict[tuple[str, str], tuple[float, float]] = {}  # (entity, metric) -> (value, ts)

    def _poll_lab_s(self) -> float:
        return self.poll_s

    def _endpoints(self) -> Sequence[Machine]:
        return [self.server]

    def _endpoint_name(self, ep: Machine) -> str:
        return ep.name

    def _read_one(self, ep: Machine) -> list[Sample]:
        res = self.ctx.ssh.run(
            self.ctx.ssh_target(ep),
            pvs_driver.DEVICE_INFO_COMMAND,
            timeout_s=60.0,
            action="read device status",
            check=True,
        )
        try:
            devices = pvs_driver.parse_device_info(res.stdout)
        except ValueError as exc:
            raise EndpointError(ep.name, "read device status", str(exc)) from None
        return self._changed(to_samples("pvs", pvs_driver.readings(devices, self.ctx.clock.now())))

    def _changed(self, samples: list[Sample]) -> list[Sample]:
        out = []
        for x in samples:
            key = (x.entity, x.metric)
            last = self._last.get(key)
            if last is None or last[0] != x.value or x.source_ts - last[1] >= self.refresh_s:
                self._last[key] = (x.value, x.source_ts)
                out.append(x)
        return out


class RedfishPowerSource(PolledSource[Machine]):
    """Power drawn by each server, from its BMC (``PowerConsumedWatts``), every BMC at once."""

    def __init__(self, ctx: LabContext, servers: Sequence[Machine], *, interval_s: float = 5.0):
        self.ctx = ctx
        self.servers = [m for m in servers if m.bmc is not None]
        self.interval_s = interval_s
        self.name = "redfish:power" if len(self.servers) != 1 else f"redfish:{self.servers[0].name}"

    def _endpoints(self) -> Sequence[Machine]:
        return self.servers

    def _endpoint_name(self, ep: Machine) -> str:
        return ep.name

    def _read_one(self, ep: Machine) -> list[Sample]:
        return to_samples("redfish", [self.ctx.redfish(ep).power_reading(self.ctx.clock.now)])


class StorageSource(PolledSource[str]):
    """Volume, tier and controller figures of one array (IOPS, MB/s, latency, I/O size, state),
    normalised by its driver whatever the kind (:mod:`labctl.drivers.storage.base`)."""

    def __init__(self, ctx: LabContext, array: str, *, interval_s: float = 5.0):
        self.ctx = ctx
        self.array = array
        self.interval_s = interval_s
        self.name = f"storage:{array}"
        self._started = False

    def _endpoints(self) -> Sequence[str]:
        return [self.array]

    def _read_one(self, ep: str) -> list[Sample]:
        drv = self.ctx.storage(ep)
        if not self._started:
            drv.start_metrics(self._poll_lab_s())
            self._started = True
        kind = self.ctx.lab.storage[ep].kind.value
        return to_samples(kind, drv.read_metrics().readings(ep))

    def close(self) -> None:
        super().close()
        if self._started:
            self._started = False
            try:
                self.ctx.storage(self.array).stop_metrics()
            except EndpointError:
                pass


class VCenterPerfSource(PolledSource[str]):
    """Hosts, chosen VMs and datastores from vCenter's real-time (20 s) statistics, normalised.

    One round of batched ``QueryPerf`` per read (chunked, :class:`~labctl.drivers.vsphere_perf.PerfReader`):
    every host (``cpu_pct``, ``cpu_mhz``, ``mem_usage_pct``, ``mem_active_kb``, ``mem_consumed_kb``,
    ``mem_balloon_kb``, ``net_kbps``), every datastore (``ds_read_iops``, ``ds_write_iops``,
    ``ds_read_latency_ms``, ``ds_write_latency_ms``, summed over the hosts that use it) and the VMs
    ``vms`` selects (names, groups or ranges: the host metrics plus their disks' ``ds_*``).

    Each 20 s sample is returned once, stamped with vCenter's own sample time mapped onto the lab
    clock (on a simulated lab vCenter's clock is the wall clock; identical on a real lab, scale 1);
    a read that comes late asks for every sample it missed, up to vCenter's hour of real-time data.
    """

    interval_s: float | None = float(perf.REALTIME_INTERVAL_S)
    MAX_SAMPLES = 180  # vCenter keeps an hour of 20 s samples

    def __init__(
        self,
        ctx: LabContext,
        vcenter: str,
        *,
        vms: str | Sequence[str] = (),
        hosts: bool = True,
        datastores: bool = True,
        host_counters: Sequence[str] = perf.HOST_COUNTERS,
        vm_counters: Sequence[str] = perf.VM_COUNTERS,
        batch: int = 5000,
    ):
        self.ctx = ctx
        self.vcenter = vcenter
        selected = [vms] if isinstance(vms, str) else list(vms)
        self.vms = tuple(m.name for m in ctx.machines(selected)) if selected else ()
        self.hosts = hosts
        self.datastores = datastores
        self.host_counters = tuple(host_counters)
        self.vm_counters = tuple(vm_counters)
        self.batch = batch
        self.name = f"vcenter:{vcenter}"
        self._reader: perf.PerfReader | None = None
        self._last: dict[
            tuple[str, str], float
        ] = {}  # (entity, metric) -> newest sample returned, vCenter time
        self._last_lab: float | None = None

    def _endpoints(self) -> Sequence[str]:
        return [self.vcenter]

    def _read_one(self, ep: str) -> list[Sample]:
        vc = self.ctx.vcenter(ep)
        if self._reader is None or self._reader.client is not vc:
            self._reader = perf.PerfReader(
                vc,
                vms=self.vms,
                hosts=self.hosts,
                datastores=self.datastores,
                host_counters=self.host_counters,
                vm_counters=self.vm_counters,
                batch=self.batch,
            )
        c = self.ctx.clock
        missed = 1
        if self._last_lab is not None:
            missed = math.ceil((c.now() - self._last_lab) / perf.REALTIME_INTERVAL_S) + 1
        readings = self._reader.read(max_sample=max(1, min(self.MAX_SAMPLES, missed)))
        out = []
        for r in readings:
            key = (r.entity, r.metric)
            if r.source_ts <= self._last.get(key, -math.inf):
                continue  # returned by an earlier read
            self._last[key] = r.source_ts
            lab_ts = c.anchor_wall_s + (r.source_ts - c.anchor_wall_s) * c.scale
            self._last_lab = lab_ts if self._last_lab is None else max(self._last_lab, lab_ts)
            out.append(Sample("vcenter", r.entity, r.metric, r.unit, lab_ts, r.value))
        return out


_S = TypeVar("_S")


class Sources:
    """``session.sources``: the factory of one lab's metric sources, built with the lab context;
    closes what it made when the context closes."""

    def __init__(self, ctx: LabContext):
        self.ctx = ctx
        ctx.on_close(self.close)
        self._made: list[object] = []

    def _keep(self, src: _S) -> _S:
        self._made.append(src)
        return src

    def typeperf(self, machine: str | Machine, **kw: object) -> TypeperfSource:
        m = machine if isinstance(machine, Machine) else self.ctx.lab.machine(machine)
        return self._keep(TypeperfSource(self.ctx, m, **kw))  # type: ignore[arg-type]

    def pvs(self, server: str | Machine | None = None, *, poll_s: float = 5.0) -> list[PvsSource]:
        """One source per streaming server (each read in its own thread by the recorder)."""
        servers = (
            [server if isinstance(server, Machine) else self.ctx.lab.machine(server)]
            if server
            else self.ctx.streaming_servers
        )
        return [self._keep(PvsSource(self.ctx, m, poll_s=poll_s)) for m in servers]

    def redfish_power(self, selector: str = "servers", *, interval_s: float = 5.0) -> RedfishPowerSource:
        servers = [m for m in self.ctx.machines(selector) if m.kind is MachineKind.SERVER]
        return self._keep(RedfishPowerSource(self.ctx, servers, interval_s=interval_s))

    def storage(self, array: str, **kw: object) -> StorageSource:
        return self._keep(StorageSource(self.ctx, array, **kw))  # type: ignore[arg-type]

    def vcenter(self, name: str, **kw: object) -> VCenterPerfSource:
        return self._keep(VCenterPerfSource(self.ctx, name, **kw))  # type: ignore[arg-type]

    def for_plan(self, *, interval_s: float = 5.0, poll_interval_s: float | None = None) -> list[object]:
        """Every source the lab offers: typeperf on the configuration's streaming, storage and
        share servers (one row every ``interval_s``), and, read every ``poll_interval_s`` (default
        the same), PVS status, BMC power and each array; each vCenter at its own 20 s.

        A polled source's interval is both how often the recorder reads it and what its series are
        judged against for gaps, so it must be the interval it is actually read at."""
        poll_s = interval_s if poll_interval_s is None else poll_interval_s
        lab = self.ctx.lab
        servers: dict[str, Machine] = {m.name: m for m in self.ctx.streaming_servers}
        if lab.configuration is not None:
            for n in (lab.configuration.vdisk_server, lab.configuration.write_cache_server):
                if n in lab.machines:
                    servers.setdefault(n, lab.machines[n])
        out: list[object] = [self.typeperf(m, interval_s=interval_s) for m in servers.values() if m.ssh]
        out += self.pvs(poll_s=poll_s)
        bmcs = [m for m in lab.servers if m.bmc is not None]
        if bmcs:
            out.append(self._keep(RedfishPowerSource(self.ctx, bmcs, interval_s=poll_s)))
        out += [self.storage(a, interval_s=poll_s) for a in lab.storage]
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
