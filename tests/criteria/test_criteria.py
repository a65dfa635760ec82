"""Criteria files, bands and verdicts over synthetic series and cell summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from labctl.criteria import (
    CriteriaFileError,
    LabFault,
    Names,
    NoDataError,
    Outcome,
    ThresholdFailure,
    evaluate,
    lab_names,
    load_criteria,
    parse_criteria,
    raise_for_outcome,
)
from labctl.criteria.evaluate import fmt
from labctl.inventory.load import load_lab
from labctl.recorder.series import RunSeries, SeriesWriter
from labctl.records.run_record import CellSummary, ClientOutcome, SeriesRef, SeriesSummary, Window
from labctl.records.samples import Sample
from labctl.records.series import SeriesStore

EXAMPLE = Path(__file__).parents[2] / "labctl" / "criteria" / "examples" / "boot_storm.yaml"
T0 = 1_194_256_800.0
CELL = "boot_storm-standalone-050"


def store_with(
    values: dict[tuple[str, str, str], list[float]], unit: str = "", cell: str = CELL, step: float = 5.0
) -> SeriesStore:
    st = SeriesStore()
    for (source, entity, metric), vals in values.items():
        for i, v in enumerate(vals):
            st.add(cell, Sample(source, entity, metric, unit, T0 + step * i, v))
    return st


def summary(
    window: tuple[float, float] | None = None,
    clients: list[ClientOutcome] = (),  # type: ignore[assignment]
    metrics: dict[str, SeriesSummary] | None = None,
) -> CellSummary:
    return CellSummary(
        cell=CELL,
        plan="boot_storm",
        scenario="boot_storm",
        outcome=Outcome.PASS,
        window=Window(start_ts_s=window[0], end_ts_s=window[1]) if window else None,
        clients={c.name: c for c in clients},
        metrics=metrics or {},
    )


def client(name: str, role: str = "storm", **kw: Any) -> ClientOutcome:
    return ClientOutcome(name=name, role=role, outcome=kw.pop("outcome", "ready"), **kw)


def crit(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "queue",
        "select": {"source": "typeperf", "entity": "pvs-01/D:", "metric": "disk_queue_len"},
        "statistic": "mean",
        "unit": "requests",
        "pass": {"max": "2 * spindles(wc)"},
        "marginal": {"max": "4 * spindles(wc)"},
    }
    base.update(kw)
    return base


NAMES = Names({"wc": "pvs-01:cache", "write_cache_disk": "pvs-01/D:"}, {"spindles": lambda ref: 4})
QUEUE = ("typeperf", "pvs-01/D:", "disk_queue_len")


@pytest.mark.parametrize(
    ("values", "outcome"),
    [
        ([2, 4, 6, 8], Outcome.PASS),  # mean 5 <= 8
        ([8, 8, 8, 8], Outcome.PASS),  # the band is inclusive
        ([10, 12, 14], Outcome.MARGINAL),  # mean 12 in (8, 16]
        ([20, 30, 70], Outcome.FAIL),  # the 75-client storm of the paper
    ],
)
def test_bands(values: list[float], outcome: Outcome) -> None:
    cf = parse_criteria({"criteria": [crit()]}, names=NAMES)
    st = store_with({QUEUE: [float(x) for x in values]})
    v = evaluate(cf, st, summary(), names=NAMES)
    assert v.outcome is outcome and v.cell == CELL
    r = v["queue"]
    assert r.observed == pytest.approx(sum(values) / len(values))
    assert r.pass_band is not None and r.pass_band.max == 8 and r.pass_band.max_expr == "2 * spindles(wc)"


def test_failure_carries_evidence_and_when_it_crossed() -> None:
    cf = parse_criteria({"criteria": [crit()]})
    vals = [1.0, 2.0, 3.0, 30.0, 60.0, 70.0, 40.0]  # first above 8 at the 4th sample (15 s in)
    st = store_with({QUEUE: vals})
    v = evaluate(cf, st, summary((T0, T0 + 30)), names=NAMES)
    r = v["queue"]
    assert r.outcome is Outcome.FAIL and r.coverage == 1.0
    assert r.first_crossing_ts == T0 + 15
    assert r.series == [
        SeriesRef(
            file="series.csv", cell=CELL, source="typeperf", entity="pvs-01/D:", metric="disk_queue_len"
        )
    ]
    with pytest.raises(ThresholdFailure) as exc:
        raise_for_outcome(v)
    assert isinstance(exc.value, AssertionError)
    msg = str(exc.value)
    assert "queue: mean 29.4 requests outside pass band <= 8 requests (= 2 * spindles(wc))" in msg
    assert "15 s into the window" in msg and "2007-11-05T10:00:15.000Z" in msg
    assert exc.value.evidence[0].name == "queue"


def test_the_window_is_the_summarys_unless_given() -> None:
    cf = parse_criteria({"criteria": [crit(statistic="peak")]})
    st = store_with({QUEUE: [99, 1, 1, 1, 99]})
    inner = summary((T0 + 5, T0 + 15))
    assert evaluate(cf, st, inner, names=NAMES).outcome is Outcome.PASS
    assert evaluate(cf, st, inner, names=NAMES, window=(T0, T0 + 20)).outcome is Outcome.FAIL


def test_a_147_s_hole_across_the_window_is_no_data_not_a_pass() -> None:
    """Issue 10: typeperf silent from t = 13 s to t = 160 s of a boot storm; the samples either
    side are quiet, so the mean queue 'passed'. A hole that long is no_data, naming the gap."""
    ts = [0, 5, 10, 13, 160, 165, 170, 175, 180]
    st = SeriesStore()
    for t in ts:
        st.add(CELL, Sample(*QUEUE, "requests", T0 + t, 1.0))
    interval = {"typeperf/pvs-01/D:/disk_queue_len": _metric(5.0)}
    cf = parse_criteria({"criteria": [crit()]})
    v = evaluate(cf, st, summary((T0, T0 + 180), metrics=interval), names=NAMES)
    r = v["queue"]
    assert r.outcome is Outcome.NO_DATA and v.outcome is Outcome.NO_DATA
    assert r.observed == 1.0  # what the samples say would pass: the coverage decides
    assert r.coverage == pytest.approx(1 - 147 / 180)
    assert "no sample from t = 13 s to t = 160 s in typeperf/pvs-01/D:/disk_queue_len" in r.message
    assert "needs 90%; its source promised one every 5 s)" in r.message
    with pytest.raises(NoDataError, match="t = 13 s to t = 160 s"):
        raise_for_outcome(v)
    # the same samples, judged with a looser min_coverage, pass: the gap is what failed it
    loose = parse_criteria({"criteria": [crit(min_coverage=0.1)]})
    assert evaluate(loose, st, summary((T0, T0 + 180), metrics=interval), names=NAMES).outcome is Outcome.PASS


def test_a_source_cut_mid_window_is_no_data_and_a_measured_failure_stands() -> None:
    st = store_with({QUEUE: [1.0] * 10})  # 0..45 s, then nothing until the window's end at 120 s
    interval = {"typeperf/pvs-01/D:/disk_queue_len": _metric(5.0)}
    cf = parse_criteria({"criteria": [crit()]})
    r = evaluate(cf, st, summary((T0, T0 + 120), metrics=interval), names=NAMES)["queue"]
    assert r.outcome is Outcome.NO_DATA and "no sample from t = 45 s to t = 120 s" in r.message
    # a value outside its bands is a failure even over a partial window (what is missing
    # cannot make it pass), with the gap said beside it
    st = store_with({QUEUE: [90.0] * 10})
    r = evaluate(cf, st, summary((T0, T0 + 120), metrics=interval), names=NAMES)["queue"]
    assert r.outcome is Outcome.FAIL and "no sample from t = 45 s" in r.message


def test_an_on_change_series_is_not_held_to_an_interval() -> None:
    st = store_with({QUEUE: [1.0, 1.0]}, step=100.0)
    cf = parse_criteria({"criteria": [crit()]})
    on_change = {"typeperf/pvs-01/D:/disk_queue_len": _metric(None)}
    r = evaluate(cf, st, summary((T0, T0 + 180), metrics=on_change), names=NAMES)["queue"]
    assert r.outcome is Outcome.PASS and r.coverage is None


def test_no_series_at_all_is_no_data_and_not_required_only_reports() -> None:
    cf = parse_criteria({"criteria": [crit(), crit(name="optional", required=False)]})
    v = evaluate(cf, SeriesStore(), summary((T0, T0 + 60)), names=NAMES)
    assert [r.outcome for r in v.criteria] == [Outcome.NO_DATA, Outcome.NO_DATA]
    assert v.outcome is Outcome.NO_DATA
    with pytest.raises(NoDataError, match="queue: no data for typeperf/pvs-01/D:/disk_queue_len"):
        raise_for_outcome(v)
    only = evaluate(cf, SeriesStore(), summary((T0, T0 + 60)), names=NAMES, only=["optional"])
    assert only.outcome is Outcome.PASS  # not required: reported, not counted
    raise_for_outcome(only)


def test_per_machine_results_come_from_the_summary_and_a_missing_machine_is_a_lab_fault() -> None:
    cf = parse_criteria(
        {
            "criteria": [
                {
                    "name": "boot time",
                    "select": {"result": "boot_time_s", "role": "rebooter"},
                    "unit": "s",
                    "pass": {"max": 60},
                    "marginal": {"max": 90},
                }
            ]
        }
    )
    assert cf.criteria[0].statistic == "value"
    machines = [client(f"optiplex-00{i}", "rebooter", boot_time_s=30.0 + i) for i in range(1, 4)]
    machines.append(client("optiplex-004", "rebooter", boot_time_s=75.0))
    machines.append(client("optiplex-009", "copier", copy_s=20.0))  # another role: not judged
    v = evaluate(cf, SeriesStore(), summary((T0, T0 + 60), machines), names=NAMES)
    r = v["boot time"]
    assert (r.outcome, r.entity, r.observed) == (Outcome.MARGINAL, "optiplex-004", 75.0)
    assert sorted(e.entity for e in r.entities) == [
        "optiplex-001",
        "optiplex-002",
        "optiplex-003",
        "optiplex-004",
    ]
    assert r.series == [
        SeriesRef(file="summary.json", cell=CELL, source="clients", entity="rebooter", metric="boot_time_s")
    ]
    raise_for_outcome(v)  # marginal does not fail
    with pytest.raises(ThresholdFailure):
        raise_for_outcome(v, marginal_fails=True)
    # optiplex-005 never booted: a lab fault naming it and saying why, not a threshold failure
    never = client("optiplex-005", "rebooter", outcome="timeout", detail="not ready by the deadline")
    v = evaluate(cf, SeriesStore(), summary((T0, T0 + 60), [*machines, never]), names=NAMES)
    assert v.outcome is Outcome.LAB_FAULT and v["boot time"].missing == ["optiplex-005"]
    with pytest.raises(LabFault) as exc:
        raise_for_outcome(v)
    assert not isinstance(exc.value, AssertionError)
    assert (
        "1 of 5 rebooter machines have no boot_time_s: optiplex-005 (timeout: not ready by the deadline)"
        in str(exc.value)
    )


@pytest.mark.parametrize(
    ("band", "values", "worst_entity", "outcome"),
    [
        # every client inside <= 60 s: the slowest is named (issue 20: it named the first, 51.9 s)
        ({"max": 60}, [51.9, 55.4, 40.0], "optiplex-002", Outcome.PASS),
        ({"min": 6.5}, [8.0, 7.0, 9.0], "optiplex-002", Outcome.PASS),  # a floor: the lowest
        ({"min": 6.5, "max": 8.5}, [7.5, 6.7, 8.4], "optiplex-003", Outcome.PASS),  # nearest an edge
        ({"max": 60}, [61.0, 75.0, 40.0], "optiplex-002", Outcome.FAIL),  # outside beats inside
    ],
)
def test_across_worst_judges_the_worst_value_and_names_it_whatever_the_bands(
    band: dict[str, float], values: list[float], worst_entity: str, outcome: Outcome
) -> None:
    cf = parse_criteria(
        {"criteria": [{"name": "t", "select": {"result": "boot_time_s", "role": "storm"}, "pass": band}]}
    )
    machines = [client(f"optiplex-00{i}", boot_time_s=v) for i, v in enumerate(values, start=1)]
    r = evaluate(cf, SeriesStore(), summary((T0, T0 + 60), machines), names=NAMES)["t"]
    expected = values[int(worst_entity[-1]) - 1]
    assert (r.entity, r.observed, r.outcome) == (worst_entity, expected, outcome)
    assert f"value {fmt(expected)} on {worst_entity}" in r.message


def test_no_machine_of_the_role_is_no_data() -> None:
    cf = parse_criteria(
        {
            "criteria": [
                {"name": "copy", "select": {"result": "copy_s", "role": "copier"}, "pass": {"max": 600}}
            ]
        }
    )
    r = evaluate(cf, SeriesStore(), summary((T0, T0 + 60), [client("a")]), names=NAMES)["copy"]
    assert r.outcome is Outcome.NO_DATA and "no copier machines" in r.message


def test_across_and_time_statistics() -> None:
    st = store_with(
        {
            ("typeperf", "pvs-01/nic1", "nic_sent_util_pct"): [10, 95, 95, 10],
            ("typeperf", "pvs-01/nic2", "nic_sent_util_pct"): [10, 50, 50, 10],
        }
    )
    sel = {"source": "typeperf", "entity": "pvs-01/*", "metric": "nic_sent_util_pct"}
    cf = parse_criteria(
        {
            "criteria": [
                {
                    "name": "mean of peaks",
                    "select": sel,
                    "statistic": "peak",
                    "across": "mean",
                    "pass": {"max": 80},
                },
                {"name": "worst", "select": sel, "statistic": "peak", "pass": {"max": 80}},
                {
                    "name": "above 90",
                    "select": sel,
                    "statistic": "time_above",
                    "threshold": 90,
                    "pass": {"max": 5},
                },
                {
                    "name": "storm",
                    "select": sel,
                    "statistic": "storm_duration",
                    "threshold": 40,
                    "pass": {"max": 10},
                },
                {"name": "p50", "select": sel, "statistic": "p50", "across": "max", "pass": {"min": 40}},
            ]
        }
    )
    v = evaluate(cf, st, summary(), names=NAMES)
    assert v["mean of peaks"].observed == pytest.approx(72.5) and v["mean of peaks"].outcome is Outcome.PASS
    assert v["worst"].entity == "pvs-01/nic1" and v["worst"].outcome is Outcome.FAIL
    # 10 s above 90 (two 5 s samples) on nic1: more than 5
    assert v["above 90"].observed == pytest.approx(10) and v["above 90"].outcome is Outcome.FAIL
    assert v["above 90"].first_crossing_ts == T0 + 5
    assert v["storm"].observed == pytest.approx(10) and v["storm"].outcome is Outcome.PASS
    assert v["p50"].observed == pytest.approx(52.5) and v["p50"].outcome is Outcome.PASS


def test_nan_samples_are_no_value_not_a_failure() -> None:
    st = store_with({QUEUE: [2.0, float("nan"), 4.0]})
    v = evaluate(parse_criteria({"criteria": [crit()]}), st, summary(), names=NAMES)
    assert v["queue"].outcome is Outcome.PASS and v["queue"].observed == 3.0


# --- checking a file at load ------------------------------------------------------------------------


def _problems(data: Any, names: Names | None = NAMES) -> list[str]:
    with pytest.raises(CriteriaFileError) as exc:
        parse_criteria(data, "plan.yaml", names)
    return str(exc.value).splitlines()


@pytest.mark.parametrize(
    ("criterion", "line"),
    [
        # inverted band
        (
            crit(**{"pass": {"min": 10, "max": 2}, "marginal": None}),
            "plan.yaml: criteria[0] 'queue': pass.min: 10 is above pass.max 2 (swap them)",
        ),
        # the pass band reaches outside the marginal band
        (
            crit(**{"marginal": {"max": "1 * spindles(wc)"}}),
            "plan.yaml: criteria[0] 'queue': marginal.max: 4 is below pass.max 8 "
            "(the pass band must lie inside the marginal band: raise marginal.max)",
        ),
        (
            crit(**{"pass": {"min": 5}, "marginal": {"min": 1, "max": 50}}),
            "plan.yaml: criteria[0] 'queue': marginal.max: 50 caps values the pass band accepts without limit "
            "(the pass band must lie inside the marginal band: add pass.max or drop marginal.max)",
        ),
        # a marginal band that marks nothing
        (
            crit(**{"marginal": {"max": "2 * spindles(wc)"}}),
            "plan.yaml: criteria[0] 'queue': marginal: the marginal band is the pass band: nothing can be "
            "marginal (widen it or drop it)",
        ),
        # unknown variable in a select pattern, and in a limit
        (
            crit(select={"source": "typeperf", "entity": "{write_cache_dsk}"}),
            "plan.yaml: criteria[0] 'queue': select.entity: unknown variable {write_cache_dsk} "
            "(known: wc, write_cache_disk; does the lab's configuration name it?)",
        ),
        (
            crit(**{"pass": {"max": "2 * spindlez(wc)"}}),
            "plan.yaml: criteria[0] 'queue': pass.max: unknown name 'spindlez' in '2 * spindlez(wc)' "
            "(variables: wc, write_cache_disk; functions: spindles)",
        ),
        # unknown result field
        (
            {"name": "boot", "select": {"result": "boot_tme_s"}, "pass": {"max": 60}},
            "plan.yaml: criteria[0] 'boot': select: unknown per-machine result 'boot_tme_s' (known: "
            "boot_time_s, retries, time_to_ready_s, copy_s, sent_ts_s, delivered_ts_s, login_s, operations, "
            "response_s, ux_level, ux_good, spare_capacity_pct, boot_iops_per_desktop, login_iops_per_desktop, "
            "steady_iops_per_desktop, scaling_ratio)",
        ),
        # bad statistics
        (
            crit(statistic="median"),
            "plan.yaml: criteria[0] 'queue': statistic: unknown statistic 'median' (use one of peak, max, min, "
            "mean, last, sum, samples, time_above, storm_duration, value, or pNN such as p95)",
        ),
        (
            {"name": "boot", "select": {"result": "boot_time_s"}, "statistic": "mean", "pass": {"max": 60}},
            "plan.yaml: criteria[0] 'boot': statistic 'mean': a per-machine result has one value per machine: "
            "use `statistic: value` (combine machines with `across:`)",
        ),
        (
            crit(statistic="value"),
            "plan.yaml: criteria[0] 'queue': statistic 'value' is for per-machine results",
        ),
        (
            crit(statistic="time_above"),
            "plan.yaml: criteria[0] 'queue': statistic time_above needs a threshold",
        ),
        (
            crit(threshold=5),
            "plan.yaml: criteria[0] 'queue': threshold: only time_above and storm_duration use one",
        ),
        (crit(**{"pass": {}}), "plan.yaml: criteria[0] 'queue': pass: a band needs min, max or both"),
        (crit(colour="red"), "plan.yaml: criteria[0] 'queue': colour: Extra inputs are not permitted"),
        (
            crit(min_coverage=1.5),
            "plan.yaml: criteria[0] 'queue': min_coverage: Input should be less than or equal to 1",
        ),
    ],
)
def test_file_errors_name_the_file_criterion_and_field(criterion: dict[str, object], line: str) -> None:
    if criterion.get("marginal", "") is None:
        del criterion["marginal"]
    problems = _problems({"criteria": [criterion]})
    assert any(p.startswith(line) for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems(
        {
            "plan": "boot_storm",
            "colour": "red",
            "criteria": [
                crit(statistic="median"),
                crit(name="q2", **{"pass": {"min": 9, "max": 1}}),
                crit(name="q2"),
                crit(name="q4", select={"entity": "{nope}"}),
            ],
        }
    )
    assert len(problems) == 5, problems
    assert problems[0] == "plan.yaml: colour: unknown key (a criteria file has plan, description, criteria)"
    assert "criteria[2] 'q2': name: two criteria are named 'q2'" in problems[3]


def test_variables_the_cell_hands_in_are_declared_at_load_and_checked_when_judged() -> None:
    c = crit(**{"pass": {"max": "group_size / 2"}, "marginal": {"max": "group_size"}})
    with pytest.raises(CriteriaFileError, match="unknown name 'group_size'"):
        parse_criteria({"criteria": [c]}, "plan.yaml", NAMES)
    cf = parse_criteria({"criteria": [c]}, "plan.yaml", NAMES.declare("group_size"))
    st = store_with({QUEUE: [3.0]})
    assert evaluate(cf, st, summary(), names=NAMES.with_vars(group_size=10)).outcome is Outcome.PASS
    # a band that only contradicts itself once the value is known is refused when judged
    inverted = parse_criteria(
        {"criteria": [crit(**{"pass": {"min": "group_size", "max": 5}, "marginal": None})]},
        names=NAMES.declare("group_size"),
    )
    with pytest.raises(CriteriaFileError, match=r"pass\.min: 10 is above pass\.max 5"):
        evaluate(inverted, st, summary(), names=NAMES.with_vars(group_size=10))


def test_format_1_files_still_load() -> None:
    cf = parse_criteria(
        {
            "criteria": [
                {
                    "name": "boot",
                    "select": {"source": "result", "entity": "*", "metric": "boot_time_s"},
                    "statistic": "last",
                    "expect": "rebooters",
                    "pass": {"max": 60},
                },
                {
                    "name": "retries",
                    "select": {"source": "result", "metric": "retries"},
                    "statistic": "last",
                    "pass": {"max": 10},
                },
            ]
        }
    )
    boot, retries = cf.criteria
    assert (boot.select.result, boot.select.role, boot.statistic) == ("boot_time_s", "rebooter", "value")
    assert retries.present_only and not boot.present_only
    # judged the old way: only the machines that have retries (copiers have none)
    machines = [client("r1", "rebooter", boot_time_s=30.0, retries=2), client("c1", "copier", copy_s=10.0)]
    v = evaluate(cf, SeriesStore(), summary((T0, T0 + 60), machines), names=NAMES)
    assert v.outcome is Outcome.PASS and [e.entity for e in v["retries"].entities] == ["r1"]


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CriteriaFileError, match="not found"):
        load_criteria(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - name: x\n    select: {a: [}\n")
    with pytest.raises(CriteriaFileError, match=r"bad.yaml:3: YAML syntax error"):
        load_criteria(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(CriteriaFileError, match="expected a mapping"):
        load_criteria(bad)


def test_inventory_names_for_both_configurations() -> None:
    standalone = lab_names(load_lab(configuration="standalone"))
    ha = lab_names(load_lab(configuration="ha"))
    assert standalone.variables["write_cache_volume"] == "pvs-01:cache"
    assert standalone.variables["write_cache_disk"] == "pvs-01/D:"
    assert standalone.functions["spindles"]("pvs-01:cache") == 4
    assert ha.variables["write_cache_disk"] == "nas-01/E:"
    assert ha.functions["spindles"](ha.variables["write_cache_volume"]) == 8
    assert standalone.variables["ram_mb"] == 4096
    with pytest.raises(ValueError, match="has no volume 'nope'"):
        standalone.functions["spindles"]("pvs-01:nope")


def test_the_plans_criteria_files_check_against_both_configurations() -> None:
    """What the plugin does at collection, before any machine is touched."""
    files = [EXAMPLE, *sorted((Path(__file__).parents[2] / "testplans" / "criteria").glob("*.yaml"))]
    for configuration in ("standalone", "ha"):
        names = lab_names(load_lab(configuration=configuration)).declare("group_size", "copiers", "rebooters")
        for f in files:
            load_criteria(f, names)


def test_example_file_on_a_synthetic_75_client_storm(tmp_path: Path) -> None:
    """The example criteria against a run folder on disk: a storm like the paper's 75 clients."""
    lab = load_lab(configuration="standalone")
    names = lab_names(lab)
    w = SeriesWriter(tmp_path / "series.csv")
    rows = []
    for i in range(73):  # 6 minutes at 5 s, both ends of the window
        t = T0 + 5 * i
        storm = 1.0 if i < 40 else 0.1
        rows += [
            Sample("typeperf", "pvs-01", "cpu_pct", "%", t, 100.0 * storm if i % 3 else 70.0 * storm),
            Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", t, 40.0 * storm),
            Sample("typeperf", "pvs-01/nic1", "nic_sent_util_pct", "%", t, 97.0 * storm),
            Sample("typeperf", "pvs-01", "memory_used_mb", "MB", t, 900.0),
        ]
    w.write(CELL, rows)
    w.close()
    clients = [client(f"optiplex-{i:03d}", boot_time_s=38.0, retries=6) for i in range(1, 76)]
    v = evaluate(
        load_criteria(EXAMPLE, names), RunSeries(tmp_path), summary((T0, T0 + 360), clients), names=names
    )
    got = {r.name: r.outcome for r in v.criteria}
    assert got == {
        "write-cache disk queue": Outcome.FAIL,  # mean (40 * 40 + 33 * 4) / 73 > 16
        "CPU average": Outcome.PASS,
        "CPU peak": Outcome.MARGINAL,  # 100 %
        "NIC peak": Outcome.MARGINAL,  # 97 %
        "used memory peak": Outcome.PASS,
        "boot time per client": Outcome.PASS,
        "retries per client": Outcome.PASS,
    }
    assert v["write-cache disk queue"].observed == pytest.approx((40 * 40 + 33 * 4) / 73)
    assert all(c.coverage in (None, 1.0) for c in v.criteria)
    with pytest.raises(ThresholdFailure, match="write-cache disk queue: mean"):
        raise_for_outcome(v)


