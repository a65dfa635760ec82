"""Files the Allure helpers write into the results folder, and the evidence charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from labctl.criteria import evaluate, parse_criteria
from labctl.records.run_record import CellSummary, ClientOutcome, Outcome
from labctl.records.samples import Sample
from labctl.records.series import SeriesStore
from labctl.report import charts
from labctl.report.allure_helpers import (
    CATEGORIES,
    read_properties,
    series_csv,
    write_categories,
    write_environment,
)


def test_environment_properties_merge_and_escape(tmp_path: Path) -> None:
    class Red:
        def text(self, s: str) -> str:
            return s.replace("s3cret", "***")

    write_environment(tmp_path, {"lab": "sim-2007", "pvs-01 BIOS": "2.7.0"})
    write_environment(
        tmp_path,
        {"pvs-01 BIOS": "2.8.1", "note": "a=b: c\\d\nnext", "url": "https://u:s3cret@h", "skip": None},
        redactor=Red(),
    )
    props = read_properties(tmp_path / "environment.properties")
    assert props == {
        "lab": "sim-2007",
        "pvs-01 BIOS": "2.8.1",
        "note": "a=b: c\\d\nnext",
        "url": "https://u:***@h",
    }
    text = (tmp_path / "environment.properties").read_text()
    assert "pvs-01\\ BIOS=2.8.1" in text and "s3cret" not in text


def test_lab_environment(tmp_path: Path) -> None:
    from labctl.inventory.load import load_lab
    from labctl.report.allure_helpers import lab_environment

    env = lab_environment(load_lab(configuration="ha"), **{"pvs-01 BIOS": "2.7.0"})
    write_environment(tmp_path, env)
    props = read_properties(tmp_path / "environment.properties")
    assert props["lab"] == "sim-2007" and props["configuration"] == "ha" and props["simulated lab"] == "yes"
    assert props["time scale"] == "60x" and props["pvs-01 BIOS"] == "2.7.0"


def test_categories_separate_threshold_failures_from_lab_faults(tmp_path: Path) -> None:
    path = write_categories(tmp_path)
    cats = json.loads(path.read_text())
    assert [c["name"] for c in cats] == [c["name"] for c in CATEGORIES]

    def category(status: str, message: str) -> str | None:
        for c in cats:
            if status in c["matchedStatuses"] and re.fullmatch(c.get("messageRegex", r"[\s\S]*"), message):
                return str(c["name"])
        return None

    assert category(
        "failed", "labctl.criteria.errors.ThresholdFailure: c: threshold failure: q\n- a\n- b"
    ) == ("Threshold failures")
    assert category(
        "broken", "labctl.criteria.errors.LabFault: c: lab fault: 1 of 5 clients never reported"
    ) == ("Lab faults")
    assert category("broken", "tests.plan.ClientNeverBootedFault: optiplex-003") == "Lab faults"
    assert category("broken", "labctl.criteria.errors.NoDataError: no data for typeperf") == "Missing data"
    assert category("broken", "labctl.errors.EndpointTimeout: pvs-01: read counters: timed out") == (
        "Infrastructure errors"
    )
    assert category("broken", "KeyError: 'x'") == "Test defects"
    assert category("failed", "AssertionError: assert 1 == 2") is None  # Allure's own "Product errors"


def test_series_csv_has_the_run_folder_columns() -> None:
    st = SeriesStore()
    st.add("c", Sample("typeperf", "pvs-01", "cpu_pct", "%", 1_194_256_800.25, 42.0))
    text = series_csv(st.series())
    assert text.splitlines() == [
        "cell,source,entity,metric,unit,source_ts,source_ts_s,value",
        "c,typeperf,pvs-01,cpu_pct,%,2007-11-05T10:00:00.250Z,1194256800.250,42.0",
    ]


def test_evidence_charts_render() -> None:
    st = SeriesStore()
    for i, q in enumerate([1.0, 5.0, 30.0, 40.0, 2.0]):
        st.add("c", Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", 100.0 + 5 * i, q))
    for n in range(1, 4):  # the per-client values, one sample each: the chart draws bars
        st.add("c", Sample("pvs", f"optiplex-00{n}", "boot_time_s", "s", 200.0, 30.0 + 20 * n))
    clients = {
        f"optiplex-00{n}": ClientOutcome(
            name=f"optiplex-00{n}",
            role="storm",
            outcome="ready",
            boot_time_s=30.0 + 20 * n if n < 4 else None,
        )
        for n in range(1, 5)
    }
    summary = CellSummary(cell="c", plan="p", scenario="p", outcome=Outcome.PASS, clients=clients)
    cf = parse_criteria(
        {
            "criteria": [
                {
                    "name": "q",
                    "select": {"metric": "disk_queue_len"},
                    "statistic": "mean",
                    "pass": {"max": 8},
                },
                {
                    "name": "boot",
                    "select": {"result": "boot_time_s", "role": "storm"},
                    "pass": {"max": 60},
                    "marginal": {"max": 80},
                },
            ]
        }
    )
    v = evaluate(cf, st, summary)
    for r in v.criteria:
        fig = charts.evidence(r, st.series(cell="c", metric=r.selector.split("/")[-1]))
        assert charts.png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
        svg = charts.svg(fig)
        assert svg.startswith("<svg") and "<metadata>" not in svg and r.name in svg
    assert "optiplex-004" in charts.svg(charts.evidence(v["boot"], st.series(cell="c", metric="boot_time_s")))
