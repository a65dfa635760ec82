"""QueryPerf of the simulated vCenter against the twin it is fed by: pyVmomi and labctl's driver read
host, VM and datastore counters, and each 20 s sample is the twin's delta over the 20 lab seconds,
in vCenter's units (percent in hundredths, KB, KBps, MHz, ms, integers)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from pyVmomi import vim, vmodl

from labctl.drivers import vsphere_perf as perf
from labctl.drivers.vsphere import VCenterClient
from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from labctl.lab.sources import VCenterPerfSource
from tests.vdi.labs import vdi_yaml
from tests.vdi.vcenter_twin import TwinVcenter, twin_vcenter

pytestmark = pytest.mark.integration

DESKTOPS = 12
HOSTS = 3


@pytest.fixture(scope="module")
def tv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinVcenter]:
    mp = pytest.MonkeyPatch()
    # small hosts: 12 booting desktops load them enough that a counter above 100 % would show
    text = vdi_yaml(desktops=DESKTOPS, hosts=HOSTS, arrays=2, host_cores=2, host_ram_gb=6, ram_gb=2)
    with twin_vcenter(tmp_path_factory.mktemp("perf"), text, mp) as t:
        with t.client() as c:
            names = sorted(c.inventory())
            res = c.power_on(names[:-2], timeout_s=60)  # the last two stay off
            assert all(o.ok for o in res.outcomes.values())
        t.synced()
        for _ in range(12):  # four lab minutes of boot storm, sampled every 20 s
            t.advance(20)
        yield t
    mp.undo()


@pytest.fixture
def vc(tv: TwinVcenter) -> Iterator[VCenterClient]:
    with tv.client() as c:
        yield c


def counters(vc: VCenterClient, *names: str) -> dict[str, int]:
    resolved, missing = vc.resolve_counters(names)
    assert not missing
    return {n: c.key for n, c in resolved.items()}


def latest(vc: VCenterClient, entity: Any, keys: dict[str, int], instance: str = "", n: int = 1) -> dict:
    pm = vc.content.perfManager
    spec = vim.PerformanceManager.QuerySpec(
        entity=entity,
        metricId=[vim.PerformanceManager.MetricId(counterId=k, instance=instance) for k in keys.values()],
        intervalId=20,
        maxSample=n,
    )
    (em,) = pm.QueryPerf(querySpec=[spec])
    by_key = {k: n for n, k in keys.items()}
    out: dict = {"ts": [s.timestamp.timestamp() for s in em.sampleInfo]}
    for series in em.value:
        out[(by_key[series.id.counterId], series.id.instance)] = list(series.value)
    return out


def lab_ts(tv: TwinVcenter, wall: float) -> float:
    c = tv.clock
    return c.anchor_wall_s + (wall - c.anchor_wall_s) * c.scale


def test_counter_ids_come_from_the_perf_manager(vc: VCenterClient) -> None:
    pm = vc.content.perfManager
    level1 = {
        f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": c for c in pm.QueryPerfCounterByLevel(level=1)
    }
    listed = {f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": c for c in pm.perfCounter}
    for name in ("cpu.usage.average", "mem.vmmemctl.average", "datastore.totalReadLatency.average"):
        assert level1[name].key == listed[name].key
    assert "mem.active.average" not in level1  # a level-2 counter
    units = {
        n: listed[n].unitInfo.key for n in ("cpu.usage.average", "mem.active.average", "net.usage.average")
    }
    assert units == {
        "cpu.usage.average": "percent",
        "mem.active.average": "kiloBytes",
        "net.usage.average": "kiloBytesPerSecond",
    }
    vm = next(iter(vc.vm_refs(["d-0001"])[0].values()))
    summary = pm.QueryPerfProviderSummary(entity=vm)
    assert summary.currentSupported and summary.refreshRate == 20
    available = {(m.counterId, m.instance) for m in pm.QueryAvailablePerfMetric(entity=vm, intervalId=20)}
    assert (listed["virtualDisk.numberWriteAveraged.average"].key, "scsi0:0") in available


def test_host_samples_are_the_twins_deltas_over_20_s(tv: TwinVcenter, vc: VCenterClient) -> None:
    keys = counters(
        vc,
        "cpu.usagemhz.average",
        "cpu.usage.average",
        "mem.consumed.average",
        "mem.usage.average",
        "mem.vmmemctl.average",
        "net.usage.average",
    )
    now = tv.clock.now()
    before = {h: tv.twin.host_perf(h) for h in ("esx-vdi-01", "esx-vdi-02")}
    tv.advance(20)
    for name, h0 in before.items():
        h1 = tv.twin.host_perf(name)
        got = latest(vc, vc.hosts()[name], keys)
        assert lab_ts(tv, got["ts"][0]) == pytest.approx(now + 20, abs=1e-3)  # the boundary, in lab time
        dt = h1.lab_time_s - h0.lab_time_s
        mhz = (h1.cpu_used_mhz_s - h0.cpu_used_mhz_s) / dt
        assert got[("cpu.usagemhz.average", "")] == [round(mhz)]
        assert got[("cpu.usage.average", "")] == [round(min(10000, mhz / h1.cpu_capacity_mhz * 10000))]
        consumed = (h1.mem_consumed_kb_s - h0.mem_consumed_kb_s) / dt
        assert got[("mem.consumed.average", "")] == [round(consumed)]
        assert got[("mem.usage.average", "")] == [round(min(10000, consumed / h1.mem_total_kb * 10000))]
        assert got[("mem.vmmemctl.average", "")] == [round((h1.mem_balloon_kb_s - h0.mem_balloon_kb_s) / dt)]
        net = (h1.net_bytes_rx + h1.net_bytes_tx - h0.net_bytes_rx - h0.net_bytes_tx) / dt / 1024
        assert got[("net.usage.average", "")] == [round(net)]
        assert mhz > 0 and consumed > 0


def test_percentages_never_exceed_100_in_any_sample(tv: TwinVcenter, vc: VCenterClient) -> None:
    """Stock vcsim's mem.usage.average read above 100 % in a third of its samples."""
    keys = counters(vc, "cpu.usage.average", "mem.usage.average")
    entities = {**vc.hosts(), **vc.vm_refs([f"d-{i:04d}" for i in range(1, DESKTOPS - 1)])[0]}
    values = []
    for e in entities.values():
        got = latest(vc, e, keys, n=12)
        assert len(got["ts"]) == 12  # four minutes of 20 s samples
        values += got[("cpu.usage.average", "")] + got[("mem.usage.average", "")]
    assert all(0 <= v <= 10000 for v in values)
    assert max(values) > 2000  # the storm shows: not a lab of zeros


