"""`labctl runs`: the results store: list and filter runs, show one, import run folders, query with SQL.

The store is chosen by ``--store URL`` or ``LABCTL_STORE``: ``duckdb:FOLDER`` (the embedded default,
``duckdb:<results>/store``, where ``labctl run`` writes every run unless ``--no-store``) or
``postgresql://user@host/db`` for a team sharing one history. A URL with a password is refused and
never printed back (the password goes in PGPASSWORD or ~/.pgpass).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from rich import box
from rich.console import Console
from rich.table import Table

from labctl.cli.common import lab_name, resolve_results_dir, results_dir_option
from labctl.errors import EXIT_BAD_INPUT, EXIT_OK, BadInputError
from labctl.records.figures import INDEX_FIGURES, Direction, Figure
from labctl.report import run_columns
from labctl.report.headline import headline_from_figures
from labctl.store import (
    STORE_ENV,
    ResultsStore,
    default_store_url,
    import_run,
    open_store,
    run_folders,
)

F = TypeVar("F", bound=Callable[..., Any])


def store_option(f: F) -> F:
    return click.option(
        "--store",
        "store_url",
        default=None,
        envvar=STORE_ENV,
        metavar="URL",
        help=f"Results store: duckdb:FOLDER (default duckdb:<results-dir>/store) or postgresql://user@host/db "
        f"(password from PGPASSWORD or ~/.pgpass; env {STORE_ENV}).",
    )(f)


def open_cli_store(store_url: str | None, results_dir: Path | None) -> ResultsStore:
    """The store named by ``--store`` / $LABCTL_STORE, else the embedded one in the results folder."""
    return open_store(store_url or default_store_url(resolve_results_dir(results_dir)))


def cell_headline(figures: Mapping[str, Figure]) -> str:
    """The words of a VDI cell's response-time index headline (saturated at N sessions, or not up
    to N; the share of good desktops) from its key figures; '' for a cell without an index. The
    one headline function is :func:`labctl.report.headline.headline_from_figures`, shared with the
    terminal, the figures page and the certificate."""
    head = headline_from_figures(figures)
    return head.text if head is not None else ""


def run_headlines(store: ResultsStore, run_ids: list[str]) -> dict[str, str]:
    """The VDI headline of each stored run (its cells' index figures, one query for all; a cell's id
    before its headline when a run has several), '' for runs without one."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    keys = ", ".join(f"'{k}'" for k in INDEX_FIGURES)
    query = (
        "SELECT run_id, cell, figure, kind, statistic, source, entity, unit, direction, value, n, coverage "
        f"FROM cell_figures WHERE figure IN ({keys}) AND run_id IN ({marks}) ORDER BY run_id, cell, figure"
    )
    cells: dict[str, dict[str, dict[str, Figure]]] = {}
    for d in store.sql(query, run_ids).dicts():
        run_id, cell, key = d.pop("run_id"), d.pop("cell"), d.pop("figure")
        d.update(unit=d["unit"] or "", direction=Direction(d["direction"]))
        cells.setdefault(run_id, {}).setdefault(cell, {})[key] = Figure(key=key, **d)
    out = {}
    for run_id in run_ids:
        found = [(c, w) for c, figs in cells.get(run_id, {}).items() if (w := cell_headline(figs))]
        out[run_id] = found[0][1] if len(found) == 1 else "; ".join(f"{c}: {w}" for c, w in found)
    return out


