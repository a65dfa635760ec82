"""Run vs baseline, cell by cell, with tolerances."""

from __future__ import annotations

import json
from pathlib import Path

from labctl.recorder import read_cell_verdicts, read_series
from labctl.recorder.atomic import write_json_atomic
from labctl.recorder.cells import read_cell_summaries, write_cell_summary
from labctl.records.run_record import Outcome
from labctl.report.compare import compare_runs
from tests.report.synthetic import make_run


def test_same_run_is_within_tolerance(tmp_path: Path) -> None:
    a = make_run(tmp_path, run_id="a", group_sizes=(5, 50))
    b = make_run(tmp_path, run_id="b", group_sizes=(5, 50))  # same seed: same data
    res = compare_runs(a, b)
    assert res.regressed == [] and res.improved == []
    assert {r.quantity.split(" ")[0] for r in res.rows} >= {
        "boot_time_s",
        "retries",
        "cpu_pct",
        "disk_queue_len",
        "nic_sent_util_pct",
        "memory_used_mb",
        "verdict",
    }
    assert "everything within tolerance" in res.text()
    # each cell's counters come from that cell's own rows of series.csv
    for cell in ("boot_storm-standalone-005", "boot_storm-standalone-050"):
        (cpu,) = read_series(a, cell=cell, metric="cpu_pct", entity="pvs-01")
        row = next(r for r in res.rows if r.cell == cell and r.quantity == "cpu_pct peak pvs-01")
        assert row.run == row.baseline == max(cpu.values)


def test_slower_boots_a_lost_cell_and_a_worse_verdict_regress(tmp_path: Path) -> None:
    base = make_run(tmp_path, run_id="base", group_sizes=(5, 50, 75))
    run = make_run(tmp_path, run_id="run", group_sizes=(5, 50))  # the 75 cell is missing
    s = read_cell_summaries(run)["boot_storm-standalone-050"]
    for c in s["clients"].values():
        c["boot_time_s"] += 10  # 36 s -> 46 s: beyond 10 % + 2 s
    s["outcome"] = "fail"
    write_cell_summary(run, "boot_storm-standalone-050", {k: v for k, v in s.items() if k != "cell"})
    # the synthetic run is judged (verdicts.json), and compare reads the verdict from there
    verdict = read_cell_verdicts(run)["boot_storm-standalone-050"]
    write_json_atomic(
        run / "cells/boot_storm-standalone-050/verdicts.json",
        verdict.model_copy(update={"outcome": Outcome.FAIL}),
    )
    res = compare_runs(run, base)
    bad = {(r.cell, r.quantity, r.status) for r in res.regressed}
    assert ("boot_storm-standalone-050", "boot_time_s mean", "regressed") in bad
    assert ("boot_storm-standalone-050", "boot_time_s max", "regressed") in bad
    assert ("boot_storm-standalone-050", "verdict", "regressed") in bad
    assert ("boot_storm-standalone-075", "cell", "missing") in bad
    assert not any(r.cell == "boot_storm-standalone-005" for r in res.regressed)
    row = next(r for r in res.rows if r.quantity == "boot_time_s mean" and r.cell.endswith("050"))
    assert row.delta is not None and 9.9 < row.delta < 10.1
    text = res.text()
    assert "4 regressed" in text and "boot_time_s mean" in text
    out = res.write(tmp_path / "compare.json")
    assert json.loads(out.read_text())["regressed"] == 4


def test_tolerances_are_per_quantity(tmp_path: Path) -> None:
    base = make_run(tmp_path, run_id="base", group_sizes=(50,))
    run = make_run(tmp_path, run_id="run", group_sizes=(50,), seed=1)  # other noise, same trend
    assert compare_runs(run, base).regressed == []
    tight = compare_runs(run, base, tolerances={"cpu_pct": (0.0, 0.0), "boot_time_s": (0.0, 0.0)})
    assert {r.quantity.split(" ")[0] for r in tight.regressed} >= {"boot_time_s"}
