"""The cell runner's seam and the output sinks, end to end: cells that pass, are marginal, fail,
are lab faults, have no data or are interrupted, through the run folder, Allure and JUnit sinks,
read back from the files."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from labctl.criteria import Names, parse_criteria
from labctl.inventory.load import load_lab
from labctl.recorder import Recorder, broken_record, judged_record, read_cell_summaries, read_cell_verdicts
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.series import read_events
from labctl.recorder.sinks import AllureSink, JUnitSink, RunFolderSink, SinkSet
from labctl.records.run_record import (
    CellRecord,
    CellSummary,
    ClientOutcome,
    Outcome,
    Phase,
    RestoreOutcome,
    RunOutcome,
    Window,
)
from labctl.records.samples import Event, Sample
from tests.recorder.test_coverage_and_errors import FakeClock

T0 = 1_194_256_800.0
PNG = b"\x89PNG\r\n\x1a\n-evidence-"

CRITERIA = parse_criteria(
    {
        "criteria": [
            {
                "name": "queue",
                "select": {"source": "typeperf", "entity": "pvs-01/D:", "metric": "disk_queue_len"},
                "statistic": "mean",
                "unit": "requests",
                "pass": {"max": 8},
                "marginal": {"max": 16},
            },
            {
                "name": "boot time",
                "select": {"result": "boot_time_s", "role": "storm"},
                "unit": "s",
                "pass": {"max": 60},
                "marginal": {"max": 90},
            },
        ]
    }
)


class Queue:
    """The write-cache disk queue, one row every 5 lab seconds; None: the device printed nothing."""

    name = "typeperf:pvs-01"
    interval_s = 5.0

    def __init__(self, clock: FakeClock):
        self.clock = clock
        self.value: float | None = 1.0

    def read(self) -> list[Sample]:
        if self.value is None:
            return []
        return [Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", self.clock.now(), self.value)]


def measured_cell(
    run: RunFolder, cell: str, queue: float | None, clients: dict[str, float | None], *, hole: bool = False
) -> tuple[Recorder, CellSummary]:
    clock = FakeClock(T0)
    src = Queue(clock)
    src.value = queue
    rec = Recorder(run, [src], clock=clock, cell=cell)
    for i in range(25):  # 120 lab seconds
        if hole:
            src.value = queue if (i < 3 or i > 22) else None
        rec.sample_once()
        clock.t += 5
    rec.stop()
    summary = CellSummary(
        cell=cell,
        plan="boot_storm",
        scenario="boot_storm",
        configuration="standalone",
        parameters={"group_size": len(clients)},
        outcome=Outcome.PASS,
        window=Window(start_ts_s=T0, end_ts_s=T0 + 120),
        phases=[
            Phase(name="prepare", start_ts_s=T0 - 30, end_ts_s=T0),
            Phase(name="window", start_ts_s=T0, end_ts_s=T0 + 120),
        ],
        clients={
            n: ClientOutcome(
                name=n,
                outcome="ready" if bt is not None else "timeout",
                boot_time_s=bt,
                detail="" if bt is not None else "not ready by the deadline",
            )
            for n, bt in clients.items()
        },
    )
    return rec, summary


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run with a cell of every outcome, through every sink (and one sink that breaks)."""
    folder = RunFolder.create(tmp_path_factory.mktemp("results"), load_lab(), "boot_storm")

    class Broken:
        def cell_finished(self, record: CellRecord) -> None:
            raise OSError("disk full")

        def run_finished(self, info: Any) -> None:
            return None

    charts: list[str] = []

    def chart(criterion: Any, series: Any) -> bytes:
        charts.append(criterion.name)
        return PNG

    sinks = SinkSet(
        folder, [RunFolderSink(folder), Broken(), AllureSink(folder, chart=chart), JUnitSink(folder)]
    )
    names = Names()
    ok = {"optiplex-001": 30.0, "optiplex-002": 35.0}
    cells = {
        "boot_storm-standalone-001": measured_cell(folder, "boot_storm-standalone-001", 2.0, ok),
        "boot_storm-standalone-002": measured_cell(folder, "boot_storm-standalone-002", 12.0, ok),
        "boot_storm-standalone-003": measured_cell(folder, "boot_storm-standalone-003", 40.0, ok),
        "boot_storm-standalone-004": measured_cell(
            folder, "boot_storm-standalone-004", 2.0, {**ok, "optiplex-003": None}
        ),
        "boot_storm-standalone-005": measured_cell(folder, "boot_storm-standalone-005", 2.0, ok, hole=True),
    }
    for rec, summary in cells.values():
        sinks.cell_finished(judged_record(summary, rec, CRITERIA, names), rec)
    # interrupted: Ctrl-C in the window, before the scenario could summarise
    rec, summary = measured_cell(folder, "boot_storm-standalone-006", 2.0, ok)
    head = summary  # a CellSummary has everything a head has
    sinks.cell_finished(broken_record(head, rec, Outcome.INTERRUPTED, KeyboardInterrupt()), rec)
    info = folder.finish(RunOutcome.INTERRUPTED, "interrupted by SIGINT")
    sinks.run_finished(info)
    results = {}
    for f in (folder.path / "allure-results").glob("*-result.json"):
        r = json.loads(f.read_text())
        story = next(label["value"] for label in r["labels"] if label["name"] == "story")
        results[story] = r
    return {"folder": folder, "allure": results, "sinks": sinks, "charts": charts}


