"""The generic cell runner: everything around a scenario that is not plan content.

    cell = runner.run(BootStorm(50, params), cell_id="boot_storm-standalone-050")

1. the lab session for the cell's configuration (the simulator is started or switched as needed);
2. a recorder on the lab's sources for the cell, a provisional summary (``interrupted``: what a
   killed run leaves), Allure labels, the live display;
3. ``scenario.run(session, ctx)`` with a :class:`RunnerContext` (progress, steps, the stop and
   abort events of the interrupt handler, the series recorded so far);
4. the recorder stops; the series are summarised over the scenario's window; the criteria judge
   the cell (not when it was interrupted: a partial window is not a verdict); the outcome is the
   worst of what the scenario saw and the verdict, with a one-line reason;
5. the :class:`CellRecord` goes to every sink (run folder, Allure);
6. the cell ends with the exception that gives pytest and Allure its status: ThresholdFailure
   (failed), LabFault / NoDataError / Interrupted (broken), or the scenario's own error.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labctl.criteria.variables import lab_names
from labctl.errors import BadInputError, LabctlError
from labctl.plugin import recsinks as seam
from labctl.plugin.environment import LabEnvironment
from labctl.plugin.interrupts import Interrupts
from labctl.plugin.live import CellDisplay, Terminal
from labctl.recorder import Recorder
from labctl.records.run_record import CellRecord, CellSummary, CellVerdict, Outcome, Window, worst
from labctl.records.series import Series
from labctl.scenarios.base import CellHead, Progress, Scenario, ScenarioResult

log = logging.getLogger(__name__)

LIVE_METRICS = ("cpu_pct", "nic_sent_util_pct", "disk_queue_len")  # the display's figures, busiest entity


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
        from labctl.report.allure_helpers import step  # allure-pytest: only in a plan session

        self.timeline.append("phase.start", self.cell_id, title=title)
        try:
            with step(title):
                yield
        finally:
            self.timeline.append("phase.end", self.cell_id, title=title)

    def series(
        self, *, source: str | None = None, entity: str | None = None, metric: str | None = None
    ) -> list[Series]:
        return self.recorder.series(cell=self.cell_id, source=source, entity=entity, metric=metric)


@dataclass
class CellRunner:
    """Runs the cells of one plan session; see the module docstring."""

    plan: str
    run_folder: Any  # labctl.recorder.runfolder.RunFolder
    env: LabEnvironment
    interrupts: Interrupts
    terminal: Terminal
    lease: Any = None  # the lab lease this session holds (``lost`` is set if it lapsed)
    sinks: Sequence[seam.Sink] = field(default_factory=list)

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
        from labctl.report import allure_helpers as A  # allure-pytest: only in a plan session

        try:
            session = self.env.session(configuration)
        except BadInputError as exc:  # e.g. another simulated lab is up: the session cannot go on
            import pytest  # the runner runs inside a pytest session

            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        except LabctlError as exc:  # the lab (or its simulator) did not come up: this cell is broken
            raise seam.LabFault(f"{cid}: {exc}") from exc
        cfg = self.env.configuration or "default"
        head = CellHead(cid, self.plan, scenario.name, self.env.configuration, scenario.parameters())
        A.label_cell(self.plan, scenario.title, cid, configuration=cfg, **head.parameters)
        interval = scenario.sample_interval_s()
        recorder = Recorder(
            self.run_folder,
            _sources(session, interval),
            clock=session.clock,
            interval_s=scenario.poll_interval_s(),  # polled sources; typeperf streams at ``interval``
            cell=cid,
        )
        recorder.attach(session.timeline)
        folder = seam.RunFolderSink(self.run_folder)
        started = session.clock.now()
        folder.write_summary(
            _bare(
                head, Outcome.INTERRUPTED, "the run ended before this cell finished (killed?): see series.csv"
            )
        )
        recorder.record(
            "cell.start", cid, plan=self.plan, scenario=scenario.name, configuration=cfg, **head.parameters
        )
        display = CellDisplay(self.terminal, cid, _latest(recorder, cid))
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

        now = session.clock.now()
        window = (result.window if result is not None else None) or Window(start_ts_s=started, end_ts_s=now)
        # ADAPTER: rec-sinks takes the promised interval from each MetricSource
        intervals = {"typeperf": interval, "redfish": scenario.poll_interval_s()}
        metrics = seam.series_summaries(recorder, cid, window, intervals)
        verdict: CellVerdict | None = None
        if result is not None:
            summary = result.summary(head).model_copy(update={"metrics": metrics})
        else:
            summary = _bare(head, Outcome.ERROR, "").model_copy(update={"metrics": metrics})
        if summary.window is None:
            summary = summary.model_copy(update={"window": window})
        interrupted = self.interrupts.requested or isinstance(broke, KeyboardInterrupt)
        if not interrupted and broke is None and criteria is not None and summary.window is not None:
            names = seam.names_with(lab_names(session.lab), result.criteria_variables() if result else {})
            try:
                verdict = seam.judge(criteria, recorder, summary, names=names)
            except LabctlError as exc:  # checked at collection; a cell's own names can still fail
                broke = exc
        outcome, reason = self._outcome(summary, verdict, broke, interrupted, ctx.phase)
        record = CellRecord(
            summary=summary.model_copy(update={"outcome": outcome, "reason": reason}), verdict=verdict
        )
        for sink in [folder, *self.sinks, seam.AllureSink(recorder)]:
            try:
                sink.cell_finished(record)
            except Exception as exc:  # an output failing never hides the cell's own status
                log.warning("%s could not take cell %s: %s", type(sink).__name__, cid, exc)
        restore = record.summary.restore
        if self.interrupts.abort.is_set() and restore is not None and not restore.ok:
            self.terminal.line(f"{cid}: restore abandoned: {restore.detail}")
        cell = CellRun(result, record)
        self._raise(cell, broke)
        return cell

    def _outcome(
        self,
        summary: CellSummary,
        verdict: CellVerdict | None,
        broke: BaseException | None,
        interrupted: bool,
        phase: str,
    ) -> tuple[Outcome, str]:
        """The cell's outcome and its one-line reason: the scenario's own account of the lab first
        (it names the machine or the endpoint), then the criteria's."""
        if interrupted:
            measured = ""
            if summary.window is not None:
                measured = f"; {summary.window.duration_s:.0f} lab s of the window measured"
            return Outcome.INTERRUPTED, f"{self.interrupts.reason} during {phase}{measured}"
        if broke is not None:
            lab = isinstance(broke, LabctlError) and not isinstance(broke, BadInputError)
            return (Outcome.LAB_FAULT if lab else Outcome.ERROR), f"{type(broke).__name__}: {broke}"[:500]
        judged = _judged(verdict)
        outcomes = [summary.outcome] + ([judged] if judged is not None else [])
        reasons = [summary.reason] if summary.reason else []
        lost = getattr(self.lease, "lost", None)
        if lost is not None and lost.is_set():
            outcomes.append(Outcome.LAB_FAULT)
            reasons.insert(
                0, f"the lease on the lab was lost during the cell ({getattr(self.lease, 'lost_reason', '')})"
            )
        if verdict is not None and judged is not None and not judged.passed:
            failing = [c for c in verdict.of(judged) if c.required or judged is not Outcome.NO_DATA]
            text = (
                failing[0].message
                if len(failing) == 1
                else f"{len(failing)} criteria {verdict.outcome}: " + "; ".join(c.message for c in failing)
            )
            if summary.outcome is Outcome.LAB_FAULT:
                reasons.append(text)  # the scenario named the endpoint: its reason first
            else:
                reasons.insert(0, text)
        elif verdict is not None and judged is Outcome.MARGINAL:
            reasons.insert(0, "; ".join(c.message for c in verdict.of(Outcome.MARGINAL)))
        return worst(outcomes), "; ".join(r for r in reasons if r)

    def _raise(self, cell: CellRun, broke: BaseException | None) -> None:
        outcome, reason = cell.record.outcome, f"{cell.record.cell}: {cell.record.summary.reason}"
        if outcome is Outcome.INTERRUPTED:
            if isinstance(broke, KeyboardInterrupt):
                raise broke
            raise seam.Interrupted(reason)
        if outcome is Outcome.ERROR and broke is not None:
            raise broke
        if outcome is Outcome.LAB_FAULT:
            raise seam.LabFault(reason) from broke
        if outcome is Outcome.FAIL:
            raise seam.ThresholdFailure(reason)
        if outcome is Outcome.NO_DATA:
            raise seam.NoDataError(reason)


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


def _judged(verdict: CellVerdict | None) -> Outcome | None:
    """The verdict's outcome as it counts for the cell: no data for an optional criterion
    (``required: false``) is reported, not counted."""
    if verdict is None:
        return None
    return worst(c.outcome for c in verdict.criteria if c.required or c.outcome is not Outcome.NO_DATA)


def _sources(session: Any, interval_s: float) -> list[Any]:
    """ADAPTER: ``session.sources.for_cell(...)`` from branch input-truth when it is there."""
    sources = session.sources
    for_cell = getattr(sources, "for_cell", None)
    if callable(for_cell):
        return list(for_cell(interval_s=interval_s))
    return list(sources.for_plan(interval_s=interval_s))


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
