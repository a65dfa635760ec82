"""ADAPTER (the lead removes it when branch rec-sinks is merged): the seam between a finished
scenario and the run's outputs, written against the ENGINE.md contracts with today's pieces.

What rec-sinks provides, and what stands in for it here:

- ``Recorder.summaries(cell, window) -> dict[str, SeriesSummary]``: :func:`series_summaries`;
- ``criteria.evaluate(file, data, summary, *, names) -> CellVerdict`` with per-machine results read
  from ``summary.clients`` (``select: {result: boot_time_s, role: storm}``): :func:`judge`, which
  translates such a criterion for today's evaluator (a per-client value becomes a one-sample series
  ``result/<role>/<client>``) and converts its verdict into the typed :class:`CellVerdict`;
  coverage is reported in the series summaries but not judged here (``no_data`` for a gap is
  rec-sinks' evaluator);
- a check of a criteria file against the lab's names at collection: :func:`check_criteria`;
- the sinks (run folder, Allure; JUnit is rec-sinks'): :class:`RunFolderSink`, :class:`AllureSink`;
- typed readers of a run folder: :func:`read_cell_summaries`;
- the exception types that give pytest and Allure a cell's status.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import yaml

from labctl.criteria import errors as criteria_errors
from labctl.criteria.evaluate import CriterionResult, Verdict, _band, _limit, _pattern, evaluate
from labctl.criteria.model import CriteriaFile, parse_criteria
from labctl.criteria.variables import Names
from labctl.recorder.cells import CELLS_DIR, SUMMARY_FILE, VERDICTS_FILE, cell_dir
from labctl.records import stats as S
from labctl.records.run_record import (
    Band,
    CellRecord,
    CellSummary,
    CellVerdict,
    CriterionVerdict,
    EntityValue,
    Gap,
    Outcome,
    RunInfo,
    SeriesRef,
    SeriesSummary,
    Window,
)
from labctl.records.series import Series, SeriesProvider

# --- how a cell fails (ENGINE.md: labctl.errors.ThresholdFailure / LabFault / NoData / Interrupted) ----

ThresholdFailure = criteria_errors.ThresholdFailure  # an AssertionError: pytest failed, Allure failed
LabFault = criteria_errors.LabFault  # Allure broken
NoDataError = criteria_errors.NoDataError  # Allure broken


class Interrupted(Exception):
    """The run was interrupted during the cell (Allure broken, category "Interrupted")."""


# --- series summaries ---------------------------------------------------------------------------

RESULT_SOURCE = "result"  # series made here from summary.clients, for today's evaluator


def series_summaries(
    data: SeriesProvider, cell: str, window: Window, intervals: Mapping[str, float]
) -> dict[str, SeriesSummary]:
    """``source/entity/metric`` -> each series of ``cell`` over ``window``, with its coverage and gaps
    when its source promised an interval (``intervals`` by source name)."""
    out: dict[str, SeriesSummary] = {}
    span = window.as_tuple()
    for s in data.series(cell=cell):
        w = s.window(*span)
        interval = intervals.get(s.source)
        gaps = (
            [Gap(start_ts_s=g.start_ts, end_ts_s=g.end_ts) for g in S.silences(s, interval, span)]
            if interval
            else []
        )
        summary = SeriesSummary(
            source=s.source,
            entity=s.entity,
            metric=s.metric,
            unit=s.unit,
            samples=len(w),
            expected_interval_s=interval,
            coverage=S.coverage(s, interval, span) if interval else None,
            gaps=gaps,
        )
        if len(w):
            summary = summary.model_copy(
                update={
                    "start_ts_s": w.ts[0],
                    "end_ts_s": w.ts[-1],
                    "peak": _finite(S.peak(w)),
                    "peak_ts_s": S.peak_ts(w),
                    "mean": _finite(S.mean(w)),
                    "p95": _finite(S.p95(w)),
                    "min": _finite(S.minimum(w)),
                    "last": _finite(S.last(w)),
                }
            )
        out[s.key] = summary
    return out


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


# --- criteria -----------------------------------------------------------------------------------

_UNITS = {"boot_time_s": "s", "time_to_ready_s": "s", "copy_s": "s", "retries": "requests"}


class _Translated:
    """A criteria file in the ENGINE.md form, as today's evaluator reads it, and which criteria
    select per-machine results (criterion name -> (field, role or None))."""

    def __init__(self, path: Path):
        self.path = path
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise criteria_errors.CriteriaFileError(
                f"{path}: criteria file not found (write one next to the plan)"
            ) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark else str(path)
            raise criteria_errors.CriteriaFileError(
                f"{where}: YAML syntax error: {getattr(exc, 'problem', exc)}"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("criteria"), list):
            raise criteria_errors.CriteriaFileError(f"{path}: expected a mapping with `criteria:` (a list)")
        self.results: dict[str, tuple[str, str | None]] = {}
        for i, c in enumerate(data["criteria"]):
            sel = c.get("select") if isinstance(c, dict) else None
            if not isinstance(sel, dict) or "result" not in sel:
                continue
            extra = set(sel) - {"result", "role"}
            if extra:
                raise criteria_errors.CriteriaFileError(
                    f"{path}: criteria[{i}].select: `result:` selects a per-machine value; "
                    f"it takes only `role:` beside it, not {', '.join(sorted(extra))}"
                )
            field, role = str(sel["result"]), sel.get("role")
            role_text = str(role) if role is not None else None
            c["select"] = {"source": RESULT_SOURCE, "entity": f"{role_text or '*'}/*", "metric": field}
            c["expect"] = _expect_key(role_text)
            self.results[str(c.get("name"))] = (field, role_text)
        self.criteria: CriteriaFile = parse_criteria(data, str(path))


def _expect_key(role: str | None) -> str:
    return f"role:{role or '*'}"


def check_criteria(path: Path, names: Names) -> None:
    """Load ``path`` and resolve every name it uses against ``names`` (the lab's, plus the cell's);
    bands must be possible (min <= max) and the pass band inside the marginal one.
    Raises CriteriaFileError (one line per problem, naming the file and the criterion)."""
    t = _Translated(path)
    problems: list[str] = []
    for c in t.criteria.criteria:
        try:
            _pattern(c, c.select.entity, names)
            pass_band = _band(c, "pass", c.pass_band, names)
            marginal = _band(c, "marginal", c.marginal, names)
            _limit(c, "threshold", c.threshold, names)
        except criteria_errors.CriteriaFileError as exc:
            problems.append(f"{path}: {exc}")
            continue
        for label, band in (("pass", pass_band), ("marginal", marginal)):
            if band is not None and band.min is not None and band.max is not None and band.min > band.max:
                problems.append(
                    f"{path}: criterion {c.name!r}: {label} band is empty (min {band.min:g} > max {band.max:g})"
                    " (swap or correct the limits)"
                )
        if pass_band is not None and marginal is not None:
            outside = (
                marginal.min is not None and (pass_band.min is None or pass_band.min < marginal.min)
            ) or (marginal.max is not None and (pass_band.max is None or pass_band.max > marginal.max))
            if outside:
                problems.append(
                    f"{path}: criterion {c.name!r}: the pass band reaches outside the marginal band "
                    "(a marginal band must contain the pass band)"
                )
    if problems:
        raise criteria_errors.CriteriaFileError("\n".join(problems))


class _WithResults:
    """The recorder's series plus each client's value of ``summary.clients`` as a one-sample series."""

    def __init__(self, data: SeriesProvider, summary: CellSummary, at_ts: float):
        self.data = data
        self.extra: list[Series] = []
        for c in summary.clients.values():
            for field, unit in _UNITS.items():
                v = getattr(c, field)
                if v is not None:
                    self.extra.append(
                        Series(
                            RESULT_SOURCE,
                            f"{c.role}/{c.name}",
                            field,
                            unit,
                            summary.cell,
                            (at_ts,),
                            (float(v),),
                        )
                    )

    def series(
        self,
        *,
        cell: str | None = None,
        source: str | None = None,
        entity: str | None = None,
        metric: str | None = None,
    ) -> list[Series]:
        if source == RESULT_SOURCE:
            from labctl.records.series import matches

            return [
                s
                for s in self.extra
                if (cell is None or s.cell == cell)
                and matches(s.entity, entity)
                and matches(s.metric, metric)
            ]
        return self.data.series(cell=cell, source=source, entity=entity, metric=metric)


def judge(path: Path, data: SeriesProvider, summary: CellSummary, *, names: Names) -> CellVerdict:
    """Every criterion of ``path`` over ``summary.window`` (pure: writes nothing)."""
    t = _Translated(path)
    assert summary.window is not None
    window = summary.window.as_tuple()
    expected: dict[str, list[str]] = {}
    for _field, role in t.results.values():
        expected[_expect_key(role)] = [f"{c.role}/{c.name}" for c in summary.by_role(role)]
    old = evaluate(
        t.criteria,
        _WithResults(data, summary, window[1]),
        cell=summary.cell,
        window=window,
        names=names,
        expected=expected,
    )
    return _typed(old, summary, t)


def _plain(entity: str | None) -> str | None:
    return entity.split("/", 1)[1] if entity and "/" in entity else entity


def _typed(old: Verdict, summary: CellSummary, t: _Translated) -> CellVerdict:
    out = []
    for r in old.results:
        result = t.results.get(r.name)
        message = r.message
        if result is not None:
            field, role = result
            if r.outcome.value == "lab_fault":
                shown = ", ".join(_plain(m) or "" for m in r.missing[:10])
                more = f" and {len(r.missing) - 10} more" if len(r.missing) > 10 else ""
                total = len(summary.by_role(role))
                message = f"{r.name}: {len(r.missing)} of {total} {role or ''} clients never reported {field}: {shown}{more}"
                message = message.replace("  ", " ")
            else:
                message = (
                    message.replace(f" on {r.entity}", f" on {_plain(r.entity)}") if r.entity else message
                )
        out.append(_criterion(r, summary, result is not None, message))
    outcome = max((c.outcome for c in out), key=lambda o: o.severity, default=Outcome.PASS)
    return CellVerdict(cell=summary.cell, outcome=outcome, criteria=out)


def _criterion(r: CriterionResult, summary: CellSummary, per_machine: bool, message: str) -> CriterionVerdict:
    def band(b: Any) -> Band | None:
        return Band(min=b.min, max=b.max, min_expr=b.min_expr, max_expr=b.max_expr) if b is not None else None

    start, end = r.window
    refs = (
        [
            SeriesRef(
                file=SUMMARY_FILE,
                cell=summary.cell,
                source=RESULT_SOURCE,
                entity="*",
                metric=r.selector.split("/")[-1],
            )
        ]
        if per_machine
        else [SeriesRef(**ref) for ref in r.series]
    )
    return CriterionVerdict(
        name=r.name,
        description=r.description,
        required=r.required,
        outcome=Outcome(r.outcome.value),
        statistic="value" if per_machine else r.statistic,
        unit=r.unit,
        selector=r.selector,
        observed=r.observed,
        entity=_plain(r.entity) if per_machine else r.entity,
        pass_band=band(r.pass_band),
        marginal_band=band(r.marginal_band),
        threshold=r.threshold,
        first_crossing_ts=r.first_crossing_ts,
        window=Window(start_ts_s=start, end_ts_s=end) if start is not None and end is not None else None,
        entities=[
            EntityValue(
                entity=(_plain(e.entity) or e.entity) if per_machine else e.entity,
                value=e.value,
                outcome=Outcome(e.outcome.value),
                first_crossing_ts=e.first_crossing_ts,
                samples=e.samples,
            )
            for e in r.entities
        ],
        missing=[_plain(m) or m for m in r.missing] if per_machine else list(r.missing),
        series=refs,
        message=message,
    )


# --- sinks ----------------------------------------------------------------------------------------


class Sink(Protocol):
    def cell_finished(self, record: CellRecord) -> None: ...

    def run_finished(self, info: RunInfo) -> None: ...


class RunFolderSink:
    """``cells/<cell>/summary.json`` and ``verdicts.json``, redacted and atomic (through the run folder)."""

    def __init__(self, run: Any):
        self.run = run

    def write_summary(self, summary: CellSummary) -> None:
        """A summary on its own: the provisional one written when a cell starts, so a run that
        is killed still shows the cell (``interrupted``) with what was recorded for it."""
        self.run.write_text(
            f"{CELLS_DIR}/{summary.cell}/{SUMMARY_FILE}", summary.model_dump_json(indent=2) + "\n"
        )

    def cell_finished(self, record: CellRecord) -> None:
        cell_dir(self.run, record.cell)  # checks the id is folder-safe
        self.write_summary(record.summary)
        verdicts = Path(self.run.path) / CELLS_DIR / record.cell / VERDICTS_FILE
        if record.verdict is not None:
            self.run.write_text(
                f"{CELLS_DIR}/{record.cell}/{VERDICTS_FILE}", record.verdict.model_dump_json(indent=2) + "\n"
            )
        else:
            verdicts.unlink(missing_ok=True)

    def run_finished(self, info: RunInfo) -> None:
        return None


_ATTACHED_METRICS = frozenset(
    {"cpu_pct", "memory_used_mb", "nic_sent_util_pct", "disk_queue_len", "disk_iops"}
)


class AllureSink:
    """The cell's summary, verdict (one step per criterion, failing where it did not pass) and the
    series the criteria and the paper's figures use, on the current Allure test case."""

    def __init__(self, data: SeriesProvider | None = None):
        self.data = data

    def cell_finished(self, record: CellRecord) -> None:
        from labctl.report import allure_helpers as A  # allure-pytest is loaded only with a plan

        A.attach_json(json.loads(record.summary.model_dump_json()), "summary")
        if self.data is not None:
            series = [s for s in self.data.series(cell=record.cell) if _attached(s)]
            if series:
                A.attach_series(series, "series")
        if record.verdict is not None:
            _steps(record.verdict)

    def run_finished(self, info: RunInfo) -> None:
        return None


