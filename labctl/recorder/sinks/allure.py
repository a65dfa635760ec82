"""Allure results as a sink: one test result per cell in ``<run>/allure-results/``, written from
the cell's record (not from a live test), so every status and label says what the record says.

- labels: epic = plan, feature = scenario, story = cell id; ``lab``, ``configuration``,
  ``outcome``; a ``tag`` with the outcome for every cell that did not plainly pass;
- parameters: the configuration and the cell's parameters;
- history: ``historyId`` and ``testCaseId`` from lab + plan + cell id, so runs of the same cell on
  the same lab form one history and different labs never mix;
- status: ``passed`` (pass), ``passed`` with tag ``marginal`` in the *Marginal* category
  (marginal; ``failed`` with ``strict_marginal``, still in *Marginal*), ``failed`` (fail),
  ``broken`` (lab_fault, no_data, error, interrupted; each tagged, interrupted never a pass).
  Allure's statuses are fixed (passed, failed, broken, skipped, unknown): marginal is a category
  of its own (Allure 3 files passed results into categories too), never *flaky*: Allure shows
  flaky as "Flaky", a test that passed on a retry, which a marginal cell is not;
- message: the cell's one-line reason first, then ``outcome: <outcome> (<kind>)`` which the
  categories (:data:`CATEGORIES`) match; the trace lists every criterion that did not pass;
- steps: the cell's phases (prepare, window, restore, ...) on the wall clock, then one step per
  criterion with its status, why the band is what it is, its evidence as CSV and, when the
  runner gives a chart function, as a PNG chart;
- attachments: the summary and the verdict as JSON, the series the criteria and the figures use
  as CSV (the columns of ``series.csv``), the per-machine results as CSV.

The runner must not let allure-pytest report the same test case as well (two results per cell).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import (
    Attachment,
    Label,
    Parameter,
    Status,
    StatusDetails,
    TestResult,
    TestStepResult,
)

from labctl.recorder.atomic import jsonable
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.series import SERIES_COLUMNS, RunSeries, csv_row
from labctl.records.run_record import CellRecord, CriterionVerdict, Outcome, RunInfo
from labctl.records.series import Series, SeriesProvider

log = logging.getLogger(__name__)

ALLURE_RESULTS_DIR = "allure-results"
CATEGORIES_FILE = "categories.json"

ChartFn = Callable[[CriterionVerdict, Sequence[Series]], bytes | None]  # -> PNG

STATUS: dict[Outcome, str] = {
    Outcome.PASS: Status.PASSED,
    Outcome.MARGINAL: Status.PASSED,
    Outcome.FAIL: Status.FAILED,
    Outcome.LAB_FAULT: Status.BROKEN,
    Outcome.NO_DATA: Status.BROKEN,
    Outcome.ERROR: Status.BROKEN,
    Outcome.INTERRUPTED: Status.BROKEN,
}
# the kind on the message's second line, which the categories match
KIND: dict[Outcome, str] = {
    Outcome.MARGINAL: "Marginal",
    Outcome.FAIL: "ThresholdFailure",
    Outcome.LAB_FAULT: "LabFault",
    Outcome.NO_DATA: "NoDataError",
    Outcome.ERROR: "Error",
    Outcome.INTERRUPTED: "Interrupted",
}

# Allure 2 categories.json entries; Allure 3 takes the same rules in its config. First match
# wins. `[\s\S]*` (not `.*`) so that multi-line messages match in both Java (whole-string match)
# and JavaScript (search).
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "Marginal",
        "description": "Outside the pass band, inside the marginal band: reported, passed (failed "
        "with --strict-marginal).",
        "matchedStatuses": ["passed", "failed"],
        "messageRegex": r"[\s\S]*outcome: marginal[\s\S]*",
    },
    {
        "name": "Threshold failures",
        "description": "The lab worked; a measured value is outside its band (labctl ThresholdFailure).",
        "matchedStatuses": ["failed"],
        "messageRegex": r"[\s\S]*ThresholdFailure[\s\S]*",
    },
    {
        "name": "Lab faults",
        "description": "The lab did not do what the plan needs, e.g. a client never booted (labctl *Fault).",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": r"[\s\S]*\w*Fault\b[\s\S]*",
    },
    {
        "name": "Missing data",
        "description": "A criterion had too little to judge: a gap, a source that failed (labctl NoDataError).",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": r"[\s\S]*NoDataError[\s\S]*",
    },
    {
        "name": "Infrastructure errors",
        "description": "An endpoint, the network, the simulator or a credential failed (labctl errors).",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": (
            r"[\s\S]*(labctl\.errors\.\w+|Endpoint(Error|Timeout)|MissingCredentialError|ConnectionError"
            r"|ConnectionRefusedError|TimeoutError|socket\.timeout|SSHException|OSError)[\s\S]*"
        ),
    },
    {
        "name": "Interrupted",
        "description": "The run was stopped (Ctrl-C, SIGTERM, SIGHUP): what the cell measured is kept.",
        "matchedStatuses": ["broken", "failed", "skipped"],
        "messageRegex": r"[\s\S]*(KeyboardInterrupt|[Ii]nterrupted)[\s\S]*",
    },
    {
        "name": "Test defects",
        "description": "Any other error: a bug in the plan or in labctl.",
        "matchedStatuses": ["broken"],
    },
]

# What a cell's "series" attachment holds besides the criteria's own series: what the paper's
# figures use. Everything else (per-NIC bandwidth, loopback, per-client status polls, BMC power,
# arrays) stays in series.csv: all of it attached made one report of the 2007 set a 100 MB file.
FIGURE_METRICS = frozenset({"cpu_pct", "memory_used_mb", "nic_sent_util_pct", "disk_queue_len", "disk_iops"})


def figure_series(s: Series) -> bool:
    """A series the figures page draws (attached to every cell)."""
    return (
        s.source == "typeperf"
        and s.metric in FIGURE_METRICS
        and "Loopback" not in s.entity
        and not s.entity.endswith("/_Total")
    )


def series_csv(series: Sequence[Series]) -> str:
    """Series in the columns of ``series.csv`` (one file format for readers)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SERIES_COLUMNS)
    for s in series:
        for t, v in zip(s.ts, s.values, strict=True):
            w.writerow(csv_row(s.cell, s.source, s.entity, s.metric, s.unit, t, v))
    return buf.getvalue()


