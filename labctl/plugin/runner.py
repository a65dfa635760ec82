"""The generic cell runner: everything around a scenario that is not plan content.

    cell = runner.run(BootStorm(50, params), cell_id="boot_storm-standalone-050")

1. the lab session for the cell's configuration (the simulator is started or switched as needed);
2. a recorder on the lab's sources for the cell, a provisional summary (``interrupted``: what a
   killed run leaves), the live display;
3. ``scenario.run(session, ctx)`` with a :class:`RunnerContext` (progress, steps, the stop and
   abort events of the interrupt handler, the series recorded so far);
4. the recorder stops; :func:`~labctl.recorder.cell_record.judged_record` summarises the series
   over the scenario's window and judges the criteria (a cell that broke off or was interrupted
   gets :func:`~labctl.recorder.cell_record.broken_record` instead: what it measured, no verdict
   on a partial window); the outcome is the worst of what the scenario saw and the verdict, with a
   one-line reason;
5. the :class:`CellRecord` goes to every sink (run folder, Allure, JUnit; the results store's
   :class:`~labctl.store.StoreSink` when the session names a store, see :func:`store_sink`): one
   :class:`RunOutputs` per run, shared by its plans' runners; the terminal gets the cell's verdict
   and reason with where the run is (cell n of N, elapsed, ETA: :class:`~labctl.plugin.live.RunProgress`);
6. the cell ends with the exception that gives pytest and Allure its status: ThresholdFailure
   (failed), LabFault / NoDataError / Interrupted (broken), or the scenario's own error.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labctl.criteria.errors import LabFault, NoDataError, ThresholdFailure
from labctl.criteria.model import VARIABLE, load_criteria
from labctl.criteria.variables import Names, lab_names
from labctl.errors import BadInputError, LabctlError
from labctl.lab.lease import Lease
from labctl.lab.sites import set_run_context
from labctl.plugin.environment import LabEnvironment
from labctl.plugin.interrupts import Interrupts
from labctl.plugin.live import CellDisplay, Peaks, RunProgress, Terminal, verdict_line
from labctl.recorder import Recorder
from labctl.recorder.cell_record import broken_record, judged_record
from labctl.recorder.sinks import AllureSink, JUnitSink, RunFolderSink, Sink, SinkSet
from labctl.records.run_record import (
    CellRecord,
    CellSummary,
    CellVerdict,
    CriterionVerdict,
    Outcome,
    RunInfo,
    Window,
)
from labctl.records.samples import Sample
from labctl.records.series import Series
from labctl.report.headline import headline_text
from labctl.scenarios.base import CellHead, Progress, Scenario, ScenarioResult

if TYPE_CHECKING:
    from labctl.store import StoreSink

log = logging.getLogger(__name__)

LIVE_METRICS = ("cpu_pct", "nic_sent_util_pct", "disk_queue_len")  # the display's figures, busiest entity


class Interrupted(Exception):
    """The run was interrupted during the cell (its record says ``interrupted``). Raised with one
    line naming the cell (a dataclass without fields took no message: the raise was a TypeError)."""


@dataclass
class CellRun:
    """A finished cell: the scenario's typed result and the record every sink received."""

    result: ScenarioResult | None
    record: CellRecord

    @property
    def summary(self) -> CellSummary:
        return self.record.summary

    @property
    def verdict(self) -> CellVerdict | None:
        return self.record.verdict


class RunnerContext:
    """The :class:`~labctl.scenarios.base.CellContext` a scenario gets from the runner."""

    def __init__(
        self, cell_id: str, interrupts: Interrupts, display: CellDisplay, recorder: Recorder, timeline: Any
    ):
        self.cell_id = cell_id
        self.stop = interrupts.stop
        self.abort = interrupts.abort
        self.display = display
        self.recorder = recorder
        self.timeline = timeline
        self.phase = "start"

    def progress(self, p: Progress) -> None:
        if not self.stop.is_set():  # the phase the interrupt came in, for the cell's reason
            self.phase = p.phase
        self.display.update(p)

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        """A step of the cell on the timeline (the Allure sink shows the summary's phases)."""
        self.timeline.append("phase.start", self.cell_id, title=title)
        try:
            yield
        finally:
            self.timeline.append("phase.end", self.cell_id, title=title)

    def series(
        self, *, source: str | None = None, entity: str | None = None, metric: str | None = None
    ) -> list[Series]:
        return self.recorder.series(cell=self.cell_id, source=source, entity=entity, metric=metric)

    def record(self, samples: Iterable[Sample]) -> None:
        self.recorder.record_samples(samples)