def _attached(s: Series) -> bool:
    return (
        s.source == "typeperf"
        and s.metric in _ATTACHED_METRICS
        and "Loopback" not in s.entity
        and not s.entity.endswith("/_Total")
    )


def _marker(c: CriterionVerdict) -> Exception | None:
    if c.outcome is Outcome.FAIL:
        return ThresholdFailure(c.message)
    if c.outcome is Outcome.LAB_FAULT:
        return LabFault(c.message)
    if c.outcome is Outcome.NO_DATA and c.required:
        return NoDataError(c.message)
    return None


def _steps(verdict: CellVerdict) -> None:
    from labctl.report import allure_helpers as A

    quiet = (ThresholdFailure, LabFault, NoDataError)
    with contextlib.suppress(*quiet), A.step(f"criteria: {verdict.outcome}"):
        for c in verdict.criteria:
            with contextlib.suppress(*quiet), A.step(f"[{c.outcome}] {c.message}"):
                if c.description:
                    A.attach_text(c.description, "why this band")
                err = _marker(c)
                if err is not None:
                    raise err
        A.attach_json(json.loads(verdict.model_dump_json()), "verdicts")
        worst = [c for c in verdict.criteria if _marker(c) is not None]
        if worst:
            w = max(worst, key=lambda c: c.outcome.severity)
            err = _marker(w.model_copy(update={"message": f"{verdict.outcome}: {w.name}"}))
            if err is not None:
                raise err


# --- readers ---------------------------------------------------------------------------------------


def read_cell_summaries(run: Any) -> dict[str, CellSummary]:
    """Every typed cell summary of a run folder, by cell id; files that do not validate are skipped."""
    root = Path(getattr(run, "path", run)) / CELLS_DIR
    out: dict[str, CellSummary] = {}
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        with contextlib.suppress(OSError, ValueError):
            out[d.name] = CellSummary.model_validate_json((d / SUMMARY_FILE).read_text(encoding="utf-8"))
    return out


def names_with(names: Names, variables: Mapping[str, Any]) -> Names:
    """The lab's names plus a cell's variables that a criteria file can use (numbers and text)."""
    return names.with_vars({k: v for k, v in variables.items() if isinstance(v, int | float | str)})
