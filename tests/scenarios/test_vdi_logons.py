"""Logon waterfalls as series and percentiles (labctl.scenarios.vdi_logons), and a scenario's
``recorded_sources`` choosing what the runner records around its cell."""

from __future__ import annotations

from labctl.lab.launchers.model import LogonPhase, LogonWaterfall
from labctl.plugin.runner import _sources
from labctl.scenarios import vdi_logons
from labctl.scenarios.session_storm import SessionStorm, SessionStormSettings


def _w(session: str, launch: float, connect: float | None) -> LogonWaterfall:
    phases = (
        LogonPhase("protocol_connect", connect is not None, connect, launch, "" if connect else "no log"),
        LogonPhase("profile_load", False, why="not read on this desktop"),
    )
    return LogonWaterfall("l1", session, f"d-{session}", "u", "rdp", launch, 10.0 + launch / 100, phases)


def test_phases_become_samples_at_the_launch_and_percentiles_with_the_unmeasured_named() -> None:
    ws = [_w("s1", 100.0, 1.0), _w("s2", 200.0, 3.0), _w("s3", 300.0, None)]
    samples = [s for w in ws for s in vdi_logons.samples("pool", w)]
    connect = [s for s in samples if s.metric == "logon_protocol_connect_s"]
    assert [(s.entity, s.source_ts, s.value) for s in connect] == [("pool", 100.0, 1.0), ("pool", 200.0, 3.0)]
    assert sum(1 for s in samples if s.metric == "logon_total_s") == 3
    p = vdi_logons.percentiles(ws)
    assert p["logon_sessions"] == 3 and p["logon_concurrent_max"] == 1  # 100 s apart, ~11 s each
    assert vdi_logons.concurrent_max([_w("a", 0.0, 1.0), _w("b", 5.0, 1.0), _w("c", 10.05, 1.0)]) == 2
    assert p["logon_protocol_connect_p50_s"] == 2.0 and p["logon_protocol_connect_p95_s"] == 2.9
    assert p["logon_total_p50_s"] == 12.0
    assert p["logon_profile_load_unmeasured"] == "not read on this desktop"
    assert "logon_protocol_connect_unmeasured" not in p  # measured by some sessions
    assert vdi_logons.percentiles([]) == {"logon_sessions": 0}


class _Src:
    def __init__(self, name: str):
        self.name = name


class _Sources:
    def for_plan(self, *, interval_s: float, poll_interval_s: float) -> list[_Src]:
        return [_Src("typeperf:pvs-01"), _Src("storage:arr-1"), _Src("vcenter:vc-01")]


class _Session:
    sources = _Sources()


def test_a_plan_records_the_sources_it_names_and_every_one_by_default() -> None:
    every = SessionStorm(4, SessionStormSettings())
    assert every.recorded_sources() is None
    assert [s.name for s in _sources(_Session(), 1.0, 5.0, every.recorded_sources())] == [
        "typeperf:pvs-01",
        "storage:arr-1",
        "vcenter:vc-01",
    ]
    hosts_only = SessionStorm(4, SessionStormSettings(record_sources=["vcenter"]))
    assert [s.name for s in _sources(_Session(), 1.0, 5.0, hosts_only.recorded_sources())] == [
        "vcenter:vc-01"
    ]
