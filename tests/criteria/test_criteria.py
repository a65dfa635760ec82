"""Criteria files, bands and verdicts over synthetic series."""

from __future__ import annotations

import json
from pathlib import Path

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
)
from labctl.inventory.load import load_lab
from labctl.recorder.series import RunSeries, SeriesWriter
from labctl.records.samples import Sample
from labctl.records.series import SeriesStore

EXAMPLE = Path(__file__).parents[2] / "labctl" / "criteria" / "examples" / "boot_storm.yaml"
T0 = 1_194_256_800.0
CELL = "boot_storm-standalone-050"


def store_with(
    values: dict[tuple[str, str, str], list[float]], unit: str = "", cell: str = CELL
) -> SeriesStore:
    st = SeriesStore()
    for (source, entity, metric), vals in values.items():
        for i, v in enumerate(vals):
            st.add(cell, Sample(source, entity, metric, unit, T0 + 5 * i, v))
    return st


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
    cf = parse_criteria({"criteria": [crit()]})
    st = store_with({("typeperf", "pvs-01/D:", "disk_queue_len"): [float(x) for x in values]})
    v = evaluate(cf, st, cell=CELL, names=NAMES)
    assert v.outcome is outcome
    r = v["queue"]
    assert r.observed == pytest.approx(sum(values) / len(values))
    assert r.pass_band is not None and r.pass_band.max == 8 and r.pass_band.max_expr == "2 * spindles(wc)"


def test_failure_carries_evidence_and_when_it_crossed(tmp_path: Path) -> None:
    cf = parse_criteria({"criteria": [crit()]})
    vals = [1.0, 2.0, 3.0, 30.0, 60.0, 70.0, 40.0]  # first above 8 at the 4th sample (15 s in)
    st = store_with({("typeperf", "pvs-01/D:", "disk_queue_len"): vals})
    v = evaluate(cf, st, cell=CELL, window=(T0, T0 + 100), names=NAMES)
    r = v["queue"]
    assert r.outcome is Outcome.FAIL
    assert r.first_crossing_ts == T0 + 15
    assert r.series == [
        {
            "file": "series.csv",
            "cell": CELL,
            "source": "typeperf",
            "entity": "pvs-01/D:",
            "metric": "disk_queue_len",
        }
    ]
    with pytest.raises(ThresholdFailure) as exc:
        v.raise_for_outcome()
    assert isinstance(exc.value, AssertionError)
    msg = str(exc.value)
    assert "queue: mean 29.4 requests outside pass band <= 8 requests (= 2 * spindles(wc))" in msg
    assert "15 s into the window" in msg and "1907-" not in msg
    assert exc.value.evidence[0].name == "queue"
    path = v.write(tmp_path)
    assert path == tmp_path / "cells" / CELL / "verdicts.json"
    data = json.loads(path.read_text())
    assert data["outcome"] == "fail" and data["criteria"][0]["first_crossing_ts"] == T0 + 15
    assert data["criteria"][0]["first_crossing_time"] == "2007-11-05T10:00:15.000Z"


def test_window_limits_the_evidence() -> None:
    cf = parse_criteria({"criteria": [crit(statistic="peak")]})
    st = store_with({("typeperf", "pvs-01/D:", "disk_queue_len"): [99, 1, 1, 1, 99]})
    assert evaluate(cf, st, cell=CELL, window=(T0 + 5, T0 + 15), names=NAMES).outcome is Outcome.PASS
    assert evaluate(cf, st, cell=CELL, names=NAMES).outcome is Outcome.FAIL


def test_per_client_worst_and_never_booted_is_a_lab_fault() -> None:
    c = crit(
        name="boot time",
        select={"source": "pvs", "entity": "optiplex-*", "metric": "boot_time_s"},
        statistic="last",
        expect="clients",
        unit="s",
        **{"pass": {"max": 60}, "marginal": {"max": 90}},
    )
    cf = parse_criteria({"criteria": [c]})
    boots = {("pvs", f"optiplex-00{i}", "boot_time_s"): [30.0 + i] for i in range(1, 5)}
    boots[("pvs", "optiplex-003", "boot_time_s")] = [75.0]
    st = store_with(boots)
    clients = [f"optiplex-00{i}" for i in range(1, 5)]
    v = evaluate(cf, st, cell=CELL, expected={"clients": clients})
    r = v["boot time"]
    assert (r.outcome, r.entity, r.observed) == (Outcome.MARGINAL, "optiplex-003", 75.0)
    assert len(r.entities) == 4
    v.raise_for_outcome()  # marginal does not fail
    with pytest.raises(ThresholdFailure):
        v.raise_for_outcome(marginal_fails=True)
    # optiplex-005 never booted: a lab fault, not a threshold failure
    v = evaluate(cf, st, cell=CELL, expected={"clients": [*clients, "optiplex-005"]})
    assert v.outcome is Outcome.LAB_FAULT and v["boot time"].missing == ["optiplex-005"]
    with pytest.raises(LabFault) as exc:
        v.raise_for_outcome()
    assert not isinstance(exc.value, AssertionError)
    assert "1 of 5 clients never reported boot_time_s: optiplex-005" in str(exc.value)


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
    v = evaluate(cf, st, cell=CELL)
    assert v["mean of peaks"].observed == pytest.approx(72.5) and v["mean of peaks"].outcome is Outcome.PASS
    assert v["worst"].entity == "pvs-01/nic1" and v["worst"].outcome is Outcome.FAIL
    # 10 s above 90 (two 5 s samples) on nic1: more than 5
    assert v["above 90"].observed == pytest.approx(10) and v["above 90"].outcome is Outcome.FAIL
    assert v["above 90"].first_crossing_ts == T0 + 5
    assert v["storm"].observed == pytest.approx(10) and v["storm"].outcome is Outcome.PASS
    assert v["p50"].observed == pytest.approx(52.5) and v["p50"].outcome is Outcome.PASS


