"""The vSphere driver against govmomi's vcsim: paging, batched power-on, task failures,
update-driven waits, perf counters by name."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pyVmomi import vim, vmodl

from labctl.drivers.vsphere import VCenterClient, VSphereError
from labctl.drivers.vsphere_perf import PerfReader, PerfValue, entity_readings, io_readings, volume_id
from tests.drivers.vcsim import Vcsim, run_vcsim

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vcsim() -> Iterator[Vcsim]:
    with run_vcsim("-vm", "12", "-host", "2", "-autostart=false") as sim:
        yield sim


@pytest.fixture
def vc(vcsim: Vcsim, monkeypatch: pytest.MonkeyPatch) -> Iterator[VCenterClient]:
    monkeypatch.setenv("LABCTL_TEST_VC_PASSWORD", vcsim.password)
    with VCenterClient(vcsim.vcenter(), timeout_s=20, page_size=7) as client:
        yield client


class Count:
    """Count calls of one SOAP method on a pyVmomi managed-object class."""

    def __init__(self, cls: type, method: str, mp: pytest.MonkeyPatch):
        self.n = 0
        orig = getattr(cls, method)

        def wrapped(obj, *a, **kw):
            self.n += 1
            return orig(obj, *a, **kw)

        mp.setattr(cls, method, wrapped)


def test_inventory_is_paged_and_complete(vc: VCenterClient, monkeypatch: pytest.MonkeyPatch) -> None:
    cont = Count(type(vc.content.propertyCollector), "ContinueRetrievePropertiesEx", monkeypatch)
    inv = vc.inventory()
    assert len(inv) == 12 * 2  # 12 per resource pool: the standalone host and the cluster
    assert cont.n >= (len(inv) - 1) // 7
    vm = next(iter(inv.values()))
    assert vm.moid.startswith("vm-") and vm.datacenter.startswith("datacenter-") and vm.host


def test_mass_power_on_is_one_batched_call_and_waits_by_updates(
    vc: VCenterClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    inv = vc.inventory()
    off = sorted(n for n, v in inv.items() if v.power_state == "poweredOff")[:20]
    assert len(off) == 20
    multi = Count(vim.Datacenter, "PowerOnMultiVM_Task", monkeypatch)
    waits = Count(vmodl.query.PropertyCollector, "WaitForUpdatesEx", monkeypatch)
    result = vc.power_on(off, timeout_s=30)
    assert multi.n == 1 and result.calls == 1
    assert {o.state for o in result.outcomes.values()} == {"success"}, result.outcomes
    assert waits.n < len(off)  # a handful of update rounds, not a poll per task
    assert all(o.started_wall for o in result.outcomes.values())
    now = vc.inventory()
    assert all(now[n].power_state == "poweredOn" for n in off)
    # a task that fails is reported per VM with vCenter's reason, the others are unaffected
    again = vc.power_on([*off[:2], "no-such-vm"], timeout_s=30)
    assert again.outcomes[off[0]].state == "error"
    assert "InvalidPowerState" in (again.outcomes[off[0]].error or "")
    assert "poweredOn" in (again.outcomes[off[0]].error or "")
    assert again.outcomes["no-such-vm"].state == "dispatch_error"
    # reset, guest shutdown and power-off complete
    assert {o.state for o in vc.reset(off[:3], timeout_s=30).outcomes.values()} == {"success"}
    assert {o.state for o in vc.shutdown_guest(off[3:5]).outcomes.values()} == {"success"}
    res = vc.power_off(off[5:], timeout_s=30)
    assert {o.state for o in res.outcomes.values()} == {"success"}
    assert res.dispatch_spread_s >= 0


def test_wait_ready_reports_each_vm(vc: VCenterClient) -> None:
    inv = vc.inventory()
    on = [n for n, v in inv.items() if v.power_state == "poweredOn"][:2]
    off = [n for n, v in inv.items() if v.power_state == "poweredOff"][:1]
    assert on and off
    # vcsim runs no guest tools: with tools required nobody is ready, each says why
    t0 = time.monotonic()
    out = vc.wait_ready(on + off, timeout_s=1.5)
    assert 1.0 < time.monotonic() - t0 < 6
    assert {o.state for o in out.values()} == {"timeout"}
    assert "tools guestToolsNotRunning" in out[on[0]].detail
    assert "power poweredOff" in out[off[0]].detail
    seen: list[str] = []
    out = vc.wait_ready(
        on + off, timeout_s=1.5, require_tools=False, require_ip=False, on_ready=lambda n, t: seen.append(n)
    )
    assert {n for n, o in out.items() if o.state == "ready"} == set(on) == set(seen)
    assert out[off[0]].state == "timeout"


def test_perf_counters_by_name_and_one_batched_query(
    vc: VCenterClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolved, missing = vc.resolve_counters(["cpu.usage.average", "mem.vmmemctl.average", "nope.nope.none"])
    assert set(resolved) == {"cpu.usage.average", "mem.vmmemctl.average"} and missing == ["nope.nope.none"]
    assert resolved["cpu.usage.average"].unit == "percent"
    hosts = vc.hosts()
    assert len(hosts) == 3
    q = Count(vim.PerformanceManager, "QueryPerf", monkeypatch)
    rs = vc.query_perf(hosts, ["cpu.usage.average", "mem.usage.average"], max_sample=2)
    assert q.n == 1
    per = {}
    for r in rs:
        per.setdefault((r.entity, r.metric), []).append(r)
    assert set(per) == {(h, m) for h in hosts for m in ("cpu.usage.average", "mem.usage.average")}
    assert all(len(v) <= 2 for v in per.values())
    assert all(r.unit == "%" for r in rs)
    with pytest.raises(VSphereError, match=r"counters not found: bogus\.x\.y"):
        vc.query_perf(hosts, ["bogus.x.y"])


def test_bad_password_and_stopped_vcenter(vcsim: Vcsim, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCTL_TEST_VC_PASSWORD", "wrong")
    with pytest.raises(VSphereError) as ei:
        VCenterClient(vcsim.vcenter(), timeout_s=10).open()
    assert "credentials rejected" in str(ei.value) and "env:LABCTL_TEST_VC_PASSWORD" in str(ei.value)
    assert "wrong" not in str(ei.value)
    vc = vcsim.vcenter().model_copy(update={"url": "https://127.0.0.1:1/sdk"})
    with pytest.raises(VSphereError, match="cannot connect"):
        VCenterClient(vc, timeout_s=5).open()


def test_tls_is_verified_unless_the_inventory_says_insecure(
    vcsim: Vcsim, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.inventory.model import Tls

    monkeypatch.setenv("LABCTL_TEST_VC_PASSWORD", vcsim.password)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    verified = vcsim.vcenter().model_copy(update={"tls": Tls()})  # vcsim's certificate is self-signed
    with pytest.raises(VSphereError, match="TLS verification failed") as ei:
        VCenterClient(verified, timeout_s=10).open()
    assert "insecure" in ei.value.fix and "ca_file" in ei.value.fix


def test_a_perf_round_is_chunked_and_normalised(vc: VCenterClient, monkeypatch: pytest.MonkeyPatch) -> None:
    vms = sorted(vc.inventory())[:7]
    q = Count(vim.PerformanceManager, "QueryPerf", monkeypatch)
    reader = PerfReader(vc, vms=vms, datastores=False, batch=4, workers=2)
    readings = reader.read(max_sample=1)
    assert q.n == 3  # 3 hosts and 7 VMs in specs of at most 4
    assert {r.entity for r in readings} == set(vc.hosts()) | set(vms)
    assert {(r.metric, r.unit) for r in readings} >= {
        ("cpu_pct", "%"),
        ("mem_balloon_kb", "KB"),
        ("net_kbps", "KB/s"),
    }
    reader.read(max_sample=1)
    assert q.n == 6  # the same specs again, one round per call


def test_io_readings_add_iops_and_weight_latency_by_them() -> None:
    ts = 1000.0
    values = [
        PerfValue("esx-1", "vol-a", "datastore.numberWriteAveraged.average", ts, 30.0),
        PerfValue("esx-2", "vol-a", "datastore.numberWriteAveraged.average", ts, 10.0),
        PerfValue("esx-1", "vol-a", "datastore.totalWriteLatency.average", ts, 2.0),
        PerfValue("esx-2", "vol-a", "datastore.totalWriteLatency.average", ts, 6.0),
        PerfValue("esx-1", "vol-b", "datastore.numberReadAveraged.average", ts, 0.0),
        PerfValue("esx-1", "vol-b", "datastore.totalReadLatency.average", ts, 9.0),
        PerfValue(
            "esx-1", "vol-x", "datastore.numberReadAveraged.average", ts, 5.0
        ),  # not a datastore we know
        PerfValue("esx-1", "", "cpu.usage.average", ts, 1234.0),
    ]
    names = {("esx-1", "vol-a"): "ds-a", ("esx-2", "vol-a"): "ds-a", ("esx-1", "vol-b"): "ds-b"}
    got = {(r.entity, r.metric): (r.value, r.unit) for r in io_readings(values, "datastore", names)}
    assert got == {
        ("ds-a", "ds_write_iops"): (40.0, "IO/s"),
        ("ds-a", "ds_write_latency_ms"): (3.0, "ms"),  # (30 x 2 + 10 x 6) / 40
        ("ds-b", "ds_read_iops"): (0.0, "IO/s"),
        ("ds-b", "ds_read_latency_ms"): (0.0, "ms"),  # no I/O, no latency
    }
    (cpu,) = entity_readings(values)
    assert (cpu.entity, cpu.metric, cpu.unit, cpu.value) == ("esx-1", "cpu_pct", "%", pytest.approx(12.34))
    assert (
        volume_id("ds:///vmfs/volumes/5a1b2c3d-11223344-aabb-001122334455/")
        == "5a1b2c3d-11223344-aabb-001122334455"
    )
    assert volume_id("/tmp/x/vmfs/volumes/abcd") == "abcd"
