"""The nightly as a library: run the lab's nightly plans, store the run, compare it with the baseline,
write the reports, and say the exit code: 0 (no regression), 1 (regression or failed criteria),
3 (lab fault) or 130 (interrupted). `labctl nightly` (:mod:`labctl.cli.nightly_cmd`) is its
command line; a scheduler or a test calls :func:`run_night` the same way:

    result = run_night(NightRequest(lab_file=Path("hardware/my-lab.yaml"), store_url="postgresql://..."))
    result.exit_code, result.verdict, result.run_dir, result.summary

It lives beside the commands because it drives the same run and compare code paths they do
(``run_cmd.run_plans``, ``compare_cmd.compare_with_history``).

The steps (docs/nightly.md has the whole story):

1. the plans: those named, else the lab file's ``lab.nightly`` (plans, profile, params), else
   ``boot_storm``; several plans are one run (one lease, one run folder), as `labctl run 2007`;
2. the store answers (else exit 3 before the lab is touched) and the lab's lease is free (else one
   line naming the holder, exit 2; ``--lease-wait S`` waits);
3. the plans run through `labctl run`'s code path with the store's sink among the output sinks;
   a run the sink did not store completely is imported from its folder afterwards;
4. the run is compared with the baseline set of its lab + plan, the noise measured over the
   store's history; without a baseline the run's own outcome decides and the summary gives the
   command that makes it the baseline;
5. the verdict goes into run.json (``extra.nightly``) and the store; the reports are written into
   the run folder: ``nightly.md`` / ``nightly.txt`` (a chat message), ``compare.json``,
   ``report/trends.html`` (trends across nights, from the store), ``report/index.html`` (Allure,
   its history from the store) and ``report/figures.html``; ``junit.xml`` was written by the run.

A store that goes away after the night has started (PostgreSQL restarted, the network cut) does not
lose the night: the verdict is judged from the run folder alone, with the store named as a lab
fault (exit 3 unless the run itself regressed or failed), the summary is written and printed, and
the run is kept in its folder for ``labctl runs import`` when the store is back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from labctl.cli.common import resolve_results_dir
from labctl.cli.compare_cmd import compare_with_history, kind_key, stored_baseline
from labctl.cli.run_cmd import plan_files, run_plans
from labctl.errors import EXIT_BAD_INPUT, BadInputError, LabctlError
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab
from labctl.lab.lease import LeaseHeld, holder_description, lease_resource, lease_store_for
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.sinks.allure import ALLURE_RESULTS_DIR
from labctl.report.allure_regressions import mark_regressions
from labctl.report.summary_text import EXIT_CODES, Verdict, markdown, night_verdict, text
from labctl.store import ResultsStore, StoreError, default_store_url, import_run, open_store
from labctl.store.folder import RunFolderData, read_run_folder
from labctl.store.history import ALLURE_HISTORY_FILE, allure_history_from_store, night_history
from labctl.store.rows import utc

if TYPE_CHECKING:
    from labctl.report.compare import Comparison
    from labctl.report.summary_text import NightVerdict

Stage = Callable[[str], object]  # told "store checked", "ran", "judging", "judged" as the night goes

DEFAULT_PLANS = ("boot_storm",)  # without PLANS and without lab.nightly: the 2007 boot storm
SUMMARY_MD, SUMMARY_TXT, COMPARE_FILE = "nightly.md", "nightly.txt", "compare.json"
EXIT_LAB_FAULT = 3


class NightLabFault(LabctlError):
    """The night could not be measured or kept for a reason outside the product (exit 3)."""

    exit_code = EXIT_LAB_FAULT


def _store_url(given: str | None, results: Path) -> str:
    """The store's URL, an embedded store's folder made absolute (the run's sink opens it too)."""
    url = given or default_store_url(results)
    if "://" in url:
        return url
    return f"duckdb:{Path(url.removeprefix('duckdb:')).resolve()}"


def _params(lab: Lab, given: tuple[str, ...]) -> list[str]:
    """``lab.nightly.params`` as ``KEY=VALUE`` (lists joined by commas), then ``--param`` (wins)."""
    out = []
    for key, value in lab.nightly.params.items():
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        out.append(f"{key}={text}")
    return [*out, *given]


def _plan_files(lab: Lab, plans: tuple[str, ...]) -> list[Path]:
    chosen = plans or lab.nightly.plans
    files: list[Path] = []
    for plan in chosen:
        try:
            files += plan_files(plan)
        except BadInputError as exc:
            where = "" if plans else f"{lab.source_file}: lab.nightly.plans: "
            raise BadInputError(f"{where}{exc}") from None
    return files


def _check_store(store: ResultsStore) -> None:
    try:
        store.runs(limit=1)
    except StoreError as exc:
        raise NightLabFault(
            f"{exc} (nothing was run: the night could neither be stored nor compared)"
        ) from exc


def _check_lease(lab: Lab, wait_s: float) -> None:
    """One line naming the holder when another run holds the lab (the run takes the lease itself,
    from the same store: the lab's hub when it has site agents; this only spares the log a pytest
    session that stops at once)."""
    leases = lease_store_for(lab)
    try:
        leases.take(
            lease_resource("lab", lab.name),
            holder_description("labctl nightly (is the lab free?)"),
            wait_s=wait_s,
        ).release()
    except LeaseHeld as exc:
        raise BadInputError(str(exc)) from None
    finally:
        leases.close()


def _run_folder(ref: str, results: Path) -> Path:
    for cand in (Path(ref), results / ref):
        if (cand / "run.json").is_file():
            return cand.resolve()
    raise BadInputError(f"{ref}: not a run folder (a path, or a run id in {results})")


def ensure_stored(store: ResultsStore, data: RunFolderData) -> str:
    """The run in the store as its folder has it: what the run's sink wrote, or imported now (no
    sink, or a sink that failed part-way). Returns how it got there, for the log."""
    run_id = data.info.run_id
    row = store.run(run_id)
    if (
        row is not None
        and row.outcome == data.info.outcome.value
        and {c.cell for c in store.cells(run_id)} == set(data.records)
    ):
        return "stored by the run"
    import_run(store, data.path)
    return "imported from the run folder"


def _started(data: RunFolderData) -> datetime | None:
    return utc(data.info.started.wall_utc)


def judge(
    store: ResultsStore,
    run_dir: Path,
    *,
    history_runs: int | None = None,
    report: bool = True,
    report_url: str | None = None,
) -> tuple[NightVerdict, Comparison | None, dict[str, str], list[str]]:
    """Store, compare and report one run folder. Returns the verdict, the comparison (None: not
    compared), the report links and notes for the log."""
    data = read_run_folder(run_dir)
    notes = [f"store {store.url}: {ensure_stored(store, data)}"]
    figures = data.figures()
    comparison = None
    if data.info.outcome.value != Verdict.INTERRUPTED.value:
        found = stored_baseline(store, figures.lab, figures.plan, kind_key(figures))  # same profile + params
        if found is not None:
            set_id, base = found
            try:
                comparison = compare_with_history(
                    store, figures, base, baseline_set=set_id, history_runs=history_runs
                )
            except BadInputError as exc:  # e.g. no cell in common: the verdict is the run's own
                notes.append(f"not compared with baseline {set_id}: {exc}")
            if comparison is not None and comparison.unlike:  # a baseline set before sets had a kind
                notes.append("baseline not alike: " + "; ".join(comparison.unlike))
    verdict = night_verdict(figures, comparison, run_reason=data.info.reason)
    folder = RunFolder.open(run_dir)
    folder.annotate(nightly=verdict.model_dump(mode="json"))  # the run folder stays the source of truth
    store.finish_run(folder.info, str(run_dir))
    if comparison is not None:
        comparison.write(run_dir / COMPARE_FILE)
    notes += _reports(store, data, verdict, comparison, report=report, report_url=report_url)
    return verdict, comparison, _links(run_dir, report_url), notes


def _reports(
    store: ResultsStore,
    data: RunFolderData,
    verdict: NightVerdict,
    comparison: Comparison | None,
    *,
    report: bool,
    report_url: str | None,
) -> list[str]:
    """The trends page (always: it is cheap) and, with ``report``, Allure (regressed cells marked,
    history from the store) and the figures page. A report that fails is a note: the verdict stands."""
    from labctl.report.trends import write_trends_page  # matplotlib: loaded when the page is drawn

    info, run_dir = data.info, data.path
    kind = kind_key(data.figures())  # the trend lines of this run's profile and parameters only
    nights = night_history(store, info.lab, info.plan, until=_started(data), params_key=kind)
    write_trends_page(
        run_dir, nights, current=info.run_id, baseline_runs=verdict.baseline_runs, source=store.url
    )
    if comparison is not None:  # also without --report: a later `labctl report` shows them
        mark_regressions(run_dir / ALLURE_RESULTS_DIR, comparison)
    if not report:
        return []
    from labctl.report.build import build_report  # Allure runs in node: only when asked

    history = allure_history_from_store(
        store,
        info.lab,
        info.plan,
        before=_started(data),
        out=run_dir / "report" / ALLURE_HISTORY_FILE,
        report_url=report_url,
        params_key=kind,
    )
    try:
        build_report(run_dir, history=history)
    except LabctlError as exc:
        return [f"report: {line}" for line in str(exc).splitlines()]
    return []


def _links(run_dir: Path, report_url: str | None) -> dict[str, str]:
    """The reports that exist, as URLs under ``report_url`` or as local paths."""
    names = {
        "Allure": "report/index.html",
        "trends": "report/trends.html",
        "figures": "report/figures.html",
        "JUnit": "junit.xml",
        "comparison": COMPARE_FILE,
    }
    base = f"{report_url.rstrip('/')}/{run_dir.name}" if report_url else str(run_dir)
    return {name: f"{base}/{rel}" for name, rel in names.items() if (run_dir / rel).is_file()}


def _write_summaries(
    run_dir: Path, verdict: NightVerdict, comparison: Comparison | None, links: dict[str, str]
) -> str:
    folder = RunFolder.open(run_dir)
    folder.write_text(SUMMARY_MD, markdown(verdict, comparison, links))
    plain = text(verdict, comparison, links)
    folder.write_text(SUMMARY_TXT, plain)
    return plain


def judge_without_store(
    run_dir: Path, why: str, *, report_url: str | None = None
) -> tuple[NightVerdict, dict[str, str], list[str]]:
    """The night's verdict from its run folder alone, when the store went away after the night
    started: nothing compared, the store named as a lab fault (exit 3 unless the run itself
    regressed or failed), the verdict kept in run.json for a later import."""
    data = read_run_folder(run_dir)
    verdict = night_verdict(data.figures(), None, run_reason=data.info.reason)
    faults = {**verdict.lab_faults, "(store)": why}
    update: dict[str, object] = {"lab_faults": faults}
    if verdict.verdict in (Verdict.PASSED, Verdict.LAB_FAULT):
        update |= {"verdict": Verdict.LAB_FAULT, "exit_code": EXIT_CODES[Verdict.LAB_FAULT]}
    verdict = verdict.model_copy(update=update)
    RunFolder.open(run_dir).annotate(nightly=verdict.model_dump(mode="json"))
    notes = [
        f"store lost: {why}; the run is kept in its folder: `labctl runs import {run_dir}` "
        "once the store is back (then `labctl nightly --run` judges it against the baseline)"
    ]
    return verdict, _links(run_dir, report_url), notes


@dataclass(frozen=True)
class NightRequest:
    """What a night runs: the command line's options, as data."""

    plans: tuple[str, ...] = ()  # default: the lab file's lab.nightly.plans, else boot_storm
    lab_file: Path | None = None
    configuration: str | None = None
    store_url: str | None = None  # default: the results folder's embedded store
    results_dir: Path | None = None
    profile: str | None = None
    params: tuple[str, ...] = ()  # KEY=VALUE, after lab.nightly.params
    lease_wait_s: float = 0.0
    history_runs: int | None = None
    report: bool = True
    report_url: str | None = None
    existing_run: str | None = None  # judge this run folder (or id) instead of running the plans


@dataclass(frozen=True)
class NightResult:
    """How a night ended: the exit code, and (when a run folder exists) its verdict and summary."""

    exit_code: int
    run_dir: Path | None = None
    verdict: NightVerdict | None = None
    comparison: Comparison | None = None
    summary: str = ""  # nightly.txt, as written into the run folder
    notes: list[str] = field(default_factory=list)  # for the log: how it was stored, reports that failed


def run_night(request: NightRequest, *, on_stage: Stage | None = None) -> NightResult:
    """One night, start to end (see the module docstring). Raises :class:`NightLabFault` (exit 3)
    when the store does not answer before anything runs, and ``BadInputError`` (exit 2) for a bad
    lab file or plan or a lab another run holds; every other ending is a :class:`NightResult`."""
    stage = on_stage or (lambda _name: None)
    results = resolve_results_dir(request.results_dir).resolve()
    url = _store_url(request.store_url, results)
    store = open_store(url)
    try:
        _check_store(store)
        stage("store checked")
        if request.existing_run is not None:
            run_dir = _run_folder(request.existing_run, results)
        else:
            lab = load_lab(request.lab_file, request.configuration)
            files = _plan_files(lab, request.plans)
            _check_lease(lab, request.lease_wait_s)
            ran = run_plans(
                files,
                results,
                lab_file=request.lab_file,
                configuration=request.configuration,
                profile=request.profile or lab.nightly.profile,
                params=_params(lab, request.params),
                lease_wait=request.lease_wait_s,
                store_url=url,
            )
            if ran.run_dir is None:  # nothing ran: bad input, said by pytest already
                return NightResult(
                    ran.code or EXIT_BAD_INPUT, notes=["no run folder was written (nothing ran)"]
                )
            run_dir = ran.run_dir
        stage("ran")
        stage("judging")
        comparison: Comparison | None
        try:
            verdict, comparison, links, notes = judge(
                store,
                run_dir,
                history_runs=request.history_runs,
                report=request.report,
                report_url=request.report_url,
            )
        except StoreError as exc:  # the store went away after the night started: keep the night
            comparison = None
            verdict, links, notes = judge_without_store(run_dir, str(exc), report_url=request.report_url)
        plain = _write_summaries(run_dir, verdict, comparison, links)
        stage("judged")
    finally:
        try:
            store.close()
        except StoreError as exc:  # already gone: nothing left to close
            notes_on_close = [f"store {store.url}: not closed cleanly: {exc}"]
        else:
            notes_on_close = []
    return NightResult(int(verdict.exit_code), run_dir, verdict, comparison, plain, [*notes, *notes_on_close])
