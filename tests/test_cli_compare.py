"""`labctl runs`, `labctl baseline` and `labctl compare` on the command line, over the embedded store.

Exit codes of compare: 0 no regression, 1 regression, 3 lab fault, 2 bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from tests.report.synthetic import make_untyped_run
from tests.store.runs import cell_id, make_run

Labctl = Callable[..., tuple[int, str]]


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "results"
    monkeypatch.setenv("LABCTL_RESULTS", str(out))
    monkeypatch.delenv("LABCTL_STORE", raising=False)
    return out


@pytest.fixture
def labctl(capsys: pytest.CaptureFixture[str]) -> Labctl:
    """Run labctl as `main()` does (labctl errors become one line and an exit code): (code, output)."""

    def run(*args: str) -> tuple[int, str]:
        code = run_cli(cli, list(args))
        out = capsys.readouterr()
        return code, out.out + out.err

    return run


def test_compare_exit_codes_with_run_folders(results: Path, labctl: Labctl) -> None:
    base = make_run(results, seed=1)
    same = make_run(results, seed=2, night=1)
    worse = make_run(results, seed=3, night=2, write_cache_spindles=2)
    faulty = make_run(results, seed=4, night=3, faults={cell_id(50): "never_booted"})

    code, out = labctl("compare", same.name, base.name)
    assert code == 0, out
    assert "no regression" in out and (same / "compare.json").exists()

    code, out = labctl("compare", worse.name, base.name)
    assert code == 1, out
    assert "REGRESSION" in out and cell_id(100) in out and "disk_queue_len" in out
    assert json.loads((worse / "compare.json").read_text())["cells"][0]["status"] == "regressed"

    code, out = labctl("compare", str(faulty), str(base))  # paths work as well as run ids
    assert code == 3, out
    assert "LAB FAULT" in out and "never reported boot_time_s" in out

    code, out = labctl("compare", same.name, base.name, same.name, "--markdown")  # several baselines
    assert code == 0 and out.startswith("**boot_storm on sim-2007")

    # a team store that is down does not stop a comparison of two folders: it has no history, and says so
    code, out = labctl("compare", same.name, base.name, "--store", "postgresql://nobody@127.0.0.1:9/none")
    assert code == 0 and "no history" in out and "cannot connect" in out

    code, out = labctl("compare", "no-such-run", base.name)
    assert code == 2 and "no-such-run" in out and out.count("\n") == 1


def test_compare_against_the_baseline_set_in_the_store(results: Path, labctl: Labctl) -> None:
    nights = [make_run(results, seed=s, night=s) for s in range(1, 8)]
    tonight = make_run(results, seed=20, night=20, write_cache_spindles=2)
    code, out = labctl("compare", tonight.name)
    assert code == 2 and "labctl baseline set sim-2007 boot_storm" in out  # no baseline yet: says how

    code, out = labctl("runs", "import", "--all")
    assert code == 0 and "8 of 8 runs" in out
    code, out = labctl(
        "baseline", "set", "sim-2007", "boot_storm", nights[0].name, nights[1].name, "--note", "week 1"
    )
    assert code == 0 and nights[1].name in out and "week 1" in out
    code, out = labctl("compare", tonight.name)
    assert code == 1, out
    assert "baseline set" in out and "history of 7 runs" in out  # noise from the nights before it
    code, out = labctl("compare", nights[-1].name, "--history", "0")
    assert code == 0, out

    code, out = labctl("baseline", "set", "sim-2007", "boot_storm", nights[2].name)
    assert code == 0
    code, out = labctl("baseline", "show", "sim-2007", "boot_storm", "--json")
    assert json.loads(out)["run_ids"] == [nights[2].name]
    code, out = labctl("baseline", "history", "sim-2007", "boot_storm")
    assert code == 0 and out.index(nights[0].name) < out.index(nights[2].name) and "week 1" in out

    code, out = labctl("baseline", "set", "other-lab", "boot_storm", nights[0].name)
    assert code == 2 and "is a run of sim-2007" in out
    code, out = labctl("baseline", "show", "other-lab", "boot_storm")
    assert code == 2 and "no baseline for other-lab" in out


def test_baselines_export_and_load_into_another_store(results: Path, labctl: Labctl, tmp_path: Path) -> None:
    run = make_run(results, seed=1)
    assert labctl("baseline", "set", "sim-2007", "boot_storm", run.name)[0] == 0  # imports the run first
    code, exported = labctl("baseline", "export")
    assert code == 0 and json.loads(exported)[0]["run_ids"] == [run.name]
    (tmp_path / "b.json").write_text(exported)
    other = f"duckdb:{tmp_path / 'other-store'}"
    assert labctl("baseline", "load", str(tmp_path / "b.json"), "--store", other)[0] == 0
    assert (
        labctl("baseline", "load", str(tmp_path / "b.json"), "--store", other)[0] == 0
    )  # again: not doubled
    code, out = labctl("baseline", "history", "sim-2007", "boot_storm", "--store", other, "--json")
    assert len(json.loads(out)) == 1
    (tmp_path / "bad.json").write_text('{"not": "a list"}')
    code, out = labctl("baseline", "load", str(tmp_path / "bad.json"))
    assert code == 2 and "bad.json" in out


def test_runs_list_filter_show_and_sql(results: Path, labctl: Labctl) -> None:
    make_run(results, seed=1, night=0)
    faulty = make_run(results, seed=2, night=2, faults={cell_id(25): "no_data"})
    make_untyped_run(results, run_id="20261101-000000-boot_storm-old1")  # written before the typed record
    code, out = labctl("runs", "import", "--all")
    assert code == 0 and "2 of 3 runs" in out and "skipped  20261101-000000-boot_storm-old1" in out
    code, out = labctl("runs", "import", "--all")  # again: the same two runs, nothing doubled
    assert code == 0
    code, out = labctl("runs", "sql", "SELECT count(*) AS n FROM cells", "--json")
    assert json.loads(out) == [{"n": 10}]

    code, out = labctl("runs")
    assert code == 0 and "lab_fault" in next(line for line in out.splitlines() if faulty.name in line)
    code, out = labctl("runs", "--outcome", "lab_fault", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [faulty.name]
    code, out = labctl("runs", "--since", "2026-11-19", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [faulty.name]
    code, out = labctl("runs", "--since", "yesterday")
    assert code == 2 and "--since" in out

    code, out = labctl("runs", "show", faulty.name)
    assert code == 0
    row = next(line for line in out.splitlines() if cell_id(25) in line)
    assert "no_data" in row and "disk counters silent" in row
    code, out = labctl("runs", "show", faulty.name, "--json")
    shown = json.loads(out)
    assert shown["outcome"] == "lab_fault" and shown["cells"][0]["figures"]["boot_time_s mean"] > 20
    code, out = labctl("runs", "show", "20990101-000000-x-0000")
    assert code == 2 and "labctl runs import" in out

    code, out = labctl(
        "runs",
        "sql",
        "SELECT cell, never_booted FROM cells WHERE run_id = '" + faulty.name + "' ORDER BY cell",
    )
    assert code == 0 and "5 rows" in out
    code, out = labctl("runs", "sql", "DROP TABLE runs")
    assert code == 2
    code, out = labctl("runs", "import", "nothing-here")
    assert code == 2 and "nothing-here" in out
