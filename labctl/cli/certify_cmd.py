"""`labctl certify RUN [RUN ...]`: the customer-facing certification document (HTML and PDF) of runs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from labctl.cli.common import resolve_results_dir, results_dir_option
from labctl.errors import EXIT_FAILED, EXIT_OK, BadInputError


def _date(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise BadInputError(f"--date {value}: not a date (give it as YYYY-MM-DD, e.g. 2026-11-24)") from None


@click.command(short_help="A certification document (HTML and PDF) for a customer, from run folders.")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for certification.html and .pdf [default: report/ in the first run's folder].",
)
@click.option("--customer", metavar="NAME", help="Who the document is for (on its first page).")
@click.option(
    "--date",
    "date",
    metavar="YYYY-MM-DD",
    help="The document's date [default: today, UTC]; the same runs and date give the same bytes.",
)
@click.option("--pdf/--no-pdf", default=True, help="Also make the PDF (WeasyPrint) [default: yes].")
@results_dir_option("Where run folders are (for run ids)")
def certify(
    runs: tuple[str, ...],
    out: Path | None,
    customer: str | None,
    date: str | None,
    pdf: bool,
    results_dir: Path | None,
) -> int:
    """Write the certification document of RUN (one or more run folders or run ids): what the
    configuration supports, as a customer reads it.

    \b
    It reads like the reference papers: the verdict and the sizing conclusion on the first page
    (a failed, interrupted or unmeasured run says so there: "not certified" and why), the
    configuration as the runs recorded it, the method and the criteria with their reasons, the
    results with the papers' figures, findings generated from the results, the sizing, and
    appendices (every criterion that did not pass with its evidence, run ids, inventory hash,
    labctl version and commit, SHA-256 of every file of the run folders).
    Reads the run folders only. Exit code 0: certified (or with observations); 1: not certified
    (the document is written all the same); 2: bad input.

    \b
    Examples:
      labctl certify 20261124-051008-boot_storm_copy_reboot_ha_comparison-275d --customer "Acme"
      labctl certify results/RUN_A results/RUN_B --out /tmp/cert --date 2026-11-24
    """
    from labctl.report.build import resolve_run  # matplotlib: loaded when the command runs
    from labctl.report.certify.document import certify as write
    from labctl.report.certify.model import Status

    base = resolve_results_dir(results_dir)
    paths = [resolve_run(r, base) for r in runs]
    target = out if out is not None else paths[0] / "report"
    written = write(paths, target, customer=customer, date=_date(date), pdf=pdf)
    click.echo(f"verdict: {written.headline}")
    click.echo(f"html:    {written.html}")
    if written.pdf is not None:
        click.echo(f"pdf:     {written.pdf}")
    return EXIT_FAILED if written.status is Status.NOT_CERTIFIED else EXIT_OK
