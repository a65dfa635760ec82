"""`labctl report [RUN]`: build a run's Allure report (one offline file) and its figures page."""

from __future__ import annotations

import os
from pathlib import Path

import click

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RESULTS_ENV = "LABCTL_RESULTS"


@click.command(short_help="Build the HTML report of a run (default: the latest run in results/).")
@click.argument("run", required=False)
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Where run folders are (env {RESULTS_ENV}; default: results/ in the project).",
)
@click.option("--history/--no-history", default=True, help="Keep Allure history across runs (trends).")
@click.option("--open", "open_", is_flag=True, help="Open the report in the default browser afterwards.")
def report(run: str | None, results_dir: Path | None, history: bool, open_: bool) -> int:
    """Build the report of RUN (a run folder, or a run id in the results folder).

    \b
    Writes, inside the run folder:
      report/index.html    the Allure report: one file that works offline
      report/figures.html  the paper's figures: boot time and retries vs group size,
                           CPU / memory / NIC / disk queue over time per group size
    Allure history (trends across runs) goes to <results>/allure-history.jsonl.
    Reads the run folder only; never talks to the lab.
    """
    from labctl.report.build import build_report, resolve_run

    results = results_dir or Path(os.environ.get(RESULTS_ENV) or PROJECT_ROOT / "results")
    run_dir = resolve_run(run, results)
    built = build_report(run_dir, history=history)  # history next to the run: <results>/allure-history.jsonl
    click.echo(f"run:     {run_dir}")
    for line in built.lines():
        click.echo(line)
    if open_:
        click.launch(str(built))
    return 0