OUTCOMES = {
    "boot_storm-standalone-001": Outcome.PASS,
    "boot_storm-standalone-002": Outcome.MARGINAL,
    "boot_storm-standalone-003": Outcome.FAIL,
    "boot_storm-standalone-004": Outcome.LAB_FAULT,
    "boot_storm-standalone-005": Outcome.NO_DATA,
    "boot_storm-standalone-006": Outcome.INTERRUPTED,
}


def test_the_run_folder_holds_each_cells_typed_files(run: dict[str, Any]) -> None:
    folder: RunFolder = run["folder"]
    summaries = read_cell_summaries(folder)
    assert {c: s.outcome for c, s in summaries.items()} == OUTCOMES
    verdicts = read_cell_verdicts(folder)
    assert set(verdicts) == set(OUTCOMES) - {"boot_storm-standalone-006"}  # interrupted: not judged
    assert summaries["boot_storm-standalone-005"].metrics["typeperf/pvs-01/D:/disk_queue_len"].coverage < 0.9
    assert json.loads((folder.path / "run.json").read_text())["cells"] == list(OUTCOMES)
    interrupted = summaries["boot_storm-standalone-006"]
    assert interrupted.reason == "interrupted: Ctrl-C"
    assert interrupted.metrics["typeperf/pvs-01/D:/disk_queue_len"].samples == 25  # what it measured is kept


def test_reasons_name_the_worst_thing(run: dict[str, Any]) -> None:
    s = read_cell_summaries(run["folder"])
    assert s["boot_storm-standalone-001"].reason == ""
    assert s["boot_storm-standalone-002"].reason.startswith("queue: mean 12 requests outside pass band")
    assert s["boot_storm-standalone-003"].reason.startswith("queue: mean 40 requests outside pass band")
    assert s["boot_storm-standalone-004"].reason == (
        "boot time: 1 of 3 storm machines have no boot_time_s: optiplex-003 (timeout: not ready by the deadline)"
    )
    assert "queue: no sample from t = 10 s to t = 115 s" in s["boot_storm-standalone-005"].reason


def test_junit_has_one_testcase_per_cell_with_failure_error_by_outcome(run: dict[str, Any]) -> None:
    folder: RunFolder = run["folder"]
    root = ET.parse(folder.path / "junit.xml").getroot()
    assert root.tag == "testsuites" and root.get("tests") == "6"
    assert (root.get("failures"), root.get("errors")) == ("1", "3")
    suite = root.find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert props["lab"] == "sim-2007" and props["run_outcome"] == "interrupted"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == list(OUTCOMES)
    summaries = read_cell_summaries(folder)

    def kind(cell: str) -> tuple[str, str | None, str | None] | None:
        case = cases[cell]
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                return tag, el.get("type"), el.get("message")
        return None

    assert kind("boot_storm-standalone-001") is None
    assert kind("boot_storm-standalone-002") is None  # marginal passes ...
    marginal = cases["boot_storm-standalone-002"]
    assert {p.get("name"): p.get("value") for p in marginal.findall("properties/property")}[
        "outcome"
    ] == "marginal"
    assert (marginal.findtext("system-out") or "").startswith("MARGINAL: queue: mean 12")  # ... and says so
    assert props["marginal"] == "1"
    for cell, want in (
        ("boot_storm-standalone-003", ("failure", "ThresholdFailure")),
        ("boot_storm-standalone-004", ("error", "LabFault")),
        ("boot_storm-standalone-005", ("error", "NoData")),
        ("boot_storm-standalone-006", ("error", "Interrupted")),
    ):
        got = kind(cell)
        word = OUTCOMES[cell].value.replace("_", " ")  # the word every output uses
        assert got is not None and got[:2] == want and got[2] == f"{word}: {summaries[cell].reason}"
    fail_props = {
        p.get("name"): p.get("value")
        for p in cases["boot_storm-standalone-003"].findall("properties/property")
    }
    assert fail_props["criterion.queue"] == "fail 40 requests" and fail_props["parameter.group_size"] == "2"
    assert float(cases["boot_storm-standalone-001"].get("time") or 0) == pytest.approx(
        150 / 60
    )  # lab s / scale


