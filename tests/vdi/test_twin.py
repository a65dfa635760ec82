"""The VDI twin through the VdiTwin interface, as the vCenter, array and launcher simulators use it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labctl.inventory.model import Lab
from labctl.sim.faults import FaultBook
from labctl.sim.twin import FastForwardClock, build_twin
from labctl.sim.twin.interface import (
    DesktopPhase,
    LabTwin,
    PowerAction,
    PowerState,
    SessionRefused,
    SessionState,
    VdiTwin,
)
from labctl.sim.twin.twin import PhysicalTwin
from tests.vdi.labs import load, vdi_yaml

BOOTED_S = 80.0  # power-on, BIOS, a ~50 s guest boot, with margin
REGISTERED_S = BOOTED_S + 90.0  # plus the broker agent's registration


def make(lab: Lab) -> tuple[PhysicalTwin, FastForwardClock]:
    clock = FastForwardClock(scale=60.0)
    twin = build_twin(lab, clock, FaultBook(lab.faults, clock))
    assert isinstance(twin, PhysicalTwin)
    return twin, clock


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return load(tmp_path, vdi_yaml())


def boot_all(twin: PhysicalTwin, clock: FastForwardClock, lab_s: float = REGISTERED_S) -> list[str]:
    names = [d.name for d in twin.desktops()]
    twin.power_many(names, PowerAction.ON)
    clock.advance(lab_s)
    return names


def test_is_a_lab_twin_and_a_vdi_twin_with_every_desktop_off(lab: Lab) -> None:
    twin, _ = make(lab)
    assert isinstance(twin, LabTwin) and isinstance(twin, VdiTwin)
    states = twin.desktops()
    assert [d.name for d in states] == [m.name for m in lab.vms]
    assert all(
        d.power is PowerState.OFF and d.phase is DesktopPhase.OFF and not d.tools_running for d in states
    )
    assert {d.host for d in states} == {"esx-vdi-01", "esx-vdi-02"} and {d.datastore for d in states} == {
        "ds-1"
    }


def test_a_desktop_boots_gets_tools_and_an_ip_then_registers(lab: Lab) -> None:
    twin, clock = make(lab)
    twin.power("d-0001", PowerAction.ON)
    assert twin.power_state("d-0001") is PowerState.ON
    clock.advance(20)
    s = twin.desktop_state("d-0001")
    assert s.phase is DesktopPhase.BOOTING and not s.tools_running and s.ip is None
    clock.advance(BOOTED_S - 20)
    s = twin.desktop_state("d-0001")
    assert s.tools_running and s.ip and twin.is_os_up("d-0001") and twin.boot_count("d-0001") == 1
    assert not s.registered
    clock.advance(REGISTERED_S - BOOTED_S)
    assert twin.desktop_state("d-0001").registered


def test_a_guest_reboot_really_reboots(lab: Lab) -> None:
    twin, clock = make(lab)
    twin.power("d-0002", PowerAction.ON)
    clock.advance(BOOTED_S)
    assert twin.boot_count("d-0002") == 1
    twin.power("d-0002", PowerAction.RESTART)  # RebootGuest
    clock.advance(5)
    assert not twin.is_os_up("d-0002") and twin.power_state("d-0002") is PowerState.ON
    clock.advance(BOOTED_S + 20)
    assert twin.is_os_up("d-0002") and twin.boot_count("d-0002") == 2


def test_a_session_logs_on_runs_timed_operations_and_logs_off(lab: Lab) -> None:
    twin, clock = make(lab)
    boot_all(twin, clock)
    info = twin.start_session("d-0003", "alice")
    assert info.state is SessionState.LOGGING_IN and info.workload == "task"
    with pytest.raises(SessionRefused, match=r"d-0003.*already runs"):
        twin.start_session("d-0003", "bob")
    clock.advance(60)
    info = twin.session(info.session_id)
    assert info.state is SessionState.ACTIVE and info.login_duration_s is not None
    assert 20 < info.login_duration_s < 60  # connection + a ~25 s logon, closed loop on the array
    clock.advance(900)
    ops = twin.session_operations(info.session_id)
    assert len(ops) >= 5 and [o.index for o in ops] == list(range(len(ops)))
    assert {o.name for o in ops} <= {
        "ie_open",
        "ie_browse",
        "pdf_open",
        "pdf_print",
        "freemind_edit",
        "flash_play",
        "idle",
    }
    starts = [o.started_lab_s for o in ops]
    assert starts == sorted(starts) and all(0 < o.response_s < 5 for o in ops)
    assert twin.session_operations(info.session_id, since=len(ops) - 1) == ops[-1:]
    off = twin.logoff(info.session_id)
    assert off.state is SessionState.LOGGING_OFF
    clock.advance(60)
    assert twin.session(info.session_id).state is SessionState.ENDED
    clock.advance(BOOTED_S + 30)  # pooled desktops restart after logoff
    assert twin.boot_count("d-0003") == 2 and twin.desktop_state("d-0003").session_id is None


def test_sessions_are_refused_on_desktops_that_are_off_or_not_registered(lab: Lab) -> None:
    twin, clock = make(lab)
    with pytest.raises(SessionRefused, match=r"d-0001.*off"):
        twin.start_session("d-0001", "alice")
    twin.power("d-0001", PowerAction.ON)
    clock.advance(BOOTED_S)
    with pytest.raises(SessionRefused, match="registered"):
        twin.start_session("d-0001", "alice")


def test_a_logon_that_fails_ends_failed_and_frees_the_desktop(tmp_path: Path) -> None:
    twin, clock = make(load(tmp_path, vdi_yaml(faults="- {kind: session_login_fails, targets: [d-0004]}")))
    boot_all(twin, clock)
    info = twin.start_session("d-0004", "alice")
    clock.advance(90)
    info = twin.session(info.session_id)
    assert info.state is SessionState.FAILED and "logon failed" in (info.failed or "")
    assert info.logged_in_lab_s is None and twin.desktop_state("d-0004").session_id is None
    ok = twin.start_session("d-0005", "bob")  # other desktops log on as usual
    clock.advance(60)
    assert twin.session(ok.session_id).state is SessionState.ACTIVE


def test_counters_are_cumulative_and_memory_stays_within_what_is_configured(lab: Lab) -> None:
    twin, clock = make(lab)
    names = boot_all(twin, clock)
    for n in names[:8]:
        twin.start_session(n, f"user-{n}")
    a = twin.vm_perf()
    ha = twin.host_perf("esx-vdi-01")
    clock.advance(600)
    b = twin.vm_perf()
    hb = twin.host_perf("esx-vdi-01")
    dt = b[0].lab_time_s - a[0].lab_time_s
    assert dt == pytest.approx(600, abs=1)
    for x, y in zip(a, b, strict=True):
        for field in (
            "cpu_used_mhz_s",
            "mem_consumed_kb_s",
            "net_bytes_rx",
            "disk_writes",
            "disk_write_latency_sum_s",
        ):
            assert getattr(y, field) >= getattr(x, field)
        consumed_kb = (y.mem_consumed_kb_s - x.mem_consumed_kb_s) / dt
        active_kb = (y.mem_active_kb_s - x.mem_active_kb_s) / dt
        # mem.usage = consumed / configured never reads above 100% (stock vcsim's does, up to 160%)
        assert 0 < active_kb <= consumed_kb <= y.mem_configured_kb
        assert (y.cpu_used_mhz_s - x.cpu_used_mhz_s) / dt <= y.vcpus * 3000
    used = (hb.cpu_used_mhz_s - ha.cpu_used_mhz_s) / dt
    assert 0 < used <= hb.cpu_capacity_mhz
    assert 0 < (hb.mem_consumed_kb_s - ha.mem_consumed_kb_s) / dt <= hb.mem_total_kb
    assert hb.vms_powered_on == 8 and not hb.in_maintenance


def test_array_volume_tier_and_datastore_counters_agree(lab: Lab) -> None:
    twin, clock = make(lab)
    names = boot_all(twin, clock)
    for n in names:
        twin.start_session(n, f"user-{n}")
    clock.advance(300)
    vol0 = {v.volume: v for v in twin.array_volume_counters("arr-1")}
    ds0 = {d.datastore: d for d in twin.datastore_perf()}
    tier0 = twin.array_tier_counters("arr-1")[0]
    clock.advance(600)
    vol1 = {v.volume: v for v in twin.array_volume_counters("arr-1")}
    ds1 = {d.datastore: d for d in twin.datastore_perf()}
    tier1 = twin.array_tier_counters("arr-1")[0]
    w_vol = vol1["ds-1"].writes - vol0["ds-1"].writes
    w_ds = ds1["ds-1"].writes - ds0["ds-1"].writes
    assert w_vol == pytest.approx(w_ds, rel=1e-6) and w_vol > 16 * 600 * 5  # ~7 IOPS per working desktop
    # the drives take every host write twice (RAID 10), destaged from the write cache
    assert tier1.writes - tier0.writes == pytest.approx(2 * w_vol, rel=0.1)
    per_host = twin.datastore_perf("esx-vdi-01")
    assert 0 < next(d for d in per_host if d.datastore == "ds-1").writes < ds1["ds-1"].writes
    lat_ms = (vol1["ds-1"].write_response_sum_s - vol0["ds-1"].write_response_sum_s) / w_vol * 1e3
    host_lat_ms = (ds1["ds-1"].write_latency_sum_s - ds0["ds-1"].write_latency_sum_s) / w_ds * 1e3
    assert 0.1 < lat_ms < host_lat_ms < 5  # the host adds the network round trip to the array's time
    queue = (vol1["ds-1"].queue_integral - vol0["ds-1"].queue_integral) / 600
    assert queue == pytest.approx(
        (w_vol * lat_ms / 1e3 + (vol1["ds-1"].read_response_sum_s - vol0["ds-1"].read_response_sum_s)) / 600,
        rel=1e-6,
    )  # Little's law
    (ctrl_a, ctrl_b) = twin.array_controller_counters("arr-1")
    assert {ctrl_a.state, ctrl_b.state} == {"active"} and ctrl_a.write_cache_bytes > 0


def test_unity_lun_counters_come_from_the_owning_sp(lab: Lab) -> None:
    twin, clock = make(lab)
    boot_all(twin, clock)
    luns = twin.lun_counters("arr-1")
    by = {(c.lun, c.sp): c for c in luns}
    assert set(by) == {("pvs-store", "spa"), ("pvs-store", "spb"), ("ds-1", "spa"), ("ds-1", "spb")}
    owner, peer = by[("ds-1", "spb")], by[("ds-1", "spa")]  # volumes alternate over the SPs
    assert owner.writes > 0 and owner.write_blocks > 0 and owner.total_io_time_us > 0
    assert peer.reads == peer.writes == peer.total_io_time_us == 0


def test_a_controller_failover_stalls_io_then_the_peer_writes_through(tmp_path: Path) -> None:
    lab = load(
        tmp_path, vdi_yaml(faults="- {kind: array_controller_failover, targets: [arr-1], after_s: 600}")
    )
    twin, clock = make(lab)
    names = boot_all(twin, clock)
    for n in names:
        twin.start_session(n, f"user-{n}")

    def latency_ms(span: float) -> float:
        a = {v.volume: v for v in twin.array_volume_counters("arr-1")}["ds-1"]
        clock.advance(span)
        b = {v.volume: v for v in twin.array_volume_counters("arr-1")}["ds-1"]
        return (b.write_response_sum_s - a.write_response_sum_s) / max(b.writes - a.writes, 1) * 1e3

    before = latency_ms(300)  # until 470 s of lab time, before the fault
    owner = {v.volume: v.controller for v in twin.array_volume_counters("arr-1")}["ds-1"]
    clock.advance(600 - clock.now() + clock.start_s + 1)
    during = latency_ms(15)
    states = {c.controller: c for c in twin.array_controller_counters("arr-1")}
    (peer,) = set(states) - {owner}
    # the busy controller fails; its peer takes every volume and, unmirrored, writes through
    assert states[owner].state == "failed" and states[peer].state == "active" and states[peer].write_through
    assert {v.controller for v in twin.array_volume_counters("arr-1")} == {peer}
    assert during > 100 * before  # the stall: I/O waits for the takeover
    clock.advance(60)
    after = latency_ms(120)
    assert before < after < during  # writes now wait for the SSDs: slower than the cache, far below the stall


def test_a_host_in_maintenance_hands_its_desktops_to_the_others(lab: Lab) -> None:
    twin, clock = make(lab)
    boot_all(twin, clock)
    twin.set_host_maintenance("esx-vdi-01", True)
    clock.advance(30)
    assert {d.host for d in twin.desktops()} == {"esx-vdi-02"}
    h = twin.host_perf("esx-vdi-01")
    assert h.in_maintenance and h.vms_powered_on == 0
    assert twin.host_perf("esx-vdi-02").vms_powered_on == 16
    assert all(d.tools_running for d in twin.desktops())  # vMotion keeps them running


def test_a_full_datastore_stuns_the_desktops_writing_to_it(tmp_path: Path) -> None:
    lab = load(tmp_path, vdi_yaml(faults="- {kind: datastore_full, targets: [ds-1], after_s: 400}"))
    twin, clock = make(lab)
    boot_all(twin, clock)
    clock.advance(400 - REGISTERED_S + 5)
    ds = {d.datastore: d for d in twin.datastore_perf()}["ds-1"]
    assert ds.free_bytes == 0 and ds.capacity_bytes > 0
    states = twin.desktops()
    assert all(d.stunned and not d.tools_running for d in states)
    with pytest.raises(SessionRefused, match="datastore is full"):
        twin.start_session("d-0001", "alice")
    a = {d.datastore: d for d in twin.datastore_perf()}["ds-1"].writes
    clock.advance(120)
    assert {d.datastore: d for d in twin.datastore_perf()}["ds-1"].writes == a  # no write goes through


def test_same_inventory_same_numbers(lab: Lab) -> None:
    runs = []
    for _ in range(2):
        twin, clock = make(lab)
        names = boot_all(twin, clock)
        for n in names[::2]:
            twin.start_session(n, "u")
        clock.advance(500)
        runs.append([(v.cpu_used_mhz_s, v.disk_writes, v.disk_write_latency_sum_s) for v in twin.vm_perf()])
    assert np.array_equal(np.array(runs[0]), np.array(runs[1]))
