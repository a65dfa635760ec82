"""`labctl baseline`: the runs a lab + plan is compared against, kept in the results store.

A baseline is a *set* of one or several runs (several give the comparison their spread as noise);
setting one adds a new set, so the older ones are the baseline's history. A set belongs to a lab,
a plan and a *kind*: the runs' parameter profile and resolved plan parameters
(:mod:`labctl.records.run_kind`), so the quick and the full profile each have their own baseline.
LAB is a lab's name or its inventory file.
"""

from __future__ import annotations

import getpass
import json
import secrets
import socket
from pathlib import Path

import click

from labctl.cli.common import lab_name, resolve_results_dir, results_dir_option
from labctl.cli.runs_cmd import open_cli_store, store_option
from labctl.errors import EXIT_OK, BadInputError
from labctl.inventory.lab_ref import looks_like_file
from labctl.inventory.userfile import load_user_json
from labctl.store import BaselineSet, ResultsStore, import_run
from labctl.store.rows import now_utc


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _ensure_stored(store: ResultsStore, ref: str, results: Path) -> str:
    """The run id of ``ref``, importing its folder first if the store does not have it yet."""
    run_id = Path(ref).name
    if store.run(run_id) is not None:
        return run_id
    for cand in (Path(ref), results / ref):
        if (cand / "run.json").is_file():
            return import_run(store, cand).run_id
    raise BadInputError(f"{ref}: not in the store {store.url} and no run folder of that name in {results}")


def _kind_text(b: BaselineSet) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(b.parameters.items())[:8])
    more = f", ... ({len(b.parameters)} parameters)" if len(b.parameters) > 8 else ""
    profile = f"profile {b.profile}" if b.profile else "profile not recorded"
    return f"{profile}" + (f"; {params}{more}" if params else "")


def _describe(store: ResultsStore, b: BaselineSet) -> list[str]:
    lines = [
        f"baseline {b.lab} / {b.plan}: set {b.set_id} on {b.set_utc:%Y-%m-%d %H:%M} UTC by {b.set_by or '-'}",
        f"  kind: {_kind_text(b)}",
    ]
    if b.note:
        lines.append(f"  note: {b.note}")
    for run_id in b.run_ids:
        row = store.run(run_id)
        state = (
            f"{row.outcome}, started {row.started_utc:%Y-%m-%d %H:%M}" if row else "not in the store any more"
        )
        lines.append(f"  {run_id}  ({state})")
    return lines


@click.group(short_help="Set, show and export the baseline runs of a lab + plan.")
def baseline() -> None:
    """Baselines: the runs `labctl compare RUN` (and the nightly) compare a run with.

    \b
    Examples:
      labctl baseline set sim-2007 boot_storm 20261120-020000-boot_storm-c3d4 20261121-020000-boot_storm-a1b2
      labctl baseline show sim-2007 boot_storm
      labctl baseline history sim-2007 boot_storm
      labctl baseline export > baselines.json
    """


@baseline.command("set", short_help="Make RUN... the baseline of LAB + PLAN.")
@click.argument("lab")
@click.argument("plan")
@click.argument("run_refs", metavar="RUN...", nargs=-1, required=True)
@click.option("--note", default=None, help="Why this baseline (shown with it).")
@store_option
@results_dir_option("Where run folders are")
def set_(
    lab: str,
    plan: str,
    run_refs: tuple[str, ...],
    note: str | None,
    store_url: str | None,
    results_dir: Path | None,
) -> int:
    """Make RUN... (run ids or folders; one or several runs of LAB and PLAN, of one profile and
    parameters) the baseline of their kind. Runs not in the store yet are imported from their
    folders. Several runs let the comparison measure the run-to-run noise from their spread."""
    store = open_cli_store(store_url, results_dir)
    results = resolve_results_dir(results_dir)
    if Path(lab).is_file() or looks_like_file(lab):  # a file: its lab name (a name is checked by the runs')
        lab = lab_name(lab, option="LAB") or lab
    run_ids: list[str] = []
    for ref in run_refs:
        run_id = _ensure_stored(store, ref, results)
        row = store.run(run_id)
        assert row is not None
        if (row.lab, row.plan) != (lab, plan):
            raise BadInputError(f"{run_id} is a run of {row.lab} / {row.plan}, not of {lab} / {plan}")
        if row.outcome == "running":
            raise BadInputError(f"{run_id} has not ended (outcome running): a baseline is a finished run")
        if run_id not in run_ids:
            run_ids.append(run_id)
    kinds = {}
    for run_id in run_ids:
        figures = store.figures(run_id)
        assert figures is not None
        kinds[run_id] = figures.kind
    first, kind = next(iter(kinds.items()))
    for run_id, other in kinds.items():
        diffs = kind.differences(other)
        if diffs:
            raise BadInputError(
                f"{first} and {run_id} are not alike ({'; '.join(diffs)}): a baseline set is runs of one "
                "profile and parameters (set one per kind)"
            )
    when = now_utc()
    b = BaselineSet(
        set_id=f"{when:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}",
        lab=lab,
        plan=plan,
        run_ids=run_ids,
        set_utc=when,
        set_by=_who(),
        note=note,
        profile=kind.profile,
        params_key=kind.key if kind.recorded else None,
        parameters=kind.parameters,
    )
    store.add_baseline(b)
    for line in _describe(store, b):
        click.echo(line)
    return EXIT_OK