def _labels(r: dict[str, Any], name: str) -> list[str]:
    return [label["value"] for label in r["labels"] if label["name"] == name]


def test_allure_status_labels_and_history_by_outcome(run: dict[str, Any]) -> None:
    results = run["allure"]
    assert set(results) == set(OUTCOMES)
    want = {
        Outcome.PASS: "passed",
        Outcome.MARGINAL: "passed",
        Outcome.FAIL: "failed",
        Outcome.LAB_FAULT: "broken",
        Outcome.NO_DATA: "broken",
        Outcome.INTERRUPTED: "broken",
    }
    summaries = read_cell_summaries(run["folder"])
    for cell, outcome in OUTCOMES.items():
        r = results[cell]
        assert r["status"] == want[outcome], cell
        assert _labels(r, "epic") == ["boot_storm"] and _labels(r, "feature") == ["boot_storm"]
        assert _labels(r, "outcome") == [outcome.value]
        key = hashlib.md5(f"sim-2007\x1fboot_storm\x1f{cell}".encode()).hexdigest()
        assert r["historyId"] == key and r["testCaseId"] == key
        if outcome is Outcome.PASS:
            assert "statusDetails" not in r and _labels(r, "tag") == []
            continue
        assert _labels(r, "tag") == [outcome.value.replace("_", " ")]
        message = r["statusDetails"]["message"]
        assert message.splitlines()[0] == summaries[cell].reason  # the reason first, before any trace
    marginal = results["boot_storm-standalone-002"]["statusDetails"]
    assert "flaky" not in marginal and "outcome: marginal" in marginal["message"]  # never "Flaky"
    assert "Interrupted" in results["boot_storm-standalone-006"]["statusDetails"]["message"]


def test_allure_categories_file_the_outcomes(run: dict[str, Any]) -> None:
    import re

    cats = json.loads((run["folder"].path / "allure-results" / "categories.json").read_text())

    def category(r: dict[str, Any]) -> str | None:
        message = (r.get("statusDetails") or {}).get("message", "")
        for c in cats:
            if r["status"] in c["matchedStatuses"] and re.fullmatch(
                c.get("messageRegex", r"[\s\S]*"), message
            ):
                return str(c["name"])
        return None

    got = {cell: category(r) for cell, r in run["allure"].items()}
    assert got == {
        "boot_storm-standalone-001": None,
        "boot_storm-standalone-002": "Marginal",
        "boot_storm-standalone-003": "Threshold failures",
        "boot_storm-standalone-004": "Lab faults",
        "boot_storm-standalone-005": "Missing data",
        "boot_storm-standalone-006": "Interrupted",
    }


def test_allure_steps_and_attachments_carry_the_evidence(run: dict[str, Any]) -> None:
    folder: RunFolder = run["folder"]
    r = run["allure"]["boot_storm-standalone-003"]
    names = [s["name"] for s in r["steps"]]
    assert names[:2] == ["prepare", "window"] and names[2] == "criteria: fail"
    criteria = r["steps"][2]["steps"]
    assert [s["status"] for s in criteria] == ["failed", "passed"]
    assert criteria[0]["name"].startswith("[fail] queue: mean 40")
    window = r["steps"][1]
    assert window["stop"] - window["start"] == pytest.approx(
        120 / 60 * 1000, abs=2
    )  # lab s on the wall clock
    attached = {a["name"]: folder.path / "allure-results" / a["source"] for a in r["attachments"]}
    assert set(attached) == {"summary", "verdicts", "series", "per-machine results"}
    assert json.loads(attached["summary"].read_text())["cell"] == "boot_storm-standalone-003"
    header = attached["series"].read_text().splitlines()[0]
    assert header == "cell,source,entity,metric,unit,source_ts,source_ts_s,value"
    evidence = {a["name"]: a for a in criteria[0]["attachments"]}
    assert (folder.path / "allure-results" / evidence["queue (evidence)"]["source"]).read_bytes() == PNG
    assert "queue (series)" in evidence and "queue (values)" in evidence
    assert "queue" in run["charts"] and "boot time" in run["charts"]  # charts for what did not pass