def _metric(interval: float | None) -> SeriesSummary:
    return SeriesSummary(
        source="typeperf",
        entity="pvs-01/D:",
        metric="disk_queue_len",
        unit="requests",
        samples=0,
        expected_interval_s=interval,
    )


def test_a_result_no_machine_has_is_a_lab_fault_when_required_and_no_data_when_not() -> None:
    from labctl.criteria.evaluate import evaluate_criterion
    from labctl.criteria.model import Criterion
    from labctl.criteria.variables import Names
    from labctl.records.run_record import CellSummary, ClientOutcome, Outcome

    summary = CellSummary(
        cell="c", plan="p", scenario="p", configuration=None, parameters={}, outcome=Outcome.PASS,
        reason="", clients={"arr": ClientOutcome(name="arr", role="array", outcome="measured")},
    )  # fmt: skip
    spec = {
        "name": "t7",
        "select": {"result": "steady_iops_per_desktop", "role": "array"},
        "pass": {"max": 8},
    }
    required = evaluate_criterion(Criterion(**spec), None, summary, names=Names(), window=None)  # type: ignore[arg-type]
    optional = evaluate_criterion(
        Criterion(**spec, required=False),
        None,
        summary,
        names=Names(),
        window=None,  # type: ignore[arg-type]
    )
    assert required.outcome is Outcome.LAB_FAULT
    assert optional.outcome is Outcome.NO_DATA