def test_datastore_iops_and_latency_are_the_twins(tv: TwinVcenter, vc: VCenterClient) -> None:
    reader = perf.PerfReader(vc, hosts=False, datastores=True)
    before = {d.datastore: d for d in tv.twin.datastore_perf()}
    tv.advance(20)
    after = {d.datastore: d for d in tv.twin.datastore_perf()}
    readings = {(r.entity, r.metric): r.value for r in reader.read(max_sample=1)}
    for ds in ("ds-1", "ds-2"):
        a, b = before[ds], after[ds]
        dt = b.lab_time_s - a.lab_time_s
        writes, reads = (b.writes - a.writes) / dt, (b.reads - a.reads) / dt
        assert writes > 1
        # each host reports its own integer IOPS: the sum is within half an I/O per host
        assert readings[(ds, "ds_write_iops")] == pytest.approx(writes, abs=0.5 * HOSTS)
        assert readings[(ds, "ds_read_iops")] == pytest.approx(reads, abs=0.5 * HOSTS)
        lat_ms = (b.write_latency_sum_s - a.write_latency_sum_s) / (b.writes - a.writes) * 1000
        assert readings[(ds, "ds_write_latency_ms")] == pytest.approx(lat_ms, abs=0.5)


def test_vm_disk_counters_and_a_vm_that_is_off(tv: TwinVcenter, vc: VCenterClient) -> None:
    keys = counters(vc, "virtualDisk.numberWriteAveraged.average", "datastore.numberWriteAveraged.average")
    refs = vc.vm_refs(["d-0001", "d-0012"])[0]
    (v0,) = tv.twin.vm_perf(["d-0001"])
    tv.advance(20)
    (v1,) = tv.twin.vm_perf(["d-0001"])
    got = latest(vc, refs["d-0001"], keys, instance="*")
    iops = round((v1.disk_writes - v0.disk_writes) / (v1.lab_time_s - v0.lab_time_s))
    ds_uuid = vc.datastores()[tv.twin.desktop_state("d-0001").datastore].volume
    assert got[("virtualDisk.numberWriteAveraged.average", "scsi0:0")] == [iops]
    assert got[("datastore.numberWriteAveraged.average", ds_uuid)] == [iops]
    # a VM that is off has no real-time statistics: vCenter leaves it out of the answer
    pm = vc.content.perfManager
    spec = vim.PerformanceManager.QuerySpec(entity=refs["d-0012"], intervalId=20, maxSample=1)
    assert list(pm.QueryPerf(querySpec=[spec])) == []


