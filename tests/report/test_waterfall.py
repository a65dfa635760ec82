"""The logon waterfall's numbers (labctl.report.waterfall): sessions put back together from the
phases' samples, percentiles linear between ranks (the cell summary's), phases in the launchers'
order, an unmeasured phase said in words with its connector, and concurrency at each launch."""

from __future__ import annotations

from labctl.lab.launchers.model import LogonPhase, LogonWaterfall
from labctl.recorder.series import SeriesStore
from labctl.records.series import Series
from labctl.report import waterfall as wf
from labctl.scenarios import vdi_logons

POOL = "task-pool"
T0 = 1_000_000.0
NO_BROKER = "direct RDP has no broker (a gateway's time is part of protocol_connect)"
NO_GPO = "not read on this desktop (Linux has none)"


def logon(i: int, launch: float) -> LogonWaterfall:
    """Session i: protocol_connect 1.0 + 0.1 i s, authentication 0.5, shell_ready 2.0 + 0.2 i, first
    operation 0.3, unaccounted 0.05; profile load measured by sessions 0-3 only (0.7 s)."""
    phases = [
        LogonPhase("brokering", False, why=NO_BROKER),
        LogonPhase("protocol_connect", True, round(1.0 + 0.1 * i, 3), launch),
        LogonPhase("authentication", True, 0.5),
        LogonPhase("profile_load", i < 4, 0.7 if i < 4 else None, why="" if i < 4 else "no event log"),
        LogonPhase("group_policy", False, why=NO_GPO),
        LogonPhase("shell_ready", True, round(2.0 + 0.2 * i, 3)),
        LogonPhase("first_operation", True, 0.3),
        LogonPhase("unaccounted", True, 0.05),
    ]
    total = sum(p.duration_s or 0.0 for p in phases)
    return LogonWaterfall("l1", f"s{i}", f"d{i}", f"u{i}", "rdp", launch, round(total, 3), tuple(phases))


def storm() -> list[LogonWaterfall]:
    """12 sessions 10 s apart (each logs on within 8 s), the last two launched at the same instant."""
    return [logon(i, T0 + 10 * min(i, 10)) for i in range(12)]


def series_of(ws: list[LogonWaterfall]) -> list[Series]:
    """The series a run folder gets (vdi_logons.samples, through the recorder's store)."""
    store = SeriesStore()
    for w in ws:
        for s in vdi_logons.samples(POOL, w):
            store.add("cell", s)
    return store.series()


def test_phases_in_order_with_linear_percentiles_and_the_unmeasured_said() -> None:
    ws = storm()
    w = wf.waterfall(vdi_logons.percentiles(ws), series_of(ws))
    assert w is not None and w.connector == "rdp" and len(w.logons) == 12
    assert [p.name for p in w.phases] == [
        "brokering",
        "protocol_connect",
        "authentication",
        "profile_load",
        "group_policy",
        "shell_ready",
        "first_operation",
        "unaccounted",
        "total",
    ]
    pc = w.phase("protocol_connect")
    assert pc is not None and pc.n == 12
    # 1.0 ... 2.1: p50 between the 6th and 7th, p95 at rank 10.45 (nearest rank would say 2.1)
    assert round(pc.p50_s or 0, 6) == 1.55 and round(pc.p95_s or 0, 6) == 2.045 and pc.max_s == 2.1
    shell = w.phase("shell_ready")
    assert shell is not None and round(shell.p95_s or 0, 6) == round(2.0 + 0.2 * 10.45, 6)
    profile = w.phase("profile_load")
    assert profile is not None and profile.n == 4 and profile.p50_s == 0.7  # measured by some: no reason
    assert profile.unmeasured == ""
    broker = w.phase("brokering")
    assert broker is not None and not broker.measured and broker.n == 0
    assert broker.p50_s is None and broker.p95_s is None and broker.max_s is None
    assert broker.unmeasured == f"not measured by rdp: {NO_BROKER}"
    gpo = w.phase("group_policy")
    assert gpo is not None and gpo.unmeasured == f"not measured by rdp: {NO_GPO}"
    assert w.measured == [
        "protocol_connect",
        "authentication",
        "profile_load",
        "shell_ready",
        "first_operation",
        "unaccounted",
    ]