class RunOutputs:
    """The outputs of one run, shared by the runners of all its plans: one run folder sink, one
    ``allure-results``, one ``junit.xml`` holding every cell of every plan (a runner of its own
    per plan rewrote junit.xml with its own cells only: ``labctl run 2007`` kept the last plan's),
    and the results store's sink when the session names a store.

    ``strict_marginal``: a marginal cell fails (JUnit failure, Allure failed), as
    ``--strict-marginal`` asks; its outcome stays ``marginal`` everywhere else.

    ``say``: the console line; an output failing is said on it as it happens, and ``errors`` keeps
    every failure of the run for its summary (:meth:`summary_lines`). A results store that failed
    part-way leaves the cells' records intact in the run folder: the run is judged as measured,
    and if the store still lacks the run when it ends, ``not_stored`` is set (``labctl run`` exits 3,
    the run folder kept for ``labctl runs import``)."""

    def __init__(
        self,
        run_folder: Any,
        *,
        store: Sink | None = None,
        strict_marginal: bool = False,
        say: Callable[[str], None] | None = None,
    ):
        self.run_folder = run_folder
        self.store = store
        self.strict_marginal = strict_marginal
        self.say = say
        self.errors: list[str] = []  # every output failure of the run, one line each
        self.folder = RunFolderSink(run_folder)
        self._allure: AllureSink | None = None
        self._junit: JUnitSink | None = None
        self.not_stored = False  # the store failed and the run is not in it (set when the run ends)

    def sinks(self) -> SinkSet:
        """Every output of a cell: the run folder (summary.json, verdicts.json), Allure (its
        evidence charts drawn by the report's chart helpers), JUnit (junit.xml) and the store."""
        if self._allure is None:
            self._allure = AllureSink(
                self.run_folder, chart=_evidence_png, strict_marginal=self.strict_marginal
            )
        if self._junit is None:
            self._junit = JUnitSink(self.run_folder, strict_marginal=self.strict_marginal)
        extra = [self.store] if self.store is not None else []
        return SinkSet(
            self.run_folder,
            [self.folder, self._allure, self._junit, *extra],
            say=self.say,
            errors=self.errors,
        )

    def finish(self, info: RunInfo) -> None:
        """The run ended: the sinks that write per run (junit.xml, Allure categories, the store's
        run row), once for the run whatever the number of plans."""
        sinks = [s for s in (self._allure, self._junit, self.store) if s is not None]
        before = len(self.errors)
        SinkSet(self.run_folder, sinks, say=self.say, errors=self.errors).run_finished(info)
        store = type(self.store).__name__ if self.store is not None else None
        self.not_stored = any(e.startswith(f"{store}.run_finished") for e in self.errors[before:])

    def summary_lines(self) -> list[str]:
        """What the run's summary says of its outputs: the store that failed (and whether the run
        got into it at the end), each other output that failed, with its first failure."""
        lines = []
        failed = getattr(self.store, "failed", None)
        if self.store is not None and failed:
            # imported here: a run without a store never loads the store's database libraries
            from labctl.store import safe_url

            url = safe_url(str(getattr(getattr(self.store, "store", None), "url", "")))
            run_id = getattr(self.run_folder, "run_id", "RUN")
            if self.not_stored:
                lines.append(
                    f"results store {url} failed during the run ({failed}): run {run_id} is not in the "
                    f"store; its folder is complete: add it with `labctl runs import {run_id}`"
                )
            else:
                lines.append(
                    f"results store {url} failed during the run ({failed}); the run was imported whole when it ended"
                )
        said = type(self.store).__name__ if failed else None  # the store's failure has its line above
        firsts: dict[str, tuple[int, str]] = {}
        for e in self.errors:
            name = e.split(".", 1)[0]
            if name == said:
                continue
            n, first = firsts.get(name, (0, e))
            firsts[name] = (n + 1, first)
        for name, (n, first) in firsts.items():
            lines.append(f"output {name} failed {n} time(s) (first: {first})")
        return lines


