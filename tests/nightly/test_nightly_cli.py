"""`labctl nightly` on the command line without the simulator: nights judged with ``--run`` (run
folders written through the typed run record), a held lease, an unreachable store, a bad plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.lab.lease.file import FileLeaseStore
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.series import RunSeries
from labctl.recorder.sinks.allure import AllureSink
from labctl.store import open_store
from labctl.store.folder import read_run_folder
from tests.labfiles import make_test_lab
from tests.nightly.nights import cell_id, make_run
from tests.test_cli_compare import Labctl


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "results"
    monkeypatch.setenv("LABCTL_RESULTS", str(out))
    monkeypatch.setenv("LABCTL_LEASE_DIR", str(tmp_path / "leases"))
    for var in ("LABCTL_STORE", "LABCTL_LAB", "LABCTL_REPORT_URL", "LABCTL_HUB"):
        monkeypatch.delenv(var, raising=False)
    return out


def _allure_results(run: Path) -> None:
    """The Allure sink's results of a run folder, as the run would have written them."""
    folder = RunFolder.open(run)
    sink = AllureSink(folder)
    for record in read_run_folder(run).records.values():
        sink.cell_finished(record, RunSeries(folder))


def test_a_week_judged_from_run_folders(results: Path, labctl: Labctl) -> None:
    first = make_run(results, seed=1, night=1)
    code, out = labctl("nightly", "--run", first.name, "--no-report")
    assert code == 0, out
    assert "NO BASELINE yet" in out and "imported from the run folder" in out  # no sink ran: imported
    command = f"labctl baseline set sim-2007 boot_storm {first.name}"
    assert command in out and command in (first / "nightly.md").read_text()
    info = json.loads((first / "run.json").read_text())
    assert (
        info["extra"]["nightly"]["verdict"] == "passed" and info["extra"]["nightly"]["baseline_set"] is None
    )
    code, out = labctl(*command.split()[1:])
    assert code == 0, out

    same = make_run(results, seed=2, night=2)
    code, out = labctl("nightly", "--run", str(same), "--no-report", "--report-url", "https://ci.example/r")
    assert code == 0, out
    assert "no regression" in out and f"trends: https://ci.example/r/{same.name}/report/trends.html" in out
    assert (same / "report" / "trends.html").is_file() and (same / "compare.json").is_file()

    worse = make_run(results, seed=3, night=3, write_cache_spindles=2)
    _allure_results(worse)
    code, out = labctl("nightly", "--run", worse.name, "--no-report")
    assert code == 1, out
    md = (worse / "nightly.md").read_text()
    assert "REGRESSION" in md.splitlines()[0] and f"- `{cell_id(100)}`" in md
    first_change = md.splitlines()[md.splitlines().index(f"- `{cell_id(100)}`") + 1]
    assert first_change.startswith(("  - disk_queue_len", "  - disk_latency_ms", "  - retries"))
    marked = [
        r
        for r in map(json.loads, (p.read_text() for p in (worse / "allure-results").glob("*-result.json")))
        if {"name": "tag", "value": "regression"} in r["labels"]
    ]
    assert cell_id(100) in {next(lb["value"] for lb in r["labels"] if lb["name"] == "story") for r in marked}
    assert all(
        r["status"] == "failed" and "outcome: regression" in r["statusDetails"]["message"] for r in marked
    )

    broken = make_run(results, seed=4, night=4, faults={cell_id(50): "never_booted"})
    code, out = labctl("nightly", "--run", broken.name, "--no-report")
    assert code == 3, out
    assert "LAB FAULT" in out and f"{cell_id(50)}: lab_fault" in out

    # the store holds every night with its verdict, as the trends page reads them
    store = open_store(f"duckdb:{results / 'store'}")
    verdicts = store.sql("SELECT run_id, extra_json FROM runs ORDER BY started_utc").rows
    assert [json.loads(e)["nightly"]["exit_code"] for _, e in verdicts] == [0, 0, 1, 3]
    assert ">regression (exit 1)</td>" in (broken / "report" / "trends.html").read_text()


def test_a_lab_another_run_holds_is_one_line_before_anything_runs(
    results: Path, labctl: Labctl, tmp_path: Path
) -> None:
    lab = make_test_lab(tmp_path, clients=2)
    leases = FileLeaseStore(tmp_path / "leases")
    leases.reserve("lab:sim-2007", "alice@lab", "alice@lab (labctl lease take)", ttl_s=120)
    try:
        code, out = labctl("nightly", "--lab", str(lab))
    finally:
        leases.unreserve("lab:sim-2007", "alice@lab")
    assert code == 2, out
    (line,) = out.strip().splitlines()  # one line, before any pytest session or run folder
    assert line.startswith("error: lab:sim-2007 is leased by alice@lab") and "--lease-wait S" in line
    assert not results.exists()


def test_an_unreachable_store_is_a_lab_fault_before_the_lab_is_touched(results: Path, labctl: Labctl) -> None:
    code, out = labctl("nightly", "--store", "postgresql://labctl@127.0.0.1:9/labctl")
    assert code == 3, out
    assert "127.0.0.1:9" in out and "nothing was run" in out and not results.exists()


def test_an_unknown_plan_in_the_lab_file_names_the_file(
    results: Path, labctl: Labctl, tmp_path: Path
) -> None:
    lab = make_test_lab(tmp_path, clients=2, extra_lab_yaml="nightly: {plans: [boot_strom]}")
    code, out = labctl("nightly", "--lab", str(lab))
    assert code == 2, out
    assert f"{lab}: lab.nightly.plans: unknown plan 'boot_strom'" in out
    code, out = labctl("nightly", "--lab", str(lab), "no_such_plan")
    assert code == 2 and "unknown plan 'no_such_plan'" in out and "lab.nightly" not in out


def test_an_interrupted_night_is_stored_not_compared_and_exits_130(results: Path, labctl: Labctl) -> None:
    base = make_run(results, seed=1, night=1)
    code, out = labctl("baseline", "set", "sim-2007", "boot_storm", base.name)
    assert code == 0, out
    stopped = make_run(results, seed=2, night=2, faults={cell_id(50): "interrupted"})
    code, out = labctl("nightly", "--run", stopped.name, "--no-report")
    assert code == 130, out
    assert "INTERRUPTED" in out and "interrupted: what was measured is kept" in out
    assert not (stopped / "compare.json").exists()
    assert open_store(f"duckdb:{results / 'store'}").run(stopped.name) is not None
