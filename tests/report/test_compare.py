"""`labctl compare` is fair: a regression is outside the run-to-run noise and in the bad direction;
two runs of one configuration are not "regressed"; a lab fault is a lab fault.

Run folders come from :mod:`tests.store.runs` (typed records with the simulated lab's run-to-run
noise); the figures are read through the typed summaries, as `labctl compare` reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.errors import BadInputError
from labctl.records.figures import Direction, RunFigures, cell_figures
from labctl.records.run_record import ClientOutcome, Outcome
from labctl.report.compare import (
    EXIT_LAB_FAULT,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNLIKE,
    CellStatus,
    FigureStatus,
    compare,
)
from labctl.store.folder import read_run_folder
from tests.store.runs import cell_id, make_run


def figures(results: Path, seed: int, night: int = 0, **kw: object) -> RunFigures:
    return read_run_folder(make_run(results, seed=seed, night=night, **kw)).figures()  # type: ignore[arg-type]


def test_a_a_runs_of_one_configuration_are_not_a_regression(tmp_path: Path) -> None:
    """Twenty pairs of runs of the same lab, each differing only by the run-to-run noise: none is
    flagged, and the report says so."""
    runs = [figures(tmp_path, seed=s, night=s) for s in range(1, 41)]
    for base, run in zip(runs[::2], runs[1::2], strict=True):
        result = compare(run, [base])
        assert result.exit_code == EXIT_OK, result.text()
        assert not result.regressions
        assert all(c.status is CellStatus.WITHIN for c in result.cells), result.text()
    text = compare(runs[1], [runs[0]]).text()
    assert text.splitlines()[1] == "no regression: 5 within"
    print(text)  # the A/A output, for the note (pytest -s)


def test_fewer_write_cache_spindles_is_caught_with_queue_and_retries_first(tmp_path: Path) -> None:
    """The write-cache RAID 10 of 4 disks becomes 2: the large cells regress, and what explains it
    (disk queue, retries, disk latency) is named first; small cells stay within the noise."""
    base = figures(tmp_path, seed=1)
    run = figures(tmp_path, seed=2, night=1, write_cache_spindles=2)
    result = compare(run, [base])
    print(result.text())  # the regression output, for the note
    assert result.exit_code == EXIT_REGRESSION
    regressed = {c.cell: c for c in result.of(CellStatus.REGRESSED)}
    assert set(regressed) == {cell_id(50), cell_id(100)}
    assert result.cells[0].cell in regressed  # regressed cells first
    for c in regressed.values():
        first = [f.figure.split(" ")[0] for f in c.figures[:3]]
        assert set(first) <= {"disk_queue_len", "retries", "disk_latency_ms"}, first
        assert any(f.startswith("disk_queue_len") for f in first) or "retries" in first
        worst = c.figures[0]
        assert worst.status is FigureStatus.REGRESSED and worst.direction is Direction.UP_IS_WORSE
        assert worst.delta is not None and worst.tolerance is not None and worst.delta > worst.tolerance
        assert worst.score is not None and worst.score > 1
    assert {c.status for c in result.cells if c.cell not in regressed} == {CellStatus.WITHIN}
    # the text names cell, figure, baseline -> run, the change and the noise it was judged against
    line = next(ln for ln in result.text().splitlines() if "regressed" in ln and "disk_queue_len mean" in ln)
    assert "->" in line and "noise ±" in line and "%" in line


def test_a_lab_fault_is_reported_as_such_never_as_a_regression(tmp_path: Path) -> None:
    base = figures(tmp_path, seed=1)
    # worse numbers AND a client that never booted: the cell measured the lab, not the product
    run = figures(tmp_path, seed=2, night=1, write_cache_spindles=2, faults={cell_id(100): "never_booted"})
    result = compare(run, [base])
    cell = next(c for c in result.cells if c.cell == cell_id(100))
    assert cell.status is CellStatus.LAB_FAULT and "never reported" in cell.reason
    assert cell.figures == []  # not judged at all
    assert result.exit_code == EXIT_REGRESSION  # the 50-client cell, measured cleanly, did regress
    only_fault = compare(figures(tmp_path, seed=3, night=2, faults={cell_id(50): "no_data"}), [base])
    assert only_fault.exit_code == EXIT_LAB_FAULT
    assert [c.cell for c in only_fault.of(CellStatus.LAB_FAULT)] == [cell_id(50)]
    assert only_fault.headline().startswith("LAB FAULT")
    interrupted = compare(figures(tmp_path, seed=4, night=3, faults={cell_id(5): "interrupted"}), [base])
    assert (
        interrupted.exit_code == EXIT_LAB_FAULT
        and "interrupted" in interrupted.of(CellStatus.LAB_FAULT)[0].reason
    )


def test_a_lab_fault_in_the_baseline(tmp_path: Path) -> None:
    good = figures(tmp_path, seed=1)
    faulty = figures(tmp_path, seed=2, night=1, faults={cell_id(25): "never_booted"})
    run = figures(tmp_path, seed=3, night=2)
    alone = compare(run, [faulty])  # the only baseline run of the cell is a lab fault
    cell = next(c for c in alone.cells if c.cell == cell_id(25))
    assert cell.status is CellStatus.LAB_FAULT and faulty.run_id in cell.excluded
    assert alone.exit_code == EXIT_LAB_FAULT
    both = compare(run, [faulty, good])  # another baseline run measured it: compared with that one
    cell = next(c for c in both.cells if c.cell == cell_id(25))
    assert cell.status is CellStatus.WITHIN and cell.baseline_runs == [good.run_id]
    assert both.exit_code == EXIT_OK


def test_several_baseline_runs_measure_the_noise(tmp_path: Path) -> None:
    base = [figures(tmp_path, seed=s, night=s) for s in range(1, 6)]
    run = figures(tmp_path, seed=9, night=9)
    one = compare(run, base[:1])
    five = compare(run, base)
    f1 = next(
        f for c in one.cells if c.cell == cell_id(100) for f in c.figures if f.figure == "boot_time_s mean"
    )
    f5 = next(
        f for c in five.cells if c.cell == cell_id(100) for f in c.figures if f.figure == "boot_time_s mean"
    )
    assert f1.noise_from == "prior" and f5.noise_from == "prior + 5 baseline runs"
    assert f5.noise_df == f1.noise_df + 4
    assert f5.baseline == pytest.approx(sum(f5.baseline_values) / 5) and len(f5.baseline_values) == 5
    assert f5.tolerance is not None and f1.tolerance is not None and f5.tolerance < f1.tolerance
    assert five.exit_code == EXIT_OK


def test_a_step_in_the_history_is_a_level_change_not_noise(tmp_path: Path) -> None:
    """Nine nights on 4 spindles, six on 2: E-divisive finds where the level moved, the noise is
    measured inside each stretch, and the report says when the level moved."""
    hist_runs = [figures(tmp_path, seed=s, night=s) for s in range(1, 10)]
    hist_runs += [figures(tmp_path, seed=s, night=s, write_cache_spindles=2) for s in range(10, 16)]
    history = [
        (r.run_id, {c: {k: f.value for k, f in cf.figures.items()} for c, cf in r.cells.items()})
        for r in hist_runs
    ]
    run = figures(tmp_path, seed=20, night=20, write_cache_spindles=2)
    result = compare(run, [hist_runs[-1]], history=history)
    queue = next(
        f
        for c in result.cells
        if c.cell == cell_id(100)
        for f in c.figures
        if f.figure.startswith("disk_queue_len mean")
    )
    assert queue.status is FigureStatus.WITHIN  # same level as the newest stretch
    assert [s.at_run for s in queue.shifts] == [hist_runs[9].run_id]
    assert queue.shifts[0].after > 3 * queue.shifts[0].before
    assert "1 level change" in queue.noise_from
    # pooled across the whole history instead, the step would have counted as noise
    assert queue.noise_sd is not None and queue.noise_sd < 0.5 * _sd(
        [v[cell_id(100)][queue.figure] for _, v in history]
    )
    assert "level moved at" in queue.line()


def _sd(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def test_a_regressed_night_in_the_history_does_not_widen_the_noise(tmp_path: Path) -> None:
    hist = [figures(tmp_path, seed=s, night=s) for s in range(1, 9)]
    hist.insert(5, figures(tmp_path, seed=50, night=50, write_cache_spindles=2))  # night 6 regressed
    history = [
        (r.run_id, {c: {k: f.value for k, f in cf.figures.items()} for c, cf in r.cells.items()})
        for r in hist
    ]
    run = figures(tmp_path, seed=60, night=60, write_cache_spindles=2)
    result = compare(run, [hist[0]], history=history)
    assert result.exit_code == EXIT_REGRESSION
    queue = next(
        f
        for c in result.cells
        if c.cell == cell_id(100)
        for f in c.figures
        if f.figure.startswith("disk_queue_len mean")
    )
    assert queue.status is FigureStatus.REGRESSED and "1 outlier left out" in queue.noise_from


def test_directions_neutral_figures_and_improvements(tmp_path: Path) -> None:
    # eight nights on 2 spindles, then 4: with the history measuring the noise, the drop of the
    # queue is an improvement (one baseline run alone would leave a noise band too wide to tell)
    hist = [figures(tmp_path, seed=s, night=s, write_cache_spindles=2) for s in range(1, 9)]
    history = [
        (r.run_id, {c: {k: f.value for k, f in cf.figures.items()} for c, cf in r.cells.items()})
        for r in hist
    ]
    better = figures(tmp_path, seed=20, night=20)
    result = compare(better, [hist[-1]], history=history)
    assert result.exit_code == EXIT_OK and result.of(CellStatus.IMPROVED)
    improved = {
        f.figure.split(" ")[0]
        for c in result.of(CellStatus.IMPROVED)
        for f in c.figures
        if f.status is FigureStatus.IMPROVED
    }
    assert "disk_queue_len" in improved
    # a neutral figure that moves is "changed", never a regression
    base = figures(tmp_path, seed=30, night=30)
    run = figures(tmp_path, seed=31, night=31)
    cell = run.cells[cell_id(100)]
    key = next(k for k in cell.figures if k.startswith("nic_sent_util_pct peak"))
    cell.figures[key] = cell.figures[key].model_copy(update={"value": cell.figures[key].value * 3})
    moved = compare(run, [base])
    nic = next(f for c in moved.cells if c.cell == cell_id(100) for f in c.figures if f.figure == key)
    assert nic.status is FigureStatus.CHANGED and moved.exit_code == EXIT_OK


def test_low_coverage_is_not_compared_and_a_failed_verdict_regresses(tmp_path: Path) -> None:
    base = figures(tmp_path, seed=1)
    run = figures(tmp_path, seed=2, night=1)
    cell = run.cells[cell_id(25)]
    key = next(k for k in cell.figures if k.startswith("cpu_pct peak"))
    cell.figures[key] = cell.figures[key].model_copy(update={"coverage": 0.5, "value": 99.0})
    run.cells[cell_id(5)] = run.cells[cell_id(5)].model_copy(
        update={
            "verdict_outcome": Outcome.FAIL,
            "outcome": Outcome.FAIL,
            "reason": "retries per client: 60 on optiplex-002",
        }
    )
    result = compare(run, [base])
    cpu = next(f for c in result.cells if c.cell == cell_id(25) for f in c.figures if f.figure == key)
    assert cpu.status is FigureStatus.NOT_COMPARED and "coverage 50%" in cpu.note
    five = next(c for c in result.cells if c.cell == cell_id(5))
    assert five.status is CellStatus.REGRESSED
    verdict = next(f for f in five.figures if f.figure == "verdict")
    assert verdict.status is FigureStatus.REGRESSED and verdict.note.startswith("pass -> fail")


def test_missing_and_new_cells_and_bad_input(tmp_path: Path) -> None:
    base = figures(tmp_path, seed=1, group_sizes=(1, 5, 25))
    run = figures(tmp_path, seed=2, night=1, group_sizes=(5, 25, 50))
    # the two runs' group sizes differ: unlike runs (exit 2) unless accepted, then judged by their cells
    assert compare(run, [base]).exit_code == EXIT_UNLIKE
    result = compare(run, [base], allow_unlike=True)
    status = {c.cell: c.status for c in result.cells}
    assert status[cell_id(1)] is CellStatus.MISSING and status[cell_id(50)] is CellStatus.NEW
    assert result.exit_code == EXIT_LAB_FAULT  # the run did not measure what the baseline has
    # unless those cells are left out
    assert compare(run, [base], cells="*-0[25]*", allow_unlike=True).exit_code == EXIT_OK
    with pytest.raises(BadInputError, match="no cell in common"):
        compare(figures(tmp_path, seed=3, night=3, group_sizes=(100,)), [base])
    with pytest.raises(BadInputError, match="no baseline"):
        compare(run, [])


def test_never_booted_counts_machines_without_a_boot_time(tmp_path: Path) -> None:
    data = read_run_folder(make_run(tmp_path, seed=1, group_sizes=(5,)))
    (record,) = data.records.values()
    summary = record.summary
    assert cell_figures(summary).figures["never_booted count"].value == 0
    lost = summary.model_copy(
        update={
            "clients": {
                **summary.clients,
                "optiplex-002": ClientOutcome(name="optiplex-002", outcome="timeout", detail="never came up"),
                "copier-1": ClientOutcome(name="copier-1", role="copier", outcome="copied", copy_s=12.0),
            }
        }
    )
    figs = cell_figures(lost).figures
    assert figs["never_booted count"].value == 1  # the copier is not expected to boot
    assert figs["never_booted count"].n == 5
    assert figs["copy_s mean"].value == 12.0


def test_the_comparison_is_written_as_json_and_markdown(tmp_path: Path) -> None:
    base = figures(tmp_path, seed=1)
    run = figures(tmp_path, seed=2, night=1, write_cache_spindles=2)
    result = compare(run, [base])
    data = json.loads(result.write(tmp_path / "compare.json").read_text())
    assert data["run_id"] == run.run_id and data["baseline_runs"] == [base.run_id]
    assert data["cells"][0]["status"] == "regressed" and data["cells"][0]["figures"][0]["tolerance"] > 0
    md = result.markdown()
    assert md.startswith("**boot_storm on sim-2007: REGRESSION") and cell_id(100) in md and "→" in md
