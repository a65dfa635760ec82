"""The night's verdict and its chat summary: which exit code a night gets, and what the message
says first."""

from __future__ import annotations

from pathlib import Path

from labctl.records.run_record import Outcome
from labctl.report.compare import CellStatus, compare
from labctl.report.summary_text import Verdict, markdown, night_verdict, text
from tests.nightly.nights import cell_id, compared, figures, make_run


def test_exit_codes_of_a_week(tmp_path: Path) -> None:
    base = make_run(tmp_path, seed=1)
    same = make_run(tmp_path, seed=2, night=1)
    worse = make_run(tmp_path, seed=3, night=2, write_cache_spindles=2)
    broken = make_run(tmp_path, seed=4, night=3, faults={cell_id(100): "never_booted"})
    both = make_run(tmp_path, seed=5, night=4, write_cache_spindles=2, faults={cell_id(1): "no_data"})

    ok = night_verdict(figures(same), compared(same, base))
    assert (ok.verdict, ok.exit_code) == (Verdict.PASSED, 0)
    assert ok.headline().startswith("no regression") and not ok.regressed and not ok.lab_faults

    bad = night_verdict(figures(worse), compared(worse, base))
    assert (bad.verdict, bad.exit_code) == (Verdict.REGRESSION, 1)
    assert bad.regressed[cell_id(100)][0].startswith(("disk_queue_len", "disk_latency_ms", "retries"))
    assert bad.headline().startswith("REGRESSION") and cell_id(100) in bad.headline()

    lab = night_verdict(figures(broken), compared(broken, base))
    assert (lab.verdict, lab.exit_code) == (Verdict.LAB_FAULT, 3)
    assert list(lab.lab_faults) == [cell_id(100)] and "never reported" in lab.lab_faults[cell_id(100)]

    # a lab fault in one cell does not hide a regression in another, nor the other way round
    mixed = night_verdict(figures(both), compared(both, base))
    assert (mixed.verdict, mixed.exit_code) == (Verdict.REGRESSION, 1)
    assert cell_id(1) in mixed.lab_faults and cell_id(1) not in mixed.regressed


def test_failed_criteria_fail_the_night_even_when_the_baseline_failed_them_too(tmp_path: Path) -> None:
    base, run = figures(make_run(tmp_path, seed=1)), figures(make_run(tmp_path, seed=2, night=1))
    for f in (base, run):  # the same criterion failed in both: no regression, still a failure
        c = f.cells[cell_id(5)]
        f.cells[cell_id(5)] = c.model_copy(
            update={"outcome": Outcome.FAIL, "verdict_outcome": Outcome.FAIL, "reason": "queue too long"}
        )
    v = night_verdict(run, compare(run, [base], baseline_set="s"))
    assert (v.verdict, v.exit_code) == (Verdict.FAILED, 1)
    assert v.failed == {cell_id(5): "queue too long"} and not v.regressed


def test_without_a_baseline_the_run_decides_and_the_summary_says_how_to_set_one(tmp_path: Path) -> None:
    run = figures(make_run(tmp_path, seed=1))
    v = night_verdict(run, None)
    assert (v.verdict, v.exit_code, v.compared) == (Verdict.PASSED, 0, False)
    command = f"labctl baseline set sim-2007 boot_storm {run.run_id}"
    assert "NO BASELINE" in v.headline() and command in text(v) and f"`{command}`" in markdown(v)

    broken = figures(make_run(tmp_path, seed=2, night=1, faults={cell_id(50): "never_booted"}))
    v = night_verdict(broken, None)
    assert (v.verdict, v.exit_code) == (Verdict.LAB_FAULT, 3) and "baseline set" not in text(v)

    stopped = run.model_copy(update={"outcome": "interrupted"})
    v = night_verdict(stopped, None)
    assert (v.verdict, v.exit_code) == (Verdict.INTERRUPTED, 130)


def test_a_run_that_failed_or_died_outside_its_cells_is_not_a_clean_night(tmp_path: Path) -> None:
    run = figures(make_run(tmp_path, seed=1))  # every cell passed
    own_check = night_verdict(run.model_copy(update={"outcome": "failed"}), None, run_reason="assert 4 == 5")
    assert (own_check.verdict, own_check.exit_code, own_check.failed) == (
        Verdict.FAILED,
        1,
        {"(run)": "assert 4 == 5"},
    )
    killed = night_verdict(run.model_copy(update={"outcome": "running"}), None)
    assert (killed.verdict, killed.exit_code) == (Verdict.LAB_FAULT, 3) and "killed" in killed.lab_faults[
        "(run)"
    ]
    crashed = night_verdict(
        run.model_copy(update={"outcome": "error"}), None, run_reason="pytest ended with internal_error"
    )
    assert (crashed.verdict, crashed.lab_faults) == (
        Verdict.LAB_FAULT,
        {"(run)": "pytest ended with internal_error"},
    )


def test_the_message_puts_the_verdict_then_the_responsible_metrics_first(tmp_path: Path) -> None:
    base = make_run(tmp_path, seed=1)
    worse = make_run(tmp_path, seed=3, night=2, write_cache_spindles=2, faults={cell_id(1): "no_data"})
    comparison = compared(worse, base)
    v = night_verdict(figures(worse), comparison)
    links = {"Allure": "https://ci.example/results/x/report/index.html", "trends": "/r/x/report/trends.html"}
    md = markdown(v, comparison, links).splitlines()
    assert md[0].startswith("**boot_storm on sim-2007, night of ") and md[0].endswith("(exit 1)")
    assert "REGRESSION" in md[0]
    worst = comparison.of(CellStatus.REGRESSED)[0]
    cell_line = md.index(f"- `{worst.cell}`")
    assert md[cell_line + 1].startswith(f"  - {worst.regressed[0].figure} ")  # the furthest outside the noise
    assert md.index("**Regressions** (the responsible metrics first)") < md.index(
        "**Lab faults** (the lab, not the product)"
    )
    assert any(line.startswith(f"- `{cell_id(1)}`: no_data") for line in md)
    assert md[-1] == f"Reports: [Allure]({links['Allure']}) · [trends]({links['trends']})"
    plain = text(v, comparison, links)
    assert "**" not in plain and "`" not in plain and f"Allure: {links['Allure']}" in plain