def parse_when(text: str | None, option: str) -> datetime | None:
    """``2026-11-21`` or ``2026-11-21T05:30`` (UTC) as a naive UTC datetime."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", ""))
    except ValueError:
        raise BadInputError(
            f"{option} {text!r}: not a date (use YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)"
        ) from None


def print_table(t: Table) -> None:
    """A rich table on a terminal; wide and without trailing blanks in a CI log or a pipe."""
    console = Console()
    if console.is_terminal:
        console.print(t)
        return
    wide = Console(width=240, force_terminal=False, no_color=True)
    with wide.capture() as cap:
        wide.print(t)
    click.echo("\n".join(line.rstrip() for line in cap.get().splitlines()).strip("\n"))


def _params_text(params: dict[str, Any], limit: int = 10) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(params.items())[:limit])
    more = f", ... ({len(params)} parameters)" if len(params) > limit else ""
    return f"; {shown}{more}" if shown else ""


def _when(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%d %H:%M") if d else "-"


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


@click.group(
    invoke_without_command=True, short_help="List, show, import and query runs in the results store."
)
@click.option(
    "--lab", default=None, metavar="NAME|FILE", help="Only runs of this lab (a name or its inventory file)."
)
@click.option("--plan", default=None, help="Only runs of this plan.")
@click.option("--profile", default=None, help="Only runs of this parameter profile (quick, full ...).")
@click.option(
    "--outcome",
    type=click.Choice(["running", "passed", "failed", "lab_fault", "interrupted", "error"]),
    default=None,
    help="Only runs that ended so.",
)
@click.option(
    "--since", default=None, metavar="DATE", help="Runs started on or after DATE (UTC, YYYY-MM-DD[THH:MM])."
)
@click.option("--until", default=None, metavar="DATE", help="Runs started before DATE.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@store_option
@results_dir_option("Where run folders are (and the embedded store, in store/)")
@click.pass_context
def runs(
    ctx: click.Context,
    lab: str | None,
    plan: str | None,
    profile: str | None,
    outcome: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    as_json: bool,
    store_url: str | None,
    results_dir: Path | None,
) -> int:
    """List runs in the results store, newest first (without a subcommand).

    \b
    Examples:
      labctl runs                                   # the last 50 runs
      labctl runs --lab sim-2007 --plan boot_storm --outcome failed --since 2026-11-01
      labctl runs show 20261121-020000-boot_storm-a1b2
      labctl runs import --all                      # (re)build the store from results/
      labctl runs sql "SELECT cell, avg(value) FROM cell_figures WHERE figure = 'boot_time_s mean' GROUP BY cell"
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"store_url": store_url, "results_dir": results_dir}
        return EXIT_OK
    store = open_cli_store(store_url, results_dir)
    rows = store.runs(
        lab=lab_name(lab, store.labs()) if lab else None,
        plan=plan,
        profile=profile,
        outcome=outcome,
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        limit=limit,
    )
    headlines = run_headlines(store, [r.run_id for r in rows])
    if as_json:
        click.echo(
            json.dumps(
                [{**r.model_dump(mode="json"), "headline": headlines[r.run_id] or None} for r in rows],
                indent=2,
            )
        )
        return EXIT_OK
    if not rows:
        click.echo(f"no runs in {store.url} match (import run folders with `labctl runs import --all`)")
        return EXIT_OK
    t = Table(
        title=f"{len(rows)} runs in {store.url}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for col in ("run", "lab", "plan", "profile", "outcome", "started (UTC)", "cells", "duration s", "reason"):
        t.add_column(col, overflow="fold")
    for r in rows:
        duration = f"{r.duration_s:.0f}" if r.duration_s is not None else "-"
        reason = "; ".join(p for p in (headlines[r.run_id], r.reason or "") if p)
        t.add_row(
            r.run_id,
            r.lab,
            r.plan,
            r.profile or "-",
            r.outcome,
            _when(r.started_utc),
            str(r.cells or 0),
            duration,
            reason,
        )
    print_table(t)
    return EXIT_OK


def _settings(
    ctx: click.Context, store_url: str | None, results_dir: Path | None
) -> tuple[str | None, Path | None]:
    parent = ctx.obj or {}
    return store_url or parent.get("store_url"), results_dir or parent.get("results_dir")


@runs.command(short_help="Show one run: its cells with outcome, reason and key figures.")
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@store_option
@results_dir_option("Where run folders are")
@click.pass_context
def show(ctx: click.Context, run: str, as_json: bool, store_url: str | None, results_dir: Path | None) -> int:
    """Show RUN (a run id in the store): how it ended, then each cell's outcome, reason and figures."""
    store = open_cli_store(*_settings(ctx, store_url, results_dir))
    row = store.run(Path(run).name)
    if row is None:
        raise BadInputError(f"{run}: not in the store {store.url} (import it: labctl runs import {run})")
    cells = store.cells(row.run_id)
    figures = store.figures(row.run_id)
    assert figures is not None
    if as_json:
        out = row.model_dump(mode="json")
        out["cells"] = [
            {
                **c.model_dump(mode="json"),
                "figures": {k: f.value for k, f in figures.cells[c.cell].figures.items()},
            }
            for c in cells
        ]
        click.echo(json.dumps(out, indent=2))
        return EXIT_OK
    click.echo(f"run:      {row.run_id}")
    click.echo(f"lab:      {row.lab}  plan: {row.plan}  configuration: {row.configuration or '-'}")
    click.echo(f"kind:     {figures.kind.label()}{_params_text(figures.kind.parameters)}")
    click.echo(f"outcome:  {row.outcome}" + (f": {row.reason}" if row.reason else ""))
    headline = run_headlines(store, [row.run_id])[row.run_id]
    if headline:
        click.echo(f"headline: {headline}")
    click.echo(
        f"started:  {_when(row.started_utc)} UTC  ended: {_when(row.ended_utc)}  host: {row.host or '-'}"
    )
    click.echo(f"code:     labctl {row.labctl_version or '-'} {row.git_commit or ''}")
    if row.folder:
        click.echo(f"folder:   {row.folder}")
    # the figure columns of the plan kinds the run's cells belong to (a VDI run: desktops, logons,
    # IOPS per desktop, the index; a 2007 run: boot times, retries, the servers' peaks)
    cols = run_columns.columns(figures.cells[c.cell].scenario for c in cells)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("cell", "outcome", "clients", *(col.title for col in cols), "reason"):
        t.add_column(col, overflow="fold")
    for c in cells:
        cell_figs = figures.cells[c.cell]
        t.add_row(
            c.cell,
            c.outcome,
            run_columns.clients(cell_figs, c.clients),
            *run_columns.row(cols, cell_figs),
            c.reason or "",
        )
    print_table(t)
    return EXIT_OK


def _resolve_folder(ref: str, results: Path) -> Path:
    for cand in (Path(ref), results / ref):
        if (cand / "run.json").is_file():
            return cand
    raise BadInputError(f"{ref}: not a run folder (no run.json here nor in {results})")


@runs.command("import", short_help="Import run folders into the store (again: idempotent).")
@click.argument("run_refs", metavar="[RUN]...", nargs=-1)
@click.option("--all", "all_runs", is_flag=True, help="Every run folder in the results folder.")
@store_option
@results_dir_option("Where run folders are")
@click.pass_context
def import_(
    ctx: click.Context,
    run_refs: tuple[str, ...],
    all_runs: bool,
    store_url: str | None,
    results_dir: Path | None,
) -> int:
    """Import RUN folders (paths or run ids in the results folder), or --all of them. A run already
    in the store is replaced by what its folder holds now: run folders are the source of truth.
    With --all, folders written before the typed run record are listed as skipped."""
    store_url, results_dir = _settings(ctx, store_url, results_dir)
    results = resolve_results_dir(results_dir)
    if not run_refs and not all_runs:
        raise BadInputError(f"name the runs to import, or --all (every run folder in {results})")
    folders = run_folders(results) if all_runs else [_resolve_folder(r, results) for r in run_refs]
    store = open_cli_store(store_url, results_dir)
    failed = 0
    for folder in folders:
        try:
            click.echo(f"imported {import_run(store, folder).line()}")
        except BadInputError as exc:
            failed += 1
            click.echo(f"skipped  {folder.name}: {exc}", err=True)
    click.echo(f"{len(folders) - failed} of {len(folders)} runs in {store.url}")
    return EXIT_BAD_INPUT if failed and not all_runs else EXIT_OK


@runs.command(short_help="Run a read-only SQL query over the store (tables: see docs/nightly.md).")
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print JSON rows instead of a table.")
@store_option
@results_dir_option("Where run folders are")
@click.pass_context
def sql(
    ctx: click.Context, query: str, as_json: bool, store_url: str | None, results_dir: Path | None
) -> int:
    """Run QUERY over the store: runs, cells, cell_parameters, verdicts, series_summaries,
    client_outcomes, group_actions, cell_figures, samples, baselines (labctl/store/schema.sql)."""
    store = open_cli_store(*_settings(ctx, store_url, results_dir))
    result = store.sql(query)
    if as_json:
        click.echo(json.dumps(result.dicts(), indent=2, default=str))
        return EXIT_OK
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in result.columns:
        t.add_column(col, overflow="fold")
    for r in result.rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    print_table(t)
    click.echo(f"{len(result.rows)} rows")
    return EXIT_OK
