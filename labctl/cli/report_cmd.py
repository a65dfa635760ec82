"""`labctl report [RUN]`: build a run's Allure report (one offline file) and its figures page."""

from __future__ import annotations

from pathlib import Path

import click

from labctl.cli.common import resolve_results_dir, results_dir_option


@click.command(short_help="Build the HTML report of a run (default: the latest run in results/).")
@click.argument("run", required=False)
@results_dir_option("Where run folders are")
@click.option("--history/--no-history", default=True, help="Keep Allure history across runs (trends).")
@click.option("--open", "open_", is_flag=True, help="Open the report in the default browser afterwards.")
def report(run: str | None, results_dir: Path | None, history: bool, open_: bool) -> int:
    """Build the report of RUN (a run folder, or a run id in the results folder).

    \b
    Writes, inside the run folder:
      report/index.html    the Allure report: one file that works offline
      report/figures.html  the paper's figures: a results table (status and reason first),
                           boot time and retries vs group size, server counters over time
                           per group size, the copy/reboot matrix per split with the copy
                           paths side by side, standalone vs HA
    Allure history (trends across runs) goes to <results>/allure-history.jsonl.
    Reads the run folder only; never talks to the lab. A run that was interrupted or killed
    (run.json still says running) gets both pages too, showing what it measured.

    \b
    Examples:
      labctl report                                      # the latest run in results/
      labctl report 20261121-020000-boot_storm-a1b2 --open
    """
    from labctl.report.build import build_report, resolve_run  # matplotlib: loaded when the command runs

    run_dir = resolve_run(run, resolve_results_dir(results_dir))
    built = build_report(run_dir, history=history)  # history next to the run: <results>/allure-history.jsonl
    click.echo(f"run:     {run_dir}")
    for line in built.lines():
        click.echo(line)
    if open_:
        click.launch(str(built))
    return 0
