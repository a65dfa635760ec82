"""The physical twin through the LabTwin interface, as the simulated endpoints use it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from labctl.clock import LabClock
from labctl.errors import UnknownTargetError
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import Lab
from labctl.sim.faults import FaultBook
from labctl.sim.twin import FastForwardClock, build_twin, run_storm
from labctl.sim.twin.interface import CopyLocation, LabTwin, PowerAction, PowerState
from labctl.sim.twin.twin import PhysicalTwin

MB = 2**20


@pytest.fixture
def clock() -> FastForwardClock:
    return FastForwardClock(scale=60.0)


def make(lab: Lab, clock: FastForwardClock, never_wakes: tuple[str, ...] = ()) -> LabTwin:
    faults = FaultBook(
        [FaultSpec(kind=FaultKind.CLIENT_NEVER_WAKES, targets=never_wakes)] if never_wakes else [], clock
    )
    return build_twin(lab, clock, faults)


def boot(twin: LabTwin, clock: FastForwardClock, names: list[str], lab_s: float = 90.0) -> None:
    for n in names:
        twin.power(n, PowerAction.ON)
    clock.advance(lab_s)


def test_is_a_lab_twin_and_starts_with_servers_on_clients_and_vms_off(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    assert isinstance(twin, LabTwin)
    for s in lab.servers:
        assert twin.power_state(s.name) is PowerState.ON and twin.is_os_up(s.name)
    for m in [*lab.clients[:3], *lab.vms[:3]]:
        assert twin.power_state(m.name) is PowerState.OFF and not twin.is_os_up(m.name)
        assert twin.boot_count(m.name) == 0


def test_wake_on_lan_boots_a_client_and_device_status_reports_its_boot(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    c = lab.clients[0]
    assert twin.wake_on_lan(c.mac.upper()) == c.name  # MACs match whatever their case
    assert twin.power_state(c.name) is PowerState.POWERING_ON
    clock.advance(5)
    assert twin.power_state(c.name) is PowerState.ON and not twin.is_os_up(c.name)
    clock.advance(85)
    assert twin.is_os_up(c.name) and twin.boot_count(c.name) == 1
    status = {d.name: d for d in twin.device_status("pvs-01")}[c.name]
    assert status.active and status.server == "pvs-01" and status.mac == c.mac
    assert status.boot_time_s is not None and 27.0 < status.boot_time_s < 40.0
    assert status.retries == 0
    assert twin.wake_on_lan("00:00:00:00:00:00") is None


def test_a_client_that_never_wakes_ignores_magic_packets(lab: Lab, clock) -> None:
    c = lab.clients[2]
    twin = make(lab, clock, never_wakes=(c.name,))
    assert twin.wake_on_lan(c.mac) == c.name  # the packet arrives ...
    clock.advance(120)
    assert twin.power_state(c.name) is PowerState.OFF  # ... and nothing happens
    assert not {d.name: d for d in twin.device_status("pvs-01")}[c.name].active


def test_shutdown_takes_the_os_down_first_then_power_after_a_few_seconds(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    c = lab.clients[0].name
    boot(twin, clock, [c])
    twin.power(c, PowerAction.SHUTDOWN)
    assert not twin.is_os_up(c) and twin.power_state(c) is PowerState.POWERING_OFF
    clock.advance(2)
    assert twin.power_state(c) is PowerState.POWERING_OFF
    clock.advance(10)
    assert twin.power_state(c) is PowerState.OFF
    assert not {d.name: d for d in twin.device_status("pvs-01")}[c].active


def test_restart_streams_the_boot_again_and_starts_a_new_session(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    c = lab.clients[0].name
    boot(twin, clock, [c])
    twin.power(c, PowerAction.RESTART)
    assert not twin.is_os_up(c) and twin.power_state(c) is PowerState.ON
    clock.advance(5)
    assert twin.boot_count(c) == 1
    clock.advance(90)
    assert twin.is_os_up(c) and twin.boot_count(c) == 2
    # the second boot re-read the image over the network
    before = sum(n.bytes_sent for n in twin.server_counters("pvs-01").nics)
    twin.power(c, PowerAction.FORCE_RESTART)
    clock.advance(90)
    after = sum(n.bytes_sent for n in twin.server_counters("pvs-01").nics)
    assert after - before > 50 * MB
    twin.power(c, PowerAction.FORCE_OFF)
    assert twin.power_state(c) is PowerState.OFF and not twin.is_os_up(c)


def test_server_counters_are_cumulative_and_named_like_pdh(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    first = twin.server_counters("pvs-01")
    assert first.cpu_cores == 2 and first.memory_total_mb == 4096
    assert [v.name for v in first.volumes] == ["0 C:", "1 D:"]
    assert first.nics[0].name.startswith("Broadcom") and first.nics[1].name.endswith("_2")
    assert all(n.bandwidth_bps == 1e9 for n in first.nics)
    boot(twin, clock, [c.name for c in lab.clients[:20]], lab_s=30)
    mid = twin.server_counters("pvs-01")
    clock.advance(120)
    last = twin.server_counters("pvs-01")
    for a, b, c in ((first, mid, last),):
        assert a.lab_time_s < b.lab_time_s < c.lab_time_s
        assert a.cpu_busy_core_s < b.cpu_busy_core_s < c.cpu_busy_core_s
        for i in range(2):
            assert a.nics[i].bytes_sent < b.nics[i].bytes_sent <= c.nics[i].bytes_sent
            assert a.nics[i].bytes_received < b.nics[i].bytes_received <= c.nics[i].bytes_received
        cache_a, cache_c = a.volumes[1], c.volumes[1]
        assert cache_c.writes > cache_a.writes and cache_c.bytes_written > 0
        assert cache_c.queue_length_integral >= cache_a.queue_length_integral
        assert cache_c.transfers == pytest.approx(cache_c.reads + cache_c.writes)
    # CPU % as PDH computes it stays within 0..100
    pct = (
        (last.cpu_busy_core_s - mid.cpu_busy_core_s)
        / ((last.lab_time_s - mid.lab_time_s) * last.cpu_cores)
        * 100
    )
    assert 0.0 < pct <= 100.0
    # a cold server cache: the first boots read the image from the vDisk volume
    assert last.volumes[0].reads > 0


def test_memory_used_grows_with_sessions_and_power_follows_cpu(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    idle_mem = twin.server_counters("pvs-01").memory_available_mb
    idle_watts = twin.power_consumed_watts("pvs-01")
    for c in lab.clients[:40]:
        twin.power(c.name, PowerAction.ON)
    clock.advance(30)  # the middle of the storm
    assert twin.server_counters("pvs-01").memory_available_mb < idle_mem
    assert twin.power_consumed_watts("pvs-01") > idle_watts + 20
    twin.power("infra-01", PowerAction.SHUTDOWN)
    clock.advance(60)
    assert twin.power_state("infra-01") is PowerState.OFF
    assert twin.power_consumed_watts("infra-01") < 20


@pytest.mark.parametrize(
    ("source", "destination"),
    [
        (CopyLocation.LOCAL, CopyLocation.LOCAL),
        (CopyLocation.LOCAL, CopyLocation.SHARE),
        (CopyLocation.SHARE, CopyLocation.LOCAL),
        (CopyLocation.SHARE, CopyLocation.SHARE),
    ],
)
def test_a_512_mb_copy_along_each_path_finishes(lab: Lab, clock, source, destination) -> None:
    twin = make(lab, clock)
    c = lab.clients[0].name
    boot(twin, clock, [c])
    share_before = twin.server_counters("infra-01")
    job = twin.start_copy(c, source, destination, 512 * MB)
    assert job.finished_lab_s is None and job.failed is None
    clock.advance(600)
    done = twin.copy_status(job.job_id)
    assert done.failed is None and done.finished_lab_s is not None
    took = done.finished_lab_s - done.started_lab_s
    assert 5.0 < took < 300.0  # 512 MB over GbE and disks: tens of seconds, not instant
    share_after = twin.server_counters("infra-01")
    moved = sum(n.bytes_sent + n.bytes_received for n in share_after.nics) - sum(
        n.bytes_sent + n.bytes_received for n in share_before.nics
    )
    if CopyLocation.SHARE in (source, destination):
        assert moved > 500 * MB  # the share's server carried the file
    else:
        assert moved < 10 * MB


def test_a_copy_fails_when_the_client_goes_down_or_is_not_up(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    c = lab.clients[0].name
    off = twin.start_copy(lab.clients[1].name, CopyLocation.LOCAL, CopyLocation.SHARE, 512 * MB)
    assert off.failed is not None
    boot(twin, clock, [c])
    job = twin.start_copy(c, CopyLocation.LOCAL, CopyLocation.LOCAL, 512 * MB)
    clock.advance(1)
    twin.power(c, PowerAction.RESTART)
    clock.advance(1)
    status = twin.copy_status(job.job_id)
    assert status.failed is not None and status.finished_lab_s is None


def test_copies_share_the_write_cache_and_slow_each_other_down(lab: Lab) -> None:
    """Local writes of a copy land on the write-cache RAID10: ten at once take longer each."""

    def copy_time_s(clients: int) -> float:
        clock = FastForwardClock(scale=60.0)
        twin = make(lab, clock)
        names = [c.name for c in lab.clients[:clients]]
        boot(twin, clock, names)
        jobs = [twin.start_copy(n, CopyLocation.SHARE, CopyLocation.LOCAL, 128 * MB) for n in names]
        clock.advance(300)
        done = [twin.copy_status(j.job_id) for j in jobs]
        assert all(j.finished_lab_s is not None for j in done)
        return float(np.mean([j.finished_lab_s - j.started_lab_s for j in done]))  # type: ignore[operator]

    assert copy_time_s(10) > 2 * copy_time_s(1)


def test_ha_lists_each_client_on_its_streaming_server(ha_lab: Lab, clock) -> None:
    twin = make(ha_lab, clock)
    boot(twin, clock, [c.name for c in ha_lab.clients[:10]])
    one = twin.device_status("pvs-01")
    two = twin.device_status("pvs-02")
    assert len(one) + len(two) == len(ha_lab.clients)
    assert {d.server for d in one} == {"pvs-01"} and {d.server for d in two} == {"pvs-02"}
    assert sum(d.active for d in one) == 5 and sum(d.active for d in two) == 5
    assert twin.device_status("infra-01") == ()
    nas = twin.server_counters("nas-01")
    assert nas.volumes[1].writes > 0 and sum(n.bytes_sent for n in nas.nics) > 0


def test_vms_boot_and_drive_the_unity_lun_counters(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    before = twin.lun_counters("unity-01")
    assert {(c.lun, c.sp) for c in before} == {("vdi-ds-01", "spa"), ("vdi-ds-01", "spb")}
    vm = lab.vms[0].name
    twin.power(vm, PowerAction.ON)
    clock.advance(30)
    assert not twin.is_os_up(vm)
    clock.advance(60)
    assert twin.is_os_up(vm) and twin.boot_count(vm) == 1
    after = twin.lun_counters("unity-01")
    total = sum(c.reads + c.writes for c in after)
    assert total > sum(c.reads + c.writes for c in before)
    # a full clone (sim-2007's VMs have no pool) boots by reading its OS from its own LUN
    assert sum(c.reads for c in after) > sum(c.writes for c in after) > 0
    assert all(c.total_io_time_us >= 0 for c in after)
    twin.power(vm, PowerAction.FORCE_OFF)
    clock.advance(5)
    off = twin.lun_counters("unity-01")
    clock.advance(60)
    assert twin.lun_counters("unity-01") == off  # nothing runs: the counters stand still


def test_same_seed_same_storm(lab: Lab) -> None:
    a, b = run_storm(lab, 30), run_storm(lab, 30)
    assert np.array_equal(a.boot_time_s, b.boot_time_s)
    assert np.array_equal(a.retries, b.retries)
    assert np.array_equal(a.cpu_pct["pvs-01"], b.cpu_pct["pvs-01"])


def test_unknown_machines_are_refused(lab: Lab, clock) -> None:
    twin = make(lab, clock)
    with pytest.raises(UnknownTargetError, match="no-such-box"):
        twin.power_state("no-such-box")
    for ask in (twin.is_os_up, twin.boot_count, lambda m: twin.power(m, PowerAction.ON)):
        with pytest.raises(UnknownTargetError, match="no-such-box"):
            ask("no-such-box")
    with pytest.raises(UnknownTargetError, match="no-such-box"):
        twin.server_counters("no-such-box")
    # a known machine without server hardware is named, not a crash deep in the model
    with pytest.raises(KeyError, match=lab.clients[0].name):
        twin.server_counters(lab.clients[0].name)


def test_live_on_the_lab_clock_from_several_threads(lab: Lab) -> None:
    """The real scaled clock: the model follows it lazily; concurrent readers see sane counters."""
    clock = LabClock(scale=600.0)  # a 30 s boot takes 50 ms of wall time
    twin = build_twin(lab, clock, None)
    names = [c.name for c in lab.clients[:20]]
    for n in names:
        twin.power(n, PowerAction.ON)
    errors: list[BaseException] = []
    readings: list[float] = []

    def reader() -> None:
        try:
            last = -1.0
            for _ in range(200):
                busy = twin.server_counters("pvs-01").cpu_busy_core_s
                assert busy >= last
                last = busy
                twin.device_status("pvs-01")
                twin.is_os_up(names[0])
            readings.append(last)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    deadline = time.time() + 5.0
    while not all(twin.is_os_up(n) for n in names) and time.time() < deadline:
        time.sleep(0.02)
    assert all(twin.is_os_up(n) for n in names)


def test_a_query_on_a_current_model_does_not_step_it_again(lab: Lab, clock) -> None:
    """Endpoints poll the twin many times per lab second: a query at an unchanged lab time must
    read the model, not re-solve it. (How fast a query is, is measured in bench/bench_twin.py.)"""
    twin = make(lab, clock)
    boot(twin, clock, [c.name for c in lab.clients[:100]], lab_s=40)  # mid-storm
    first = twin.server_counters("pvs-01")
    model = twin.model  # type: ignore[attr-defined]
    steps = model.steps
    assert steps > 0
    for _ in range(500):
        assert twin.server_counters("pvs-01") == first
        twin.is_os_up("optiplex-050")
    assert model.steps == steps
    clock.advance(1.0)  # and a moving clock does step it
    twin.server_counters("pvs-01")
    assert model.steps > steps


@dataclass(frozen=True)
class _WallClock(LabClock):
    """A wall-driven lab clock whose time a test sets (not a fast-forward clock)."""

    _now: list[float] = field(default_factory=lambda: [1_180_000_000.0], compare=False)

    def now(self) -> float:
        return self._now[0]


def test_a_starved_live_twin_coarsens_its_steps_instead_of_stalling(lab: Lab) -> None:
    clock = _WallClock(scale=60.0)
    twin = PhysicalTwin(lab, clock)
    for c in lab.clients:
        twin.power(c.name, PowerAction.ON)
    clock._now[0] += 20.0
    twin.server_counters("pvs-01")  # measures what a step costs here
    twin._step_wall_s = 0.02  # as if the lab process got a sliver of a CPU: 20 ms per step
    before = twin.model.steps
    clock._now[0] += 30.0  # the boot storm's busiest half minute
    twin.server_counters("pvs-01")
    assert twin.model.steps - before <= 31  # 1 s steps, not 300 of 0.1 s
    # a fast-forward twin always steps at full resolution
    ff_clock = FastForwardClock(scale=60.0)
    ff = PhysicalTwin(lab, ff_clock)
    for c in lab.clients:
        ff.power(c.name, PowerAction.ON)
    ff_clock.advance(20.0)
    ff.server_counters("pvs-01")
    ff._step_wall_s = 0.02
    before = ff.model.steps
    ff_clock.advance(30.0)
    ff.server_counters("pvs-01")
    assert ff.model.steps - before >= 200
