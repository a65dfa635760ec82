"""`labctl compare RUN [BASELINE...]`: is RUN worse than its baseline, beyond the run-to-run noise?"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from labctl.cli.common import resolve_results_dir, results_dir_option
from labctl.cli.runs_cmd import cell_headline, open_cli_store, store_option
from labctl.errors import BadInputError
from labctl.records.figures import RunFigures
from labctl.store import ResultsStore, StoreError
from labctl.store.folder import read_run_folder
from labctl.store.rows import utc

if TYPE_CHECKING:
    from labctl.report.compare import Comparison


def load_figures(ref: str, results: Path, store: ResultsStore) -> tuple[RunFigures, Path | None, list[str]]:
    """A run's figures from its folder (a path, or a run id in ``results``), else from the store.
    Returns the figures, the folder (None from the store) and notes on cells that were not read."""
    for cand in (Path(ref), results / ref):
        if (cand / "run.json").is_file():
            data = read_run_folder(cand)
            notes = [
                f"{data.info.run_id}: cell {c} not read: {why}" for c, why in sorted(data.skipped.items())
            ]
            return data.figures(), cand, notes
    figures = store.figures(Path(ref).name)
    if figures is None:
        raise BadInputError(f"{ref}: not a run folder in {results} and not in the store {store.url}")
    return figures, None, []


def index_headlines(now: RunFigures, base: list[RunFigures]) -> dict[str, dict[str, str]]:
    """{cell: {"run": headline, "baseline": headline}} of the VDI cells (their response-time index
    figures; the baseline's of its first run that has one), for the comparison's text."""
    out: dict[str, dict[str, str]] = {}
    for cell in sorted({*now.cells, *(c for b in base for c in b.cells)}):
        run_text = cell_headline(now.cells[cell].figures) if cell in now.cells else ""
        base_text = next(
            (t for t in (cell_headline(b.cells[cell].figures) for b in base if cell in b.cells) if t), ""
        )
        if run_text or base_text:
            out[cell] = {"run": run_text, "baseline": base_text}
    return out


def stored_baseline(
    store: ResultsStore, lab: str, plan: str, params_key: str | None = None
) -> tuple[str, list[RunFigures]] | None:
    """The current baseline set of ``lab`` + ``plan`` in the store for runs of the kind
    ``params_key`` (profile and plan parameters; None: of any kind) and its runs' figures; None
    when none is set. BadInputError when a baseline run is not in the store any more."""
    chosen = store.baseline(lab, plan, params_key)
    if chosen is None:
        return None
    base = []
    for run_id in chosen.run_ids:
        f = store.figures(run_id)
        if f is None:
            raise BadInputError(
                f"baseline run {run_id} is not in {store.url} any more (labctl runs import it)"
            )
        base.append(f)
    return chosen.set_id, base


def compare_with_history(
    store: ResultsStore,
    now: RunFigures,
    base: list[RunFigures],
    *,
    baseline_set: str | None = None,
    history_runs: int | None = None,
    cells: str | None = None,
    history_required: bool = True,
    allow_unlike: bool = False,
) -> Comparison:
    """Compare ``now`` with the baseline runs ``base``, the noise measured over the store's
    history of the lab + plan, runs of ``now``'s kind only (``history_runs`` earlier runs, default
    HISTORY_RUNS; 0: none). An unreachable store's history is a note, unless ``history_required``.
    Unlike runs (another profile, parameters, lab) are named; ``allow_unlike`` accepts them."""
    from labctl.report.compare import HISTORY_RUNS  # numpy: loaded only when comparing
    from labctl.report.compare import compare as compare_figures

    history = []
    notes = []
    started = utc(now.started_utc)
    runs = HISTORY_RUNS if history_runs is None else history_runs
    if runs and started is not None:
        try:
            history = store.figure_history(
                now.lab, now.plan, before=started, runs=runs, params_key=kind_key(now)
            )
        except StoreError as exc:
            if history_required:  # e.g. the baseline itself came from the store
                raise
            notes.append(f"no history (noise from the baseline runs alone): {exc}")
    result = compare_figures(
        now, base, history=history, baseline_set=baseline_set, cells=cells, allow_unlike=allow_unlike
    )
    result.notes += notes
    return result


def kind_key(run: RunFigures) -> str | None:
    """The store's key of a run's kind, when the run recorded it (older runs: None, any kind)."""
    return run.kind.key if run.kind.recorded else None


def no_baseline(store: ResultsStore, now: RunFigures) -> BadInputError:
    """No baseline for ``now``'s lab + plan + kind: say which kinds have one, and how to set it."""
    others = [b for b in store.current_baselines(now.lab, now.plan) if b.params_key != kind_key(now)]
    hint = (
        "; there is one for " + ", ".join(f"profile {b.profile or '?'} ({b.set_id})" for b in others)
        if others
        else ""
    )
    return BadInputError(
        f"no baseline for {now.lab} / {now.plan} ({now.kind.label()}) in {store.url}{hint}: name BASELINE "
        f"runs, or set one (labctl baseline set {now.lab} {now.plan} RUN...)"
    )