def test_junit_holds_every_cell_of_every_plan_one_suite_each_and_strict_marginal_fails(
    tmp_path: Path,
) -> None:
    """``labctl run 2007``: three plans, one run, one sink set; junit.xml holds all of their cells."""
    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm+copy_reboot+ha_comparison")
    junit = JUnitSink(folder, strict_marginal=True)
    allure = AllureSink(folder, strict_marginal=True)
    sinks = SinkSet(folder, [RunFolderSink(folder), junit, allure])
    ok = {"optiplex-001": 30.0}
    for plan, cell, queue in (
        ("boot_storm", "boot_storm-standalone-001", 2.0),
        ("boot_storm", "boot_storm-standalone-005", 12.0),
        ("copy_reboot", "copy_reboot-standalone-25x25-local_to_share", 2.0),
        ("ha_comparison", "ha_comparison-ha-005", 2.0),
    ):
        rec, summary = measured_cell(folder, cell, queue, ok)
        sinks.cell_finished(
            judged_record(summary.model_copy(update={"plan": plan}), rec, CRITERIA, Names()), rec
        )
    sinks.run_finished(folder.finish(RunOutcome.FAILED, "marginal"))
    root = ET.parse(folder.path / "junit.xml").getroot()
    suites = {
        s.get("name"): [c.get("name") for c in s.findall("testcase")] for s in root.findall("testsuite")
    }
    assert suites == {
        "boot_storm": ["boot_storm-standalone-001", "boot_storm-standalone-005"],
        "copy_reboot": ["copy_reboot-standalone-25x25-local_to_share"],
        "ha_comparison": ["ha_comparison-ha-005"],
    }
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "0")
    marginal = root.find("testsuite/testcase[@name='boot_storm-standalone-005']/failure")
    assert marginal is not None and marginal.get("type") == "Marginal"
    assert (marginal.get("message") or "").startswith("marginal: queue: mean 12")
    [r] = [
        json.loads(f.read_text())
        for f in (folder.path / "allure-results").glob("*-result.json")
        if "boot_storm-standalone-005" in f.read_text()
    ]
    assert r["status"] == "failed" and "outcome: marginal" in r["statusDetails"]["message"]


def test_a_broken_sink_is_a_sink_error_event_and_the_others_still_write(run: dict[str, Any]) -> None:
    errors = read_events(run["folder"], kind="sink.error")
    assert len(errors) == len(OUTCOMES)
    assert errors[0]["target"] == "Broken" and errors[0]["detail"]["error"] == "OSError: disk full"
    assert run["sinks"].errors[0] == "Broken.cell_finished (boot_storm-standalone-001): OSError: disk full"


def test_another_lab_never_shares_an_allure_history(tmp_path: Path) -> None:
    lab = load_lab()
    other = lab.model_copy(update={"name": "lab-b"})
    keys = []
    for which in (lab, other):
        folder = RunFolder.create(tmp_path / which.name, which, "boot_storm")
        rec, summary = measured_cell(folder, "boot_storm-standalone-001", 2.0, {"a": 30.0})
        AllureSink(folder).cell_finished(judged_record(summary, rec, CRITERIA, Names()), rec)
        (f,) = (folder.path / "allure-results").glob("*-result.json")
        keys.append(json.loads(f.read_text())["historyId"])
    assert keys[0] != keys[1]


