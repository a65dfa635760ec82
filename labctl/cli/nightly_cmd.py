"""`labctl nightly [PLAN]...`: the nightly on the command line (the night itself is
:func:`labctl.cli.nightly.run_night`): run the lab's nightly plans, store the run, compare it with
the baseline, write the reports, and exit 0 (no regression), 1 (regression or failed criteria),
3 (lab fault) or 130 (interrupted)."""

from __future__ import annotations

from pathlib import Path

import click

from labctl.cli.common import config_option, lab_option, results_dir_option
from labctl.cli.compare_cmd import history_option
from labctl.cli.nightly import NightRequest, run_night
from labctl.cli.run_cmd import lease_wait_option
from labctl.cli.runs_cmd import store_option
from labctl.errors import EXIT_INTERRUPTED


@click.command(short_help="Run the nightly plans, store and compare them with the baseline; exit 0/1/3/130.")
@click.argument("plans", metavar="[PLAN]...", nargs=-1)
@lab_option
@config_option
@store_option
@results_dir_option("Where run folders go")
@click.option(
    "--profile", default=None, help="Parameter profile (default: lab.nightly.profile, else the plan's)."
)
@click.option(
    "--param", "params", multiple=True, metavar="KEY=VALUE", help="Override a plan parameter (repeatable)."
)
@lease_wait_option
@history_option
@click.option(
    "--report/--no-report",
    default=True,
    help="Build the Allure report (history from the store) and the figures page; the summary, "
    "compare.json and the trends page are always written.",
)
@click.option(
    "--report-url",
    envvar="LABCTL_REPORT_URL",
    default=None,
    metavar="URL",
    help="Where the results folder is published (CI artifacts), for the summary's links (env LABCTL_REPORT_URL).",
)
@click.option(
    "--run",
    "existing",
    default=None,
    metavar="RUN",
    help="Do not run anything: store, judge and report RUN (a run folder or id), e.g. one made by labctl run.",
)
def nightly(
    plans: tuple[str, ...],
    lab_file: Path | None,
    configuration: str | None,
    store_url: str | None,
    results_dir: Path | None,
    profile: str | None,
    params: tuple[str, ...],
    lease_wait: float,
    history_runs: int | None,
    report: bool,
    report_url: str | None,
    existing: str | None,
) -> int:
    """Run PLAN... on the lab (default: the lab file's lab.nightly.plans, else boot_storm), store the
    run, compare it with the baseline of its lab + plan beyond the run-to-run noise, and write the
    reports into the run folder: nightly.md / nightly.txt (a chat message), compare.json,
    report/trends.html, the Allure report with its history from the store, junit.xml.

    \b
    Exit codes: 0 no regression; 1 a regression or failed criteria; 3 a lab fault (the lab, not the
    product, is broken; also an unreachable results store); 130 interrupted; 2 bad input (a bad
    lab file or plan, the lab leased by another run).

    \b
    Examples:
      labctl nightly                                      # the lab's nightly plans, embedded store
      labctl nightly --lab hardware/my-lab.yaml --store postgresql://labctl@db/labctl
      labctl nightly boot_storm --profile quick --lease-wait 1800
      labctl nightly --run 20261124-020000-boot_storm-a1b2  # judge a run again (after baseline set)
    """
    result = run_night(
        NightRequest(
            plans=plans,
            lab_file=lab_file,
            configuration=configuration,
            store_url=store_url,
            results_dir=results_dir,
            profile=profile,
            params=params,
            lease_wait_s=lease_wait,
            history_runs=history_runs,
            report=report,
            report_url=report_url,
            existing_run=existing,
        )
    )
    for note in result.notes:
        click.echo(note, err=True)
    if result.run_dir is None:
        return result.exit_code
    click.echo("")
    click.echo(result.summary, nl=False)
    click.echo(f"run folder: {result.run_dir}")
    if result.exit_code == EXIT_INTERRUPTED:
        click.echo("interrupted: what was measured is kept in the run folder and the store", err=True)
    return result.exit_code