@dataclass
class CellRunner:
    """Runs the cells of one plan session; see the module docstring."""

    plan: str
    run_folder: Any  # labctl.recorder.runfolder.RunFolder
    env: LabEnvironment
    interrupts: Interrupts
    terminal: Terminal
    lease: Lease | None = None  # the lab lease this session holds (``lost`` is set if it lapsed)
    outputs: RunOutputs | None = None  # the run's sinks, shared with the other plans' runners
    progress: RunProgress | None = None  # cell n of N, elapsed, ETA (shared by the plans' runners)
    last: CellRecord | None = field(default=None, init=False)  # the record of the cell run last

    def run(
        self,
        scenario: Scenario,
        *,
        cell_id: str,
        configuration: str | None = None,
        criteria: Path | None = None,
    ) -> CellRun:
        with self.interrupts.busy():
            return self._run(scenario, cell_id, configuration, criteria)

    def _run(self, scenario: Scenario, cid: str, configuration: str | None, criteria: Path | None) -> CellRun:
        if self.progress is None:
            self.progress = RunProgress()
        self.progress.cell_started()
        try:
            return self._measure(scenario, cid, configuration, criteria)
        finally:
            self.progress.cell_finished()

    def _measure(
        self, scenario: Scenario, cid: str, configuration: str | None, criteria: Path | None
    ) -> CellRun:
        try:
            session = self.env.session(configuration)
        except BadInputError as exc:  # e.g. another simulated lab is up: the session cannot go on
            import pytest  # the runner runs inside a pytest session

            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        except LabctlError as exc:  # the lab (or its simulator) did not come up: this cell is broken
            raise LabFault(f"{cid}: {exc}") from exc
        cfg = self.env.configuration or "default"
        set_run_context(session, self.run_folder.run_id, cid)  # order ids of a lab's site agents
        head = CellHead(cid, self.plan, scenario.name, self.env.configuration, scenario.parameters())
        recorder = Recorder(
            self.run_folder,
            _sources(
                session,
                scenario.sample_interval_s(),
                scenario.poll_interval_s(),
                scenario.recorded_sources(),
            ),
            clock=session.clock,
            interval_s=scenario.poll_interval_s(),  # polled sources; typeperf streams at its own -si
            cell=cid,
        )
        recorder.attach(session.timeline)
        sinks = self.out.sinks()
        started = session.clock.now()
        self.folder.cell_started(
            _bare(
                head, Outcome.INTERRUPTED, "the run ended before this cell finished (killed?): see series.csv"
            )
        )
        recorder.record(
            "cell.start", cid, plan=self.plan, scenario=scenario.name, configuration=cfg, **head.parameters
        )
        display = CellDisplay(
            self.terminal,
            cid,
            _latest(recorder, cid),
            run=self.progress,
            peaks=_peaks(recorder, cid, criteria, _display_names(session, head)),
        )
        self.interrupts.say = display.note
        ctx = RunnerContext(cid, self.interrupts, display, recorder, session.timeline)
        result: ScenarioResult | None = None
        broke: BaseException | None = None
        recorder.start()
        try:
            result = scenario.run(session, ctx)
        except (Exception, KeyboardInterrupt) as exc:
            broke = exc
        finally:
            display.close()
            self.interrupts.say = self.terminal.line
            recorder.record("cell.end", cid)
            recorder.stop()

        names = self._names(session, result, head)
        judge = load_criteria(criteria, names) if criteria else None  # checked at collection already
        measured = Window(start_ts_s=started, end_ts_s=session.clock.now())
        interrupted = self.interrupts.requested or isinstance(broke, KeyboardInterrupt)
        if interrupted:
            partial = _summary_or_none(result, head)
            why = self.interrupts.reason or "Ctrl-C"
            if partial is not None and partial.window is not None:
                why += f" during {ctx.phase}; {partial.window.duration_s:.0f} lab s of the window measured"
            else:
                why += f" during {ctx.phase}"
            record = broken_record(head, recorder, Outcome.INTERRUPTED, why, summary=partial, window=measured)
        elif broke is not None:
            lab = isinstance(broke, LabctlError) and not isinstance(broke, BadInputError)
            record = broken_record(
                head, recorder, Outcome.LAB_FAULT if lab else Outcome.ERROR, broke, window=measured
            )
        elif (summary := _summary_or_none(result, head)) is None:  # the result could not say: keep the cell
            record = broken_record(
                head,
                recorder,
                Outcome.ERROR,
                "the scenario's result could not be summarised",
                window=measured,
            )
        else:
            if summary.window is None:
                summary = summary.model_copy(update={"window": measured})
            faults = []
            if self.lease is not None and self.lease.lost.is_set():
                faults.append(f"the lease on the lab was lost during the cell ({self.lease.lost_reason})")
            try:
                record = judged_record(summary, recorder, judge, names, lab_faults=faults)
            except LabctlError as exc:  # checked at collection; a cell's own names can still fail
                broke = exc
                record = broken_record(head, recorder, Outcome.ERROR, exc, summary=summary)
        sinks.cell_finished(record, recorder)
        record = sinks.redacted(record)  # the console, pytest and the plan's asserts see no secret either
        self.progress_done(record, first=not display.lines)
        restore = record.summary.restore
        if self.interrupts.abort.is_set() and restore is not None and not restore.ok:
            self.terminal.line(f"{cid}: restore abandoned: {restore.detail}")
        cell = CellRun(result, record)
        self.last = record
        self._raise(cell, broke)
        return cell

    def progress_done(self, record: CellRecord, *, first: bool = False) -> None:
        """The cell's verdict and reason the moment it ends, with where the run is (``first``: the
        cell printed nothing yet, so pytest's line is still open)."""
        assert self.progress is not None
        self.progress.cell_finished()
        line = verdict_line(record.cell, record.outcome, record.summary.reason, self.progress)
        headline = headline_text(record.summary.response_index)  # a VDI cell: read as VSImax is
        self.terminal.line(("\n" if first else "") + line + (f"\n  index: {headline}" if headline else ""))

    @property
    def out(self) -> RunOutputs:
        if self.outputs is None:
            self.outputs = RunOutputs(self.run_folder)
        return self.outputs

    @property
    def folder(self) -> RunFolderSink:
        return self.out.folder

    def finish(self, info: RunInfo) -> None:
        """The run ended: the per-run outputs (once, however many plans share them)."""
        self.out.finish(info)

    @staticmethod
    def _names(session: Any, result: ScenarioResult | None, head: CellHead) -> Names:
        variables = {**head.parameters, **(result.criteria_variables() if result is not None else {})}
        return lab_names(session.lab).with_vars(variables)

    def _raise(self, cell: CellRun, broke: BaseException | None) -> None:
        outcome, reason = cell.record.outcome, f"{cell.record.cell}: {cell.record.summary.reason}"
        if outcome is Outcome.INTERRUPTED:
            if isinstance(broke, KeyboardInterrupt):
                raise broke
            raise Interrupted(reason)
        if outcome is Outcome.ERROR and broke is not None:
            raise broke
        if outcome is Outcome.LAB_FAULT:
            raise LabFault(reason) from broke
        if outcome is Outcome.FAIL:
            raise ThresholdFailure(reason)
        if outcome is Outcome.NO_DATA:
            raise NoDataError(reason)
        if outcome is Outcome.MARGINAL and self.out.strict_marginal:
            raise ThresholdFailure(f"{reason} (marginal fails with --strict-marginal)")