def test_a_failed_restore_keeps_the_verdict_and_says_so(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm")
    rec, summary = measured_cell(folder, "boot_storm-standalone-001", 2.0, {"a": 30.0})
    summary = summary.model_copy(
        update={
            "restore": RestoreOutcome(
                ok=False, started_ts_s=T0 + 120, ended_ts_s=T0 + 300, left_on=["a"], detail="a did not go off"
            )
        }
    )
    record = judged_record(summary, rec, CRITERIA, Names())
    assert record.verdict is not None and record.verdict.outcome is Outcome.PASS  # the measurement stands
    # whether a failed restore also fails the cell is the scenario's call (its own outcome: here pass,
    # as the 2007 plans' default `restore_failure: note`); the reason always says it
    assert record.outcome is Outcome.PASS
    assert record.summary.reason == "restore failed: a did not go off; left on: a"
    lab_fault = summary.model_copy(update={"outcome": Outcome.LAB_FAULT, "reason": "restore failed: a"})
    assert judged_record(lab_fault, rec, CRITERIA, Names()).outcome is Outcome.LAB_FAULT


def test_power_changes_the_run_did_not_make_fail_the_cell_as_a_lab_fault(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm")
    clock = FakeClock(T0)
    rec = Recorder(folder, [], clock=clock, cell="c")
    rec.record_event(Event(T0 + 45, "power.unexpected", "optiplex-003", {"detail": "expected on, seen off"}))
    summary = CellSummary(
        cell="c", plan="p", scenario="s", outcome=Outcome.PASS, window=Window(start_ts_s=T0, end_ts_s=T0 + 60)
    )
    record = judged_record(summary, rec, None, lab_faults=["the lease on the lab was lost"])
    assert record.outcome is Outcome.LAB_FAULT and record.verdict is None
    assert record.summary.reason.startswith(
        "power changed outside the run: optiplex-003 (expected on, seen off at t = 45 s)"
    )
    assert "also: the lease on the lab was lost" in record.summary.reason


def test_a_cell_whose_scenario_broke_after_its_window_keeps_its_verdict(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm")
    rec, summary = measured_cell(folder, "boot_storm-standalone-001", 40.0, {"a": 30.0})
    record = broken_record(
        summary,
        rec,
        Outcome.ERROR,
        RuntimeError("restore: ssh transport closed"),
        summary=summary,
        criteria=CRITERIA,
        names=Names(),
    )
    assert record.outcome is Outcome.ERROR and record.verdict is not None
    assert record.verdict.outcome is Outcome.FAIL
    assert record.summary.reason.startswith(
        "error: RuntimeError: restore: ssh transport closed; also: queue: mean 40"
    )


def test_no_data_names_the_endpoint_whose_source_failed(tmp_path: Path) -> None:
    from labctl.errors import EndpointError

    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm")
    clock = FakeClock(T0)

    class Down:
        name = "typeperf:pvs-01"
        interval_s = 5.0

        def read(self) -> list[Sample]:
            raise EndpointError(
                "pvs-01", "stream performance counters (typeperf)", "ssh: authentication failed"
            )

    rec = Recorder(folder, [Down()], clock=clock, cell="c")
    for _ in range(3):
        rec.sample_once()
        clock.t += 5
    summary = CellSummary(
        cell="c", plan="p", scenario="s", outcome=Outcome.PASS, window=Window(start_ts_s=T0, end_ts_s=T0 + 60)
    )
    record = judged_record(summary, rec, CRITERIA, Names())
    # an endpoint that failed every read of the window is the lab's fault, named first (not "no data")
    assert record.outcome is Outcome.LAB_FAULT
    assert record.summary.reason.startswith(
        "server pvs-01 failed 3 reads (typeperf:pvs-01): EndpointError: pvs-01: stream performance "
        "counters (typeperf): ssh: authentication failed"
    ), record.summary.reason


def test_one_or_two_failed_reads_are_listed_but_not_a_lab_fault(tmp_path: Path) -> None:
    from labctl.errors import EndpointError

    folder = RunFolder.create(tmp_path, load_lab(), "boot_storm")
    clock = FakeClock(T0)

    class Slow:
        name = "redfish:power"
        interval_s = 5.0
        calls = 0

        def read(self) -> list[Sample]:
            self.calls += 1
            if self.calls <= 2:  # a slow answer twice, then every read answers
                raise EndpointError("infra-01", "read power", "no answer within 5 lab s")
            return [Sample("redfish", "infra-01", "power_w", "W", clock.t, 200.0)]

    rec = Recorder(folder, [Slow()], clock=clock, cell="c")
    for _ in range(12):
        rec.sample_once()
        clock.t += 5
    summary = CellSummary(
        cell="c", plan="p", scenario="s", outcome=Outcome.PASS, window=Window(start_ts_s=T0, end_ts_s=T0 + 60)
    )
    record = judged_record(summary, rec, None, Names())
    assert record.outcome is Outcome.PASS and record.summary.reason == ""
