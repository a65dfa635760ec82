"""Past nights from the store, on both backends: the trends' nights and Allure 3's history file."""

from __future__ import annotations

import json
from pathlib import Path

from labctl.recorder.runfolder import RunFolder
from labctl.recorder.series import RunSeries
from labctl.recorder.sinks.allure import AllureSink
from labctl.store import ResultsStore, import_run
from labctl.store.folder import read_run_folder
from labctl.store.history import allure_history_from_store, allure_history_id, night_history
from labctl.store.rows import utc
from tests.nightly.nights import cell_id, make_run


def _week(store: ResultsStore, results: Path) -> list[Path]:
    """Three nights of sim-2007 / boot_storm (the second regressed by the nightly's verdict, the
    third with a lab fault) and one night of another lab, all imported."""
    nights = [
        make_run(results, seed=1, night=1),
        make_run(results, seed=2, night=2, write_cache_spindles=2),
        make_run(results, seed=3, night=3, faults={cell_id(50): "never_booted"}),
        make_run(results, seed=4, night=2, lab="other-lab"),
    ]
    RunFolder.open(nights[1]).annotate(
        nightly={"verdict": "regression", "regressed": {cell_id(100): ["disk_queue_len mean pvs-01/D:"]}}
    )
    for n in nights:
        import_run(store, n)
    return nights


def test_nights_come_oldest_first_with_their_lab_faults_and_verdicts(
    store: ResultsStore, tmp_path: Path
) -> None:
    first, second, third, _ = _week(store, tmp_path)
    nights = night_history(store, "sim-2007", "boot_storm")
    assert [f.run_id for f, _ in nights] == [first.name, second.name, third.name]  # not the other lab's
    assert nights[2][0].cells[cell_id(50)].outcome.value == "lab_fault"  # shown, not left out
    assert nights[1][1]["nightly"]["regressed"] == {cell_id(100): ["disk_queue_len mean pvs-01/D:"]}
    until = utc(read_run_folder(second).info.started.wall_utc)
    assert [f.run_id for f, _ in night_history(store, "sim-2007", "boot_storm", until=until)] == [
        first.name,
        second.name,
    ]
    assert [f.run_id for f, _ in night_history(store, "sim-2007", "boot_storm", runs=1)] == [third.name]


def test_allure_history_has_the_ids_allure_gives_the_sinks_results(
    store: ResultsStore, tmp_path: Path
) -> None:
    first, second, third, _ = _week(store, tmp_path)
    before = utc(read_run_folder(third).info.started.wall_utc)
    path = allure_history_from_store(store, "sim-2007", "boot_storm", before=before, out=tmp_path / "h.jsonl")
    points = [json.loads(line) for line in path.read_text().splitlines()]
    assert [p["name"].rsplit(" - ", 1)[1] for p in points] == [first.name, second.name]  # oldest first
    assert points[0]["timestamp"] < points[1]["timestamp"]

    # the id of each cell is the one Allure computes for the Allure sink's result of that cell
    data = read_run_folder(second)
    sink = AllureSink(RunFolder.open(second))
    for cell, record in data.records.items():
        result = sink.result(record, RunSeries(RunFolder.open(second)))
        params = [(p.name, p.value) for p in result.parameters]
        key = allure_history_id("sim-2007", "boot_storm", cell, params)
        entry = points[1]["testResults"][key]
        assert entry["fullName"] == result.fullName and entry["historyId"] == key
        if cell == cell_id(100):  # the night the nightly found it regressed: red in the history
            assert entry["status"] == "failed" and entry["message"].startswith("regression: disk_queue_len")
        else:
            assert entry["status"] == result.status
    assert sorted(points[1]["knownTestCaseIds"]) == points[1]["knownTestCaseIds"]

    # every night up to now, and a link to each night's report when the results are published
    everything = allure_history_from_store(
        store, "sim-2007", "boot_storm", report_url="https://ci.example/results", out=tmp_path / "all.jsonl"
    )
    last = json.loads(everything.read_text().splitlines()[-1])
    assert last["url"] == f"https://ci.example/results/{third.name}/report/index.html"
    broken = next(e for e in last["testResults"].values() if e["fullName"].endswith(cell_id(50)))
    assert broken["status"] == "broken" and "outcome: lab_fault (LabFault)" in broken["message"]