def store_sink(url: str, run_folder: Any, say: Any = log.warning) -> StoreSink | None:
    """The results store's sink for a run (``--store URL``), or None when the store cannot be
    opened: the run goes on, its folder stays the source of truth (``labctl runs import``)."""
    # imported here: a session without a store never loads the store's database libraries
    from labctl.store import StoreSink, open_store, safe_url

    try:
        return StoreSink(open_store(url), run_folder.info, run_folder.path, say=say)
    except LabctlError as exc:
        say(
            f"results store {safe_url(url)}: {exc}; the run is not stored as it goes (labctl runs import it later)"
        )
        return None


def _summary_or_none(result: ScenarioResult | None, head: CellHead) -> CellSummary | None:
    """``result.summary(head)``, or None when there is no result or its summary fails: a scenario's
    summary bug must not cost the cell its record (it is logged with its traceback)."""
    if result is None:
        return None
    try:
        return result.summary(head)
    except Exception:
        log.exception("%s: the scenario's summary failed", head.cell)
        return None


def _bare(head: CellHead, outcome: Outcome, reason: str) -> CellSummary:
    """A summary with only what the runner knows: who the cell is and how it ended."""
    return CellSummary(
        cell=head.cell,
        plan=head.plan,
        scenario=head.scenario,
        configuration=head.configuration,
        parameters=head.parameters,
        outcome=outcome,
        reason=reason,
    )