def test_a_window_shorter_than_the_band_needs_is_no_data_saying_why_and_does_not_count() -> None:
    """The quick VDI profile's ten-minute steady phase against the paper's hour-long band: not a
    failure (10.5 IOPS per desktop against 6.5-8.5), not judged."""
    from labctl.records.run_record import Phase

    spec = {
        "name": "steady IOPS",
        "select": {"result": "steady_iops_per_desktop", "role": "array"},
        "phase": "steady",
        "min_window_s": 3600,
        "unit": "IO/s",
        "pass": {"min": 6.5, "max": 8.5},
    }
    cf = parse_criteria({"criteria": [spec]})
    arrays = [client("eql-01", "array", outcome="measured", steady_iops_per_desktop=10.5)]

    def judged(steady_s: float) -> Any:
        s = summary((T0, T0 + steady_s + 100), arrays).model_copy(
            update={"phases": [Phase(name="steady", start_ts_s=T0 + 50, end_ts_s=T0 + 50 + steady_s)]}
        )
        return evaluate(cf, SeriesStore(), s, names=NAMES)

    quick = judged(600)
    r = quick["steady IOPS"]
    assert r.outcome is Outcome.NO_DATA and r.too_short and not r.counts
    assert r.message == (
        "steady IOPS: not judged: the steady phase lasted 600 s, shorter than the 3600 s this band was "
        "measured over (a longer profile judges it); measured value 10.5 IO/s (band >= 6.50 IO/s and <= 8.50 IO/s)"
    )
    assert quick.outcome is Outcome.PASS
    raise_for_outcome(quick)  # neither a failure nor missing data
    full = judged(3600)  # the paper's hour: judged, and 10.5 fails
    assert full["steady IOPS"].outcome is Outcome.FAIL and full.outcome is Outcome.FAIL
    with pytest.raises(CriteriaFileError, match="min_window_s"):
        parse_criteria({"criteria": [{**spec, "min_window_s": 0}]})