def test_max_sample_interval_and_csv(tv: TwinVcenter, vc: VCenterClient) -> None:
    pm = vc.content.perfManager
    host = vc.hosts()["esx-vdi-01"]
    key = counters(vc, "cpu.usagemhz.average")["cpu.usagemhz.average"]
    mid = [vim.PerformanceManager.MetricId(counterId=key, instance="")]
    got = latest(vc, host, {"mhz": key}, n=3)
    stamps = [lab_ts(tv, t) for t in got["ts"]]
    assert len(stamps) == 3 and stamps == sorted(stamps)
    assert [b - a for a, b in itertools.pairwise(stamps)] == pytest.approx([20, 20], abs=1e-3)
    with pytest.raises(vmodl.fault.InvalidArgument):
        pm.QueryPerf(querySpec=[vim.PerformanceManager.QuerySpec(entity=host, metricId=mid, intervalId=30)])
    (csv,) = pm.QueryPerf(
        querySpec=[
            vim.PerformanceManager.QuerySpec(
                entity=host, metricId=mid, intervalId=20, maxSample=3, format="csv"
            )
        ]
    )
    assert [int(x) for x in csv.value[0].value.split(",")] == got[("mhz", "")]
    # a 300 s interval from the same counters: the mean of the fifteen 20 s samples it spans
    start = tv.updater.reader.start_lab_s
    assert start is not None
    boundary = (start // 300 + 2) * 300  # the first 5-minute boundary with 300 s of samples behind it
    while tv.clock.now() < boundary:
        tv.advance(20)
    spec = vim.PerformanceManager.QuerySpec(entity=host, metricId=mid, intervalId=300, maxSample=1)
    (em,) = pm.QueryPerf(querySpec=[spec])
    end = round(lab_ts(tv, em.sampleInfo[0].timestamp.timestamp()), 2)  # stamps carry microseconds
    assert end % 300 == 0 and end >= boundary and em.sampleInfo[0].interval == 300
    short = latest(vc, host, {"mhz": key}, n=180)
    window = [
        v
        for t, v in zip(short["ts"], short[("mhz", "")], strict=False)
        # half a 20 s sample from either edge: a stamp carries microseconds, and at 60x one read back
        # in lab time can land a hair after the sample at end - 300 (16 in the window, not 15)
        if end - 300 + 10 < lab_ts(tv, t) <= end + 10
    ]
    assert len(window) == 15
    assert em.value[0].value[0] == pytest.approx(sum(window) / 15, abs=1)


def test_the_vcenter_source_returns_each_sample_once_on_the_lab_clock(tv: TwinVcenter) -> None:
    lab = load_lab(tv.lab.source_file)
    with LabSession(lab, tv.clock) as s:
        src = VCenterPerfSource(s, "vc-01", vms=["d-0001", "d-0002"])
        assert src.interval_s == 20
        first = src.read()
        assert {x.metric for x in first} >= set(perf.METRICS)
        assert {x.entity for x in first} >= {"esx-vdi-01", "d-0001", "d-0002", "ds-1", "ds-2"}
        assert all(x.source == "vcenter" and x.unit == perf.METRICS[x.metric] for x in first)
        newest = max(x.source_ts for x in first)
        assert newest == pytest.approx((tv.clock.now() // 20) * 20, abs=1e-3)
        assert src.read() == []  # nothing new yet
        tv.advance(60)
        again = src.read()  # three samples came since: a late read gets all three, each once
        stamps = sorted({x.source_ts for x in again if x.entity == "esx-vdi-01" and x.metric == "cpu_pct"})
        assert stamps == pytest.approx([newest + 20, newest + 40, newest + 60], abs=1e-3)
        d1 = [x for x in again if x.entity == "d-0001" and x.metric == "mem_usage_pct"]
        assert len(d1) == 3 and all(0 <= x.value <= 100 for x in d1)


def test_pyvmomi_reads_the_guest_the_twin_booted(tv: TwinVcenter, vc: VCenterClient) -> None:
    state = tv.twin.desktop_state("d-0003")
    info = vc.inventory()["d-0003"]
    assert info.power_state == "poweredOn" and info.tools_running == state.tools_running is True
    assert info.ip == state.ip
    off = tv.twin.desktop_state("d-0012")
    assert off.power.value == "Off" and vc.inventory()["d-0012"].power_state == "poweredOff"