def _sources(
    session: Any, sample_interval_s: float, poll_interval_s: float, kinds: frozenset[str] | None = None
) -> list[Any]:
    """Every metric source the lab offers for a cell: typeperf streaming a row every
    ``sample_interval_s``, the polled ones (device status, BMC power, arrays) read every
    ``poll_interval_s``; with ``kinds`` (the scenario's ``recorded_sources``), those kinds only."""
    srcs = list(session.sources.for_plan(interval_s=sample_interval_s, poll_interval_s=poll_interval_s))
    if kinds is None:
        return srcs
    return [s for s in srcs if str(getattr(s, "name", "")).partition(":")[0] in kinds]


def _evidence_png(verdict: CriterionVerdict, series: Sequence[Series]) -> bytes:
    """A criterion's evidence as a PNG chart, for the Allure sink."""
    from labctl.report.charts import evidence_png  # matplotlib: loaded only when a chart is drawn

    return evidence_png(verdict, series)


def _display_names(session: Any, head: CellHead) -> Names:
    """The names the display resolves the criteria's entities with, before the scenario ran (a
    lab whose names do not resolve shows no peaks; judging the cell reports why)."""
    try:
        return lab_names(session.lab).with_vars(head.parameters)
    except LabctlError:
        return Names()


def _figures(
    criteria: Path | None, names: Names
) -> list[tuple[str, str | None, str | None, str | None, str]]:
    """The series the criteria judge, once each: (label, source, entity, metric, unit). The label
    is the metric's name, or the criterion's where the metric is a pattern; a criterion whose
    entity needs a variable only the scenario's result brings is left out."""
    if criteria is None:
        return []
    try:
        cf = load_criteria(criteria)  # checked with the lab's names at collection already
    except LabctlError:
        return []
    out: list[tuple[str, str | None, str | None, str | None, str]] = []
    seen: set[tuple[str | None, str | None, str | None]] = set()
    for c in cf.criteria:
        sel = c.select
        if sel.is_result:
            continue
        entity = sel.entity
        if entity is not None:
            try:
                entity = VARIABLE.sub(lambda m: str(names.variables[m.group(1)]), entity)
            except KeyError:
                continue
        key = (sel.source, entity, sel.metric)
        if key in seen:
            continue
        seen.add(key)
        plain = sel.metric is not None and not any(ch in sel.metric for ch in "*?[")
        label = sel.metric if plain and sel.metric else c.name
        out.append((label, sel.source, entity, sel.metric, c.unit))
    labels = [f[0] for f in out]
    return [
        (f"{label} {entity}" if labels.count(label) > 1 and entity else label, source, entity, metric, unit)
        for label, source, entity, metric, unit in out
    ]


def _peaks(recorder: Recorder, cell: str, criteria: Path | None, names: Names) -> Peaks:
    """The highest sample so far of each series the criteria judge (over their entities), for the
    display, read at most once a wall second."""
    figures = _figures(criteria, names)
    cache: list[tuple[str, float, str]] = []
    read_at = [0.0]
    lock = threading.Lock()

    def peaks() -> list[tuple[str, float, str]]:
        with lock:
            if time.monotonic() - read_at[0] < 1.0:
                return list(cache)
            read_at[0] = time.monotonic()
            cache.clear()
            for label, source, entity, metric, unit in figures:
                highs = [
                    max(v for v in s.values if v == v)  # NaN: no value reported
                    for s in recorder.series(cell=cell, source=source, entity=entity, metric=metric)
                    if any(v == v for v in s.values)
                ]
                if highs:
                    cache.append((label, max(highs), unit))
            return list(cache)

    return peaks


def _latest(recorder: Recorder, cell: str) -> Any:
    """The busiest entity's latest CPU, NIC and disk queue for the display, read at most once a
    wall second (a copy of the recorded series is not free)."""
    cache: dict[str, float] = {}
    read_at = [0.0]
    lock = threading.Lock()

    def latest() -> dict[str, float]:
        with lock:
            if time.monotonic() - read_at[0] < 1.0:
                return dict(cache)
            read_at[0] = time.monotonic()
            cache.clear()
            for metric in LIVE_METRICS:
                values = [
                    s.values[-1]
                    for s in recorder.series(cell=cell, source="typeperf", metric=metric)
                    if len(s) and "Loopback" not in s.entity and not s.entity.endswith("_Total")
                ]
                if values:
                    cache[metric] = max(values)
            return dict(cache)

    return latest
