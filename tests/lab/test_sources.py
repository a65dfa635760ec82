"""Metric sources against a running simulated lab: source timestamps, units, entities."""

from __future__ import annotations

import itertools
import time

import pytest

from labctl.records.samples import PartialRead, Sample

pytestmark = pytest.mark.integration


def test_typeperf_streams_rows_with_the_servers_own_timestamps(session_for) -> None:
    s = session_for()
    src = s.sources.typeperf("pvs-01", interval_s=5)
    assert src.name == "typeperf:pvs-01"
    it = iter(src.read())
    samples = list(itertools.islice(it, 60))
    src.close()
    metrics = {x.metric for x in samples}
    assert {
        "cpu_pct",
        "memory_available_mb",
        "memory_used_mb",
        "disk_queue_len",
        "nic_sent_util_pct",
    } <= metrics
    assert {x.entity for x in samples if x.metric == "disk_queue_len"} >= {"pvs-01/C:", "pvs-01/D:"}
    stamps = sorted({x.source_ts for x in samples if x.metric == "cpu_pct"})
    assert len(stamps) >= 2 and stamps[1] - stamps[0] == pytest.approx(5.0, abs=0.2)  # -si 5, lab seconds
    assert abs(stamps[0] - s.clock.now()) < 60
    used = next(x for x in samples if x.metric == "memory_used_mb")
    assert used.unit == "MB" and 0 < used.value < 4096


def test_typeperf_polled_pvs_and_redfish_power(session_for) -> None:
    s = session_for()
    polled = s.sources.typeperf("pvs-01", interval_s=1, stream=False).read()
    assert polled and {x.source for x in polled} == {"typeperf"}
    pvs = s.sources.pvs()
    assert [p.name for p in pvs] == ["pvs:pvs-01"]
    rows = pvs[0].read()
    assert {x.entity for x in rows} == {f"optiplex-00{i}" for i in range(1, 6)}
    assert {x.metric for x in rows} >= {"active", "retries"}
    power = s.sources.redfish_power().read()
    assert {x.entity for x in power} == {"pvs-01", "infra-01"} and all(
        x.unit == "W" and x.value > 0 for x in power
    )


def test_storage_rates_and_vcenter_perf(session_for) -> None:
    s = session_for()
    src = s.sources.storage("unity-01", interval_s=5)
    first = src.read()
    deadline = time.monotonic() + 5
    got = []
    while not got and time.monotonic() < deadline:
        time.sleep(0.15)
        got = src.read()
    src.close()
    # the first read has no interval yet, only each SP's state
    assert {(x.entity, x.metric) for x in first} == {
        ("unity-01/ctrl:spa", "controller_up"),
        ("unity-01/ctrl:spb", "controller_up"),
    }
    assert any(x.metric == "iops" for x in got)
    by = {(x.entity, x.metric): x for x in got}
    assert by[("unity-01", "iops")].value > 0 and by[("unity-01/vdi-ds-01", "latency_ms")].unit == "ms"
    assert {x.source for x in got} == {"unity"}
    vc = s.sources.vcenter("vc-01").read()
    assert {x.metric for x in vc} >= {"cpu_pct", "mem_usage_pct", "mem_balloon_kb", "ds_write_iops"}
    hosts = {x.entity for x in vc if x.metric == "cpu_pct"}
    assert hosts and all(h.startswith("esx-vdi-") for h in hosts)
    assert {x.entity for x in vc if x.metric == "ds_write_iops"} == set(s.lab.storage["unity-01"].luns)
    assert all(abs(x.source_ts - s.clock.now()) < 3600 for x in vc)  # mapped onto the lab timeline


def test_for_plan_feeds_the_recorder(session_for, tmp_path) -> None:
    from labctl.recorder.recorder import Recorder

    s = session_for()
    sources = s.sources.for_plan(interval_s=5)
    names = {x.name for x in sources}  # type: ignore[attr-defined]
    assert {"typeperf:pvs-01", "pvs:pvs-01", "redfish:power", "storage:unity-01", "vcenter:vc-01"} <= names
    rec = Recorder(tmp_path, sources, clock=s.clock, interval_s=5, stop_timeout_s=5)  # type: ignore[arg-type]
    rec.attach(s.timeline)
    with rec:
        s.power.on("optiplex-001")
        time.sleep(0.8)
    series = rec.series()
    sources_seen = {getattr(x, "source", None) for x in series}
    assert {"typeperf", "pvs", "redfish"} <= sources_seen
    events = (tmp_path / "events.jsonl").read_text()
    assert "power.action" in events and "optiplex-001" in events


@pytest.mark.parametrize("fault", ["bmc_hang", "bmc_503"])
def test_one_failing_bmc_is_named_and_never_starves_the_others(sim, session_for, fault: str) -> None:
    """BMC power is read from every BMC at once: a BMC that hangs or answers 503 is a named error
    at each read once past its deadline (one wall second), while pvs-01's BMC still gives a sample
    at every read (a poll never waits out the failing BMC's deadline)."""
    sim.add_fault(f"{fault}:infra-01")
    try:
        s = session_for()
        src = s.sources.redfish_power(interval_s=5)
        got: list[Sample] = []
        errors: list[dict[str, str]] = []
        for _ in range(24):
            try:
                got += src.read()
                errors.append({})
            except PartialRead as exc:
                got += exc.samples
                errors.append(exc.errors)
            s.clock.sleep(5)
        src.close()
    finally:
        sim.clear_faults()
    # (a read slower than the poll interval comes with the next poll: the last may still be out)
    assert len([x for x in got if x.entity == "pvs-01"]) >= 22
    assert not [x for x in got if x.entity == "infra-01"]
    # named at every read from the first that names it: a failing BMC stays failed until it answers
    first = next(k for k, e in enumerate(errors) if e)
    assert all(set(e) == {"infra-01"} for e in errors[first:]), errors
    assert all(why.startswith("infra-01") for e in errors for why in e.values())


def test_every_source_promises_an_interval(session_for) -> None:
    from labctl.records.samples import MetricSource

    s = session_for()
    # typeperf streams every 2 s; the polled sources promise the interval they are read at (5 s),
    # else every read would be judged a gap
    plan_sources = s.sources.for_plan(interval_s=2, poll_interval_s=5)
    by_name = {x.name: x for x in plan_sources}  # type: ignore[attr-defined]
    assert all(isinstance(x, MetricSource) for x in by_name.values())
    promised = {name: x.interval_s for name, x in by_name.items()}  # type: ignore[attr-defined]
    assert promised == {
        "typeperf:pvs-01": 2,
        "pvs:pvs-01": 60,  # sample-and-hold: every value at least once a minute
        "redfish:power": 5,
        "storage:unity-01": 5,
        "vcenter:vc-01": 20,  # vCenter's real-time statistics interval
    }, promised
    s.sources.close()