profile_option = click.option(
    "--profile", default=None, help="Only the baseline of this parameter profile (e.g. quick or full)."
)


@baseline.command(short_help="Show the baseline of LAB + PLAN.")
@click.argument("lab")
@click.argument("plan")
@profile_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@results_dir_option("Where run folders are")
def show(
    lab: str, plan: str, profile: str | None, as_json: bool, store_url: str | None, results_dir: Path | None
) -> int:
    """Show the current baseline set of LAB + PLAN (the newest; with --profile, that profile's) and
    its runs, then the current sets of the other kinds (profiles, parameters)."""
    store = open_cli_store(store_url, results_dir)
    lab = lab_name(lab, store.labs(), "LAB") or lab
    current = [b for b in store.current_baselines(lab, plan) if profile is None or b.profile == profile]
    if not current:
        which = f" with profile {profile}" if profile else ""
        raise BadInputError(
            f"no baseline for {lab} / {plan}{which} in {store.url} (labctl baseline set {lab} {plan} RUN...)"
        )
    b = max(current, key=lambda s: (s.set_utc, s.set_id))
    if as_json:
        click.echo(b.model_dump_json(indent=2))
        return EXIT_OK
    lines = _describe(store, b)
    for other in current:
        if other.set_id != b.set_id:
            lines.append(f"also: set {other.set_id} for {_kind_text(other)} ({', '.join(other.run_ids)})")
    click.echo("\n".join(lines))
    return EXIT_OK


@baseline.command(short_help="Every baseline LAB + PLAN has had, oldest first.")
@click.argument("lab")
@click.argument("plan")
@profile_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@results_dir_option("Where run folders are")
def history(
    lab: str, plan: str, profile: str | None, as_json: bool, store_url: str | None, results_dir: Path | None
) -> int:
    """List every baseline set of LAB + PLAN (of one profile with --profile), oldest first (the
    last of each kind is its current one)."""
    store = open_cli_store(store_url, results_dir)
    lab = lab_name(lab, store.labs(), "LAB") or lab
    sets = [b for b in store.baseline_history(lab, plan) if profile is None or b.profile == profile]
    if as_json:
        click.echo(json.dumps([b.model_dump(mode="json") for b in sets], indent=2))
        return EXIT_OK
    if not sets:
        click.echo(f"no baseline for {lab} / {plan} in {store.url}")
    for b in sets:
        note = f"  ({b.note})" if b.note else ""
        click.echo(
            f"{b.set_id}  {b.set_utc:%Y-%m-%d %H:%M}  {b.profile or '-':<8} {b.set_by or '-'}  "
            f"{', '.join(b.run_ids)}{note}"
        )
    return EXIT_OK


@baseline.command(short_help="Print every baseline set as JSON (to keep, or to load into another store).")
@click.option(
    "--lab", default=None, metavar="NAME|FILE", help="Only this lab's (a name or its inventory file)."
)
@click.option("--plan", default=None, help="Only this plan's.")
@store_option
@results_dir_option("Where run folders are")
def export(lab: str | None, plan: str | None, store_url: str | None, results_dir: Path | None) -> int:
    """Print the baseline sets as a JSON list (`labctl baseline load FILE` reads it back)."""
    store = open_cli_store(store_url, results_dir)
    lab = lab_name(lab, store.labs())
    click.echo(json.dumps([b.model_dump(mode="json") for b in store.baseline_history(lab, plan)], indent=2))
    return EXIT_OK


@baseline.command(short_help="Load baseline sets exported by `labctl baseline export`.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_option
@results_dir_option("Where run folders are")
def load(file: Path, store_url: str | None, results_dir: Path | None) -> int:
    """Add the sets in FILE to the store (a set already there is written again, not doubled)."""
    # a user's file: regular, bounded, shallow (labctl.inventory.userfile; UserFileError is exit 2)
    exported = load_user_json(file, what="baseline export")
    try:
        sets = [BaselineSet.model_validate(d) for d in exported]
    except (ValueError, TypeError) as exc:
        raise BadInputError(
            f"{file}: not an export of `labctl baseline export`: {str(exc).splitlines()[0]}"
        ) from None
    store = open_cli_store(store_url, results_dir)
    for b in sets:
        store.add_baseline(b)
    click.echo(f"{len(sets)} baseline sets loaded into {store.url}")
    return EXIT_OK