def test_the_report_agrees_with_the_cell_summary() -> None:
    ws = storm()
    extra = vdi_logons.percentiles(ws)
    w = wf.waterfall(extra, series_of(ws))
    assert w is not None
    for p in w.phases:
        if p.measured:
            assert round(p.p50_s or 0, 3) == extra[f"logon_{p.name}_p50_s"], p.name
            assert round(p.p95_s or 0, 3) == extra[f"logon_{p.name}_p95_s"], p.name
        else:
            assert p.unmeasured.endswith(str(extra[f"logon_{p.name}_unmeasured"])), p.name


def test_sessions_launched_at_one_instant_stay_apart_and_concurrency_counts_those_logged_on() -> None:
    ws = storm()
    w = wf.waterfall(vdi_logons.percentiles(ws), series_of(ws))
    assert w is not None
    twins = [lg for lg in w.logons if lg.launch_ts == T0 + 100]
    assert len(twins) == 2
    assert sorted(lg.phases_s["protocol_connect"] for lg in twins) == [2.0, 2.1]
    for lg in twins:  # each its own session: its phases add up to its own total
        parts = sum(v for k, v in lg.phases_s.items() if k != wf.TOTAL)
        assert abs(parts - lg.phases_s[wf.TOTAL]) < 1e-6
    # every earlier session logged on before the next launch (10 s apart, under 8 s each)
    assert [lg.concurrency for lg in w.logons] == [*range(11), 10]


def test_concurrency_bins_and_their_percentiles() -> None:
    assert wf.bin_edges(3) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert wf.bin_edges(20, 8) == [(0, 2), (3, 5), (6, 8), (9, 11), (12, 14), (15, 17), (18, 20)]
    ws = storm()
    w = wf.waterfall(vdi_logons.percentiles(ws), series_of(ws))
    assert w is not None
    bins = w.bins(max_bins=4)  # concurrency 0..10 in bins of 3
    assert [(b.lo, b.hi, b.n) for b in bins] == [(0, 2, 3), (3, 5, 3), (6, 8, 3), (9, 10, 3)]
    # the last bin: sessions 9, 10 and 11 (protocol connect 1.9, 2.0, 2.1)
    assert round(bins[-1].p50_s["protocol_connect"], 6) == 2.0
    assert round(bins[-1].p95_s["protocol_connect"], 6) == 2.09
    assert "profile_load" in bins[0].p50_s and "profile_load" not in bins[-1].p50_s  # no sample there
    assert "brokering" not in bins[0].p50_s and bins[0].label == "0-2"


def test_no_waterfall_without_timed_logons_and_old_folders_still_say_why() -> None:
    assert wf.waterfall({"logon_sessions": 0}, []) is None
    w = wf.waterfall({"logon_profile_load_unmeasured": "the twin models the logon as one phase"}, [])
    assert w is not None and w.phase("profile_load") is not None
    # a run folder written before logon_connectors: the launchers, never a blank
    assert w.phases[0].unmeasured == "not measured by the launchers: the twin models the logon as one phase"
    total = w.phase("total")
    assert total is not None and not total.measured and "not measured" in total.unmeasured


def test_the_finding_names_the_totals_the_longest_phase_and_the_unmeasured() -> None:
    ws = storm()
    w = wf.waterfall(vdi_logons.percentiles(ws), series_of(ws))
    assert w is not None
    said = wf.sentence("session storm, 12 desktops", w)
    assert said is not None
    assert said.startswith("In session storm, 12 desktops, 12 logons took ")
    assert "the longest phase at p95 was shell ready (4.09 s)" in said
    assert said.endswith("not measured by rdp: brokering, group policy.")


def test_launch_time_spans_for_a_storm_too_large_to_draw_logon_by_logon() -> None:
    ws = storm()  # launches at 0, 10, ..., 90 s and two at 100 s
    w = wf.waterfall(vdi_logons.percentiles(ws), series_of(ws))
    assert w is not None
    spans = wf.over_time(w.logons, ["protocol_connect", wf.TOTAL], bins=4)  # 25 s each
    assert [b.n for b in spans] == [3, 2, 3, 4]  # the last launch belongs to the last span
    assert spans[0].start_ts == T0 and spans[-1].end_ts == T0 + 100
    assert round(spans[-1].p50_s["protocol_connect"], 6) == 1.95  # sessions 8-11: 1.8 ... 2.1
    assert wf.over_time([], ["total"]) == []
