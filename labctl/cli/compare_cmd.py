"""`labctl compare RUN BASELINE`: the nightly regression check, cell by cell with tolerances."""

from __future__ import annotations

from pathlib import Path

import click

from labctl.cli.common import resolve_results_dir, results_dir_option
from labctl.errors import EXIT_FAILED, EXIT_OK


@click.command(short_help="Compare a run with a baseline run; exit 1 if anything regressed.")
@click.argument("run")
@click.argument("baseline")
@results_dir_option("Where run folders are")
@click.option("--all", "all_rows", is_flag=True, help="Show every quantity, not only what changed.")
def compare(run: str, baseline: str, results_dir: Path | None, all_rows: bool) -> int:
    """Compare RUN with BASELINE cell by cell (boot time, retries, CPU, NIC, disk queue, copy time,
    verdicts) within per-quantity tolerances. Writes compare.json into RUN's folder. Exit 0 when
    nothing regressed, 1 when something did, 2 for a bad run name.

    \b
    Examples:
      labctl compare 20261121-020000-boot_storm-a1b2 20261120-020000-boot_storm-c3d4
      labctl compare results/latest-run results/baseline-run --all
    """
    from labctl.report.build import resolve_run
    from labctl.report.compare import compare_runs

    results = resolve_results_dir(results_dir)
    run_dir, base_dir = resolve_run(run, results), resolve_run(baseline, results)
    result = compare_runs(run_dir, base_dir)
    click.echo(result.text(all_rows))
    click.echo(f"written: {result.write(run_dir / 'compare.json')}")
    return EXIT_FAILED if result.regressed else EXIT_OK