def test_no_data() -> None:
    cf = parse_criteria({"criteria": [crit(), crit(name="optional", required=False)]})
    v = evaluate(cf, SeriesStore(), cell=CELL, names=NAMES)
    assert [r.outcome for r in v.results] == [Outcome.NO_DATA, Outcome.NO_DATA]
    with pytest.raises(NoDataError, match="queue: no data for typeperf/pvs-01/D:/disk_queue_len"):
        v.raise_for_outcome()
    v = evaluate(cf, SeriesStore(), cell=CELL, names=NAMES, only=["optional"])
    v.raise_for_outcome()  # not required: reported only


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"criteria": [crit(statistic="median")]},
            "criteria[0] 'queue'.statistic: unknown statistic 'median'",
        ),
        (
            {"criteria": [crit(statistic="time_above")]},
            "criteria[0] 'queue': statistic time_above needs a threshold",
        ),
        ({"criteria": [crit(), crit()]}, "two criteria are named 'queue'"),
        ({"criteria": [crit(**{"pass": {}})]}, "criteria[0] 'queue'.pass: a band needs min, max or both"),
        ({"criteria": [crit(colour="red")]}, "criteria[0] 'queue'.colour: Extra inputs are not permitted"),
        ({"criteria": []}, "a criteria file needs at least one criterion"),
    ],
)
def test_file_errors_name_the_criterion(data: dict[str, object], message: str) -> None:
    with pytest.raises(CriteriaFileError) as exc:
        parse_criteria(data, "plan.yaml")
    assert f"plan.yaml: {message}" in str(exc.value)


def test_bad_limits_are_reported_at_evaluation() -> None:
    st = store_with({("typeperf", "pvs-01/D:", "disk_queue_len"): [1.0]})
    cf = parse_criteria({"criteria": [crit(**{"pass": {"max": "2 * spindlez(wc)"}})]})
    with pytest.raises(
        CriteriaFileError, match=r"criterion 'queue': pass.max: .*unknown function 'spindlez'"
    ):
        evaluate(cf, st, cell=CELL, names=NAMES)
    cf = parse_criteria({"criteria": [crit(select={"entity": "{nope}"})]})
    with pytest.raises(CriteriaFileError, match=r"unknown variable \{nope\}"):
        evaluate(cf, st, cell=CELL, names=NAMES)
    cf = parse_criteria({"criteria": [crit(expect="clients")]})
    with pytest.raises(CriteriaFileError, match="must hand in"):
        evaluate(cf, st, cell=CELL, names=NAMES)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CriteriaFileError, match="not found"):
        load_criteria(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - name: x\n    select: {a: [}\n")
    with pytest.raises(CriteriaFileError, match=r"bad.yaml:3: YAML syntax error"):
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


def test_example_file_on_a_synthetic_75_client_storm(tmp_path: Path) -> None:
    """The example criteria against a run folder on disk: a storm like the paper's 75 clients."""
    lab = load_lab(configuration="standalone")
    names = lab_names(lab)
    w = SeriesWriter(tmp_path / "series.csv")
    clients = [f"optiplex-{i:03d}" for i in range(1, 76)]
    rows = []
    for i in range(72):  # 6 minutes at 5 s
        t = T0 + 5 * i
        storm = 1.0 if i < 40 else 0.1
        rows += [
            Sample("typeperf", "pvs-01", "cpu_pct", "%", t, 100.0 * storm if i % 3 else 70.0 * storm),
            Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", t, 40.0 * storm),
            Sample("typeperf", "pvs-01/nic1", "nic_sent_util_pct", "%", t, 97.0 * storm),
            Sample("typeperf", "pvs-01", "memory_used_mb", "MB", t, 900.0),
        ]
    rows += [Sample("pvs", c, "boot_time_s", "s", T0 + 360, 38.0) for c in clients]
    rows += [Sample("pvs", c, "retries", "requests", T0 + 360, 6.0) for c in clients]
    w.write(CELL, rows)
    w.close()
    v = evaluate(
        load_criteria(EXAMPLE),
        RunSeries(tmp_path),
        cell=CELL,
        window=(T0, T0 + 360),
        names=names,
        expected={"clients": clients},
    )
    got = {r.name: r.outcome for r in v.results}
    assert got == {
        "write-cache disk queue": Outcome.FAIL,  # mean (40 * 40 + 32 * 4) / 72 = 24 > 16
        "CPU average": Outcome.PASS,  # (14 * 70 + 26 * 100 + 10 * 7 + 22 * 10) / 72 = 53.75
        "CPU peak": Outcome.MARGINAL,  # 100 %
        "NIC peak": Outcome.MARGINAL,  # 97 %
        "used memory peak": Outcome.PASS,
        "boot time per client": Outcome.PASS,
        "retries per client": Outcome.PASS,
    }
    assert v["CPU average"].observed == pytest.approx(53.75)
    assert v["write-cache disk queue"].observed == pytest.approx(24.0)
    with pytest.raises(ThresholdFailure, match="write-cache disk queue: mean"):
        v.raise_for_outcome()