history_option = click.option(
    "--history",
    "history_runs",
    type=click.IntRange(min=0),
    default=None,
    help="Earlier runs of the lab + plan in the store to measure the noise by (default 30; 0: baseline runs only).",
)


@click.command(short_help="Compare a run with its baseline; exit 1 on a regression beyond the noise.")
@click.argument("run")
@click.argument("baselines", metavar="[BASELINE]...", nargs=-1)
@history_option
@click.option("--cells", default=None, metavar="GLOB", help="Only cells whose id matches, e.g. '*-100'.")
@click.option(
    "--all", "all_figures", is_flag=True, help="Show every figure, not only those outside the noise."
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--markdown", is_flag=True, help="Print a short summary for a chat message.")
@click.option(
    "--allow-unlike",
    is_flag=True,
    help="Accept a baseline of another profile, parameters or lab (named in the output); without it such "
    "a comparison exits 2.",
)
@store_option
@results_dir_option("Where run folders are")
def compare(
    run: str,
    baselines: tuple[str, ...],
    history_runs: int | None,
    cells: str | None,
    all_figures: bool,
    as_json: bool,
    markdown: bool,
    allow_unlike: bool,
    store_url: str | None,
    results_dir: Path | None,
) -> int:
    """Compare RUN with BASELINE runs (default: the baseline set of RUN's lab + plan in the store),
    cell by cell and figure by figure: boot time, retries, never-booted machines, copy time, and
    the server counters' peaks and means over the criteria window. A change is a regression only
    when it is outside the run-to-run noise and in the bad direction; a cell whose run or baseline
    is a lab fault (lab_fault, no_data, interrupted, error) is reported as such. Writes
    compare.json into RUN's folder.

    \b
    The baseline set is that of RUN's kind: its parameter profile and resolved plan parameters
    (quick and full runs have separate baselines and histories). A RUN and BASELINE that are not
    alike (another lab, configuration, profile or parameter value, e.g. a 360 s window against a
    120 s one) are compared, the differences named first, and the exit code is 2 unless
    --allow-unlike accepts them.

    \b
    Exit codes: 0 no regression, 1 regression, 3 lab fault (or a baseline cell the run lacks),
    2 bad input, or unlike runs without --allow-unlike.

    \b
    Examples:
      labctl compare 20261121-020000-boot_storm-a1b2                      # against the baseline set
      labctl compare 20261121-020000-boot_storm-a1b2 20261120-020000-boot_storm-c3d4
      labctl compare results/tonight results/base-1 results/base-2 --all
    """
    results = resolve_results_dir(results_dir)
    store = open_cli_store(store_url, results_dir)
    now, folder, notes = load_figures(run, results, store)
    baseline_set = None
    if baselines:
        loaded = [load_figures(b, results, store) for b in baselines]
        base = [f for f, _, _ in loaded]
        notes += [n for _, _, ns in loaded for n in ns]
    else:
        found = stored_baseline(store, now.lab, now.plan, kind_key(now))
        if found is None:
            raise no_baseline(store, now)
        baseline_set, base = found
    result = compare_with_history(
        store, now, base, baseline_set=baseline_set, history_runs=history_runs, cells=cells,
        history_required=not baselines, allow_unlike=allow_unlike,
    )  # fmt: skip
    result.notes += notes
    result.headlines = index_headlines(now, base)  # the VDI cells' index headlines, side by side
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif markdown:
        click.echo(result.markdown())
    else:
        click.echo(result.text(all_figures))
    if folder is not None:
        written = result.write(folder / "compare.json")
        if not (as_json or markdown):
            click.echo(f"written: {written}")
    sys.stdout.flush()
    return result.exit_code
