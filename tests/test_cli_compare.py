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
    code, out = labctl("baseline", "show", "other-lab", "boot_storm")  # a lab nobody knows: named as such
    assert code == 2 and "'other-lab': not an inventory file" in out and "sim-2007" in out
    assert out.count("\n") == 1
    code, out = labctl("baseline", "show", "hardware/sim-2007.yaml", "boot_storm")  # a file: its lab name
    assert code == 0 and "baseline sim-2007 / boot_storm" in out


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


def test_quick_and_full_runs_have_their_own_baselines_and_unlike_runs_are_named(
    results: Path, labctl: Labctl
) -> None:
    quick = [make_run(results, seed=s, night=s, profile="quick") for s in (1, 2, 3)]
    full = [make_run(results, seed=s, night=s, profile="full", window_s=600) for s in (4, 5)]
    long_quick = make_run(results, seed=6, night=6, profile="quick", window_s=360)
    other_lab = make_run(results, seed=7, night=7, profile="quick", lab="vdi-mcs-sc40-1000")
    assert labctl("runs", "import", "--all")[0] == 0

    code, out = labctl("baseline", "set", "sim-2007", "boot_storm", quick[0].name, full[0].name)
    assert (
        code == 2 and "not alike" in out and "profile quick vs full" in out and "window_s 120.0 vs 600" in out
    )
    assert labctl("baseline", "set", "sim-2007", "boot_storm", quick[0].name, "--note", "q")[0] == 0
    assert labctl("baseline", "set", "sim-2007", "boot_storm", full[0].name, "--note", "f")[0] == 0
    code, out = labctl("baseline", "show", "sim-2007", "boot_storm", "--profile", "quick", "--json")
    assert (
        code == 0 and json.loads(out)["run_ids"] == [quick[0].name] and json.loads(out)["profile"] == "quick"
    )
    code, out = labctl("baseline", "show", "sim-2007", "boot_storm")  # the newest, and the other kind
    assert code == 0 and "profile full" in out and "also: set" in out and "profile quick" in out

    # each run is compared with its own kind's baseline, and its noise history is its kind's
    code, out = labctl("compare", quick[2].name)
    assert code == 0, out
    assert f"against {quick[0].name}" in out and full[0].name not in out and "history of 2 runs" in out
    code, out = labctl("compare", full[1].name)
    assert code == 0 and f"against {full[0].name}" in out and "history of 1 runs" in out

    # unlike runs: compared, the difference named first, exit 2 unless accepted
    code, out = labctl("compare", long_quick.name, quick[0].name)
    assert code == 2, out
    assert "UNLIKE RUNS" in out and "window_s 360 vs 120" in out and "figures say no regression" in out
    assert json.loads((long_quick / "compare.json").read_text())["unlike"]
    code, out = labctl("compare", long_quick.name, quick[0].name, "--allow-unlike")
    assert code == 0 and "UNLIKE RUNS (accepted with --allow-unlike)" in out
    code, out = labctl("compare", full[1].name, quick[0].name, "--markdown")
    assert code == 2 and "profile full vs quick" in out
    code, out = labctl("compare", other_lab.name, quick[0].name)
    assert code == 2 and "lab vdi-mcs-sc40-1000 vs sim-2007" in out
    code, out = labctl("compare", long_quick.name)  # no baseline of its kind: says which kinds have one
    assert code == 2 and "(profile quick)" in out and "there is one for profile" in out

    # the listing shows the profile and filters by it; --lab takes a name or the inventory file
    code, out = labctl("runs", "--profile", "full", "--json")
    assert code == 0 and sorted(r["run_id"] for r in json.loads(out)) == sorted(p.name for p in full)
    code, out = labctl("runs", "--lab", "hardware/sim-2007.yaml", "--json")
    assert code == 0 and len(json.loads(out)) == 6
    code, out = labctl("runs", "--lab", "no-such-lab")
    assert code == 2 and out.count("\n") == 1 and "no-such-lab" in out and "sim-2007" in out
    code, out = labctl("runs", "show", quick[0].name)
    assert code == 0 and "kind:     profile quick; group_sizes=" in out


def test_a_run_of_unknown_kind_is_compared_with_a_note(results: Path, labctl: Labctl) -> None:
    old = make_run(results, seed=1)  # parameters at the top level, no profile (an older run.json)
    new = make_run(results, seed=2, night=1, profile="quick")
    code, out = labctl("compare", new.name, old.name)
    assert code == 0 and "cannot tell whether the runs are alike" not in out  # old has its parameters
    info = json.loads((old / "run.json").read_text())
    info["parameters"] = {"pytest_args": []}  # an older run: only pytest's arguments
    (old / "run.json").write_text(json.dumps(info))
    code, out = labctl("compare", new.name, old.name)
    assert code == 0 and f"{old.name}: profile and parameters not recorded" in out


def test_the_vdi_headline_in_runs_and_compare(results: Path, labctl: Labctl) -> None:
    from tests.report.synthetic_vdi import make_vdi_run

    base = make_vdi_run(results, run_id="20261120-020000-vdi_storm-0001", sizes=(50,))
    now = make_vdi_run(results, run_id="20261121-020000-vdi_storm-0002", sizes=(50,), saturate_at=41)
    assert labctl("runs", "import", "--all")[0] == 0
    code, out = labctl("runs", "--json")
    heads = {r["run_id"]: r["headline"] for r in json.loads(out)}
    assert heads[base.name].startswith("not saturated up to 50 sessions (baseline 0.80 s); ")
    assert heads[now.name].startswith("saturated at 41 sessions") and "desktops good" in heads[now.name]
    code, out = labctl("runs", "show", now.name)
    assert code == 0 and "headline: saturated at 41 sessions" in out
    code, out = labctl("compare", now.name, base.name)
    assert code == 0, out
    assert "index: saturated at 41 sessions (baseline 0.80 s)" in out
    assert "(baseline: not saturated up to 50 sessions" in out
    assert json.loads((now / "compare.json").read_text())["headlines"]["vdi_storm-default-050"]["run"]


def test_runs_show_has_the_columns_of_its_plan_kind(results: Path, labctl: Labctl) -> None:
    """A VDI run shows desktops, logons, the arrays and the index; a 2007 run its boot figures
    (a VDI run's columns were the 2007 ones, all '-', and its array counted as a client)."""
    from tests.report.synthetic_vdi import make_vdi_run

    vdi = make_vdi_run(results, sizes=(50,))
    streaming = make_run(results, seed=1)
    assert labctl("runs", "import", "--all")[0] == 0

    code, out = labctl("runs", "show", vdi.name)
    assert code == 0, out
    assert "logon mean s" in out and "array IOPS peak" in out and "boot mean s" not in out
    row = next(line for line in out.splitlines() if "vdi_storm" in line and "default" in line)
    assert " 50 " in f" {row} "  # the desktops, not desktops + the array

    code, out = labctl("runs", "show", streaming.name)
    assert code == 0, out
    assert "boot mean s" in out and "logon mean s" not in out