def history_key(lab: str, plan: str, cell: str) -> str:
    """The Allure history id of a cell: the same cell on the same lab, never across labs."""
    return hashlib.md5(f"{lab}\x1f{plan}\x1f{cell}".encode()).hexdigest()


def write_categories(results_dir: str | Path, extra: Sequence[dict[str, Any]] = ()) -> Path:
    """``categories.json`` (Allure 2 format); ``extra`` rules go first."""
    path = Path(results_dir) / CATEGORIES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*extra, *CATEGORIES], indent=2) + "\n", encoding="utf-8")
    return path


def _wall_epoch(info: RunInfo) -> float:
    try:
        return datetime.fromisoformat(info.started.wall_utc).timestamp()
    except ValueError:
        return 0.0


class AllureSink:
    """``chart``: draws a criterion's evidence (its verdict and series) as PNG bytes; the runner
    passes the report's chart function (the recorder layer draws nothing itself).
    ``data``: where the cell's series are (default: the run folder's ``series.csv``; the runner
    passes the live recorder with each cell instead)."""

    def __init__(
        self,
        run: RunFolder,
        *,
        chart: ChartFn | None = None,
        data: SeriesProvider | None = None,
        results_dir: Path | None = None,
        strict_marginal: bool = False,
    ):
        self.run = run
        self.strict_marginal = strict_marginal
        self.chart = chart
        self.data = data
        self.dir = Path(results_dir) if results_dir is not None else run.path / ALLURE_RESULTS_DIR
        self._logger: AllureFileLogger | None = None

    @property
    def logger(self) -> AllureFileLogger:
        if self._logger is None:
            self._logger = AllureFileLogger(str(self.dir), False)
            if not (self.dir / CATEGORIES_FILE).exists():
                write_categories(self.dir)
        return self._logger

    def cell_finished(self, record: CellRecord, data: SeriesProvider | None = None) -> None:
        self.logger.report_result(self.result(record, data or self.data or RunSeries(self.run)))

    def run_finished(self, info: RunInfo) -> None:
        if not (self.dir / CATEGORIES_FILE).exists():
            write_categories(self.dir)

    # --- building a result -------------------------------------------------------------------

    def _text(self, s: str) -> str:
        return self.run.redactor.text(s)

    def _attach(self, body: str | bytes, name: str, mime: str, ext: str) -> Attachment:
        source = f"{uuid.uuid4()}-attachment.{ext}"
        if isinstance(body, str):
            body = self._text(body)
        self.logger.report_attached_data(body, source)
        return Attachment(name=name, source=source, type=mime)

    def _json(self, data: Any, name: str) -> Attachment:
        text = json.dumps(self.run.redactor.obj(jsonable(data)), indent=2, ensure_ascii=False)
        return self._attach(text, name, "application/json", "json")

    def _ms(self, lab_ts: float | None, default: int) -> int:
        if lab_ts is None:
            return default
        info = self.run.info
        wall = _wall_epoch(info) + (lab_ts - info.started.lab_ts) / (info.time_scale or 1.0)
        return int(wall * 1000)

    def result(self, record: CellRecord, data: SeriesProvider) -> TestResult:
        s = record.summary
        info = self.run.info
        now = int(datetime.now().timestamp() * 1000)
        outcome = s.outcome
        key = history_key(info.lab, s.plan, s.cell)
        labels = [
            Label("epic", s.plan),
            Label("feature", s.scenario),
            Label("story", s.cell),
            Label("lab", info.lab),
            Label("outcome", outcome.value),
            Label("framework", "labctl"),
        ]
        if s.configuration:
            labels.append(Label("configuration", s.configuration))
        if outcome is not Outcome.PASS:
            labels.append(Label("tag", outcome.value.replace("_", " ")))
        params = [Parameter(name="configuration", value=s.configuration or "-")]
        params += [Parameter(name=k, value=_param(v)) for k, v in s.parameters.items()]
        details = None
        if outcome is not Outcome.PASS:
            failing = [
                f"[{c.outcome.value}] {c.message}"
                for c in (record.verdict.criteria if record.verdict else [])
                if c.outcome is not Outcome.PASS
            ]
            details = StatusDetails(
                message=self._text(
                    f"{s.reason or outcome.value}\noutcome: {outcome.value} ({KIND[outcome]})"
                ),
                trace=self._text("\n".join(failing)) or None,
            )
        steps = [self._phase(p.name, p.start_ts_s, p.end_ts_s, now) for p in s.phases]
        if record.verdict is not None:
            steps.append(self._criteria(record, data, now))
        attachments = [self._json(s, "summary")]
        if record.verdict is not None:
            attachments.append(self._json(record.verdict, "verdicts"))
        shown = self._series(record, data)
        if shown:
            attachments.append(self._attach(series_csv(shown), "series", "text/csv", "csv"))
        if s.clients:
            attachments.append(self._attach(_clients_csv(record), "per-machine results", "text/csv", "csv"))
        starts = [p.start_ts_s for p in s.phases] + ([s.window.start_ts_s] if s.window else [])
        ends = [p.end_ts_s for p in s.phases if p.end_ts_s is not None] + (
            [s.window.end_ts_s] if s.window else []
        )
        start = self._ms(min(starts), now) if starts else now
        return TestResult(
            uuid=str(uuid.uuid4()),
            historyId=key,
            testCaseId=key,
            fullName=f"{info.lab}/{s.plan}/{s.cell}",
            name=f"{s.scenario.replace('_', ' ')} · {s.cell}",
            titlePath=[info.lab, s.plan],
            status=self.status(outcome),
            statusDetails=details,
            stage="finished",
            labels=labels,
            parameters=params,
            steps=steps,
            attachments=attachments,
            start=start,
            stop=max(start, self._ms(max(ends), now) if ends else now),
        )

    def status(self, outcome: Outcome) -> str:
        """Allure's status for a cell's outcome (marginal fails with ``strict_marginal``)."""
        if outcome is Outcome.MARGINAL and self.strict_marginal:
            return str(Status.FAILED)
        return str(STATUS[outcome])

    def _phase(self, name: str, start: float, end: float | None, now: int) -> TestStepResult:
        t0 = self._ms(start, now)
        return TestStepResult(
            name=name, status=Status.PASSED, stage="finished", start=t0, stop=max(t0, self._ms(end, now))
        )

    def _criteria(self, record: CellRecord, data: SeriesProvider, now: int) -> TestStepResult:
        verdict = record.verdict
        assert verdict is not None
        steps = []
        for c in verdict.criteria:
            status = STATUS[c.outcome]
            if c.outcome is Outcome.NO_DATA and not c.required:
                status = Status.SKIPPED
            attachments = []
            if c.description:
                attachments.append(self._attach(c.description, "why this band", "text/plain", "txt"))
            evidence = self._evidence(c, data)
            if c.entities or c.missing:
                attachments.append(self._attach(_entities_csv(c), f"{c.name} (values)", "text/csv", "csv"))
            if evidence:
                attachments.append(
                    self._attach(series_csv(evidence), f"{c.name} (series)", "text/csv", "csv")
                )
            if self.chart is not None and c.outcome is not Outcome.PASS:
                try:
                    png = self.chart(c, evidence)
                except Exception as exc:  # a chart that cannot be drawn must not cost the result
                    log.warning("evidence chart of %s / %s: %s", record.cell, c.name, exc)
                    png = None
                if png:
                    attachments.append(self._attach(png, f"{c.name} (evidence)", "image/png", "png"))
            steps.append(
                TestStepResult(
                    name=self._text(f"[{c.outcome.value}] {c.message}"),
                    status=status,
                    statusDetails=StatusDetails(message=self._text(c.message))
                    if c.outcome is not Outcome.PASS
                    else None,
                    stage="finished",
                    attachments=attachments,
                    start=now,
                    stop=now,
                )
            )
        return TestStepResult(
            name=f"criteria: {verdict.outcome.value}",
            status=STATUS[verdict.outcome],
            stage="finished",
            steps=steps,
            start=now,
            stop=now,
        )

    def _evidence(self, c: CriterionVerdict, data: SeriesProvider) -> list[Series]:
        """The series a criterion judged, over the window it judged."""
        out = []
        span = c.window.as_tuple() if c.window is not None else (None, None)
        for ref in c.series:
            if ref.file != "series.csv":
                continue
            for s in data.series(
                cell=ref.cell or None, source=ref.source, entity=ref.entity, metric=ref.metric
            ):
                if s.cell == ref.cell and s.entity == ref.entity:
                    out.append(s.window(*span))
        return out

    def _series(self, record: CellRecord, data: SeriesProvider) -> list[Series]:
        """The criteria's series and the figures' series of the cell, whole."""
        wanted = {
            (r.source, r.entity, r.metric)
            for c in (record.verdict.criteria if record.verdict else [])
            for r in c.series
            if r.file == "series.csv"
        }
        return [
            s
            for s in data.series(cell=record.cell)
            if (s.source, s.entity, s.metric) in wanted or figure_series(s)
        ]


def _param(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _entities_csv(c: CriterionVerdict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["entity", "value", "unit", "outcome", "samples", "first_crossing_ts"])
    for e in c.entities:
        w.writerow([e.entity, repr(e.value), c.unit, e.outcome.value, e.samples, e.first_crossing_ts or ""])
    for m in c.missing:
        w.writerow([m, "", c.unit, "missing", 0, ""])
    return buf.getvalue()


def _clients_csv(record: CellRecord) -> str:
    fields = ["name", "role", "outcome", "boot_time_s", "retries", "time_to_ready_s", "copy_s", "detail"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for c in record.summary.by_role():
        w.writerow({k: ("" if v is None else v) for k, v in c.model_dump().items()})
    return buf.getvalue()
