"""Judge a cell against its criteria: pure, returns a :class:`~labctl.records.run_record.CellVerdict`
with the evidence for each criterion, writes nothing.

    names = lab_names(lab).with_vars(result.criteria_variables())
    verdict = evaluate(load_criteria(path, names), recorder, summary, names=names)

``data`` is anything that hands out series: a live :class:`~labctl.recorder.Recorder` or a run
folder on disk (:class:`~labctl.recorder.RunSeries`), so the same criteria can be re-judged
offline. Per-machine results come from ``summary.clients``; the window is ``summary.window``
unless one is given.

A series criterion whose judged series covers less than ``min_coverage`` of the window (a silence
longer than twice its source's interval) is ``no_data`` naming the gap, never a pass; no series at
all is ``no_data`` too. The interval of a series is the one the recorder noted in
``summary.metrics``; a series the summary does not know is held to its own median interval.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from labctl.criteria.errors import CriteriaFileError, LabFault, NoDataError, ThresholdFailure
from labctl.criteria.expr import ExpressionError
from labctl.criteria.expr import evaluate as eval_limit
from labctl.criteria.model import VARIABLE, Band, CriteriaFile, Criterion, band_problems
from labctl.criteria.variables import Names
from labctl.records import stats as S
from labctl.records.run_record import (
    Band as BandValue,
)
from labctl.records.run_record import (
    CellSummary,
    CellVerdict,
    ClientOutcome,
    CriterionVerdict,
    EntityValue,
    Outcome,
    SeriesRef,
    Window,
    worst,
)
from labctl.records.series import Series, SeriesProvider, iso_utc

SUMMARY_FILE = "summary.json"  # where per-machine results are (a SeriesRef's file)


def fmt(v: float | None) -> str:
    """A number as a person reads it: 12.3, 0.42, 1500 (no 1.5e+03)."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a >= 100 or v == int(v):
        return f"{v:.0f}" if a >= 100 else f"{int(v)}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


# --- bands ----------------------------------------------------------------------------------------


def contains(b: BandValue, v: float) -> bool:
    return (b.min is None or v >= b.min) and (b.max is None or v <= b.max)


def badness(b: BandValue, v: float) -> float:
    """How bad ``v`` is against the band, for picking the worst entity: how far past its nearest
    limit (positive outside, negative inside: minus the margin left). So inside a ``max`` band the
    highest value is the worst, inside a ``min`` band the lowest, and a value outside ranks above
    every value inside. (Ranking by distance outside alone ranked every passing entity 0, and the
    verdict named the first one instead of the worst.)"""
    sides = [b.min - v] if b.min is not None else []
    if b.max is not None:
        sides.append(v - b.max)
    return max(sides, default=v)


def band_text(b: BandValue, unit: str = "") -> str:
    u = f" {unit}" if unit else ""
    parts = []
    for op, num, expr in ((">=", b.min, b.min_expr), ("<=", b.max, b.max_expr)):
        if num is None:
            continue
        shown = f"{op} {fmt(num)}{u}"
        if expr is not None:
            shown += f" (= {expr})"
        parts.append(shown)
    return " and ".join(parts)


def judge(v: float, pass_band: BandValue, marginal: BandValue | None) -> Outcome:
    if contains(pass_band, v):
        return Outcome.PASS
    if marginal is not None and contains(marginal, v):
        return Outcome.MARGINAL
    return Outcome.FAIL


@dataclass(frozen=True)
class _Resolved:
    """A criterion's limits as numbers for this cell."""

    pass_band: BandValue
    marginal: BandValue | None
    threshold: float | None


def _limit(c: Criterion, where: str, value: Any, names: Names) -> tuple[float | None, str | None]:
    if value is None:
        return None, None
    try:
        num = eval_limit(value, names.variables, names.functions)
    except ExpressionError as exc:
        raise CriteriaFileError(f"criterion {c.name!r}: {where}: {exc}") from None
    return num, (value if isinstance(value, str) else None)


def _band(c: Criterion, where: str, band: Band | None, names: Names) -> BandValue | None:
    if band is None:
        return None
    lo, lo_e = _limit(c, f"{where}.min", band.min, names)
    hi, hi_e = _limit(c, f"{where}.max", band.max, names)
    return BandValue(min=lo, max=hi, min_expr=lo_e, max_expr=hi_e)


def resolve(c: Criterion, names: Names) -> _Resolved:
    """The criterion's limits with this cell's names; CriteriaFileError for a limit that does not
    evaluate or bands that contradict each other (those that needed the cell's own variables)."""
    pass_band = _band(c, "pass", c.pass_band, names)
    assert pass_band is not None
    marginal = _band(c, "marginal", c.marginal, names)
    bounds: dict[str, float | object | None] = {
        "pass.min": pass_band.min,
        "pass.max": pass_band.max,
        "marginal.min": marginal.min if marginal else None,
        "marginal.max": marginal.max if marginal else None,
    }
    problems = band_problems(bounds, has_marginal=marginal is not None)
    if problems:
        where, what, fix = problems[0]
        raise CriteriaFileError(f"criterion {c.name!r}: {where}: {what} ({fix})")
    threshold, _ = _limit(c, "threshold", c.threshold, names)
    return _Resolved(pass_band, marginal, threshold)


# --- statistics -----------------------------------------------------------------------------------


def statistic(s: Series, name: str, threshold: float | None = None) -> float:
    """One statistic of a (non-empty) series, by its name in a criteria file."""
    if name in ("peak", "max"):
        return S.peak(s)
    if name == "min":
        return S.minimum(s)
    if name == "mean":
        return S.mean(s)
    if name == "last":
        return S.last(s)
    if name == "sum":
        return S.total(s)
    if name == "samples":
        return float(len(s))
    if name == "time_above":
        assert threshold is not None
        return S.time_above(s, threshold)
    if name == "storm_duration":
        assert threshold is not None
        return S.storm_duration(s, threshold)
    if name.startswith("p"):
        return S.percentile(s, float(name[1:]))
    raise ValueError(f"unknown statistic {name!r}")


def _crossing(s: Series, c: Criterion, band: BandValue, threshold: float | None) -> float | None:
    """When the series first left the pass band (time statistics: first went above the threshold)."""
    if threshold is not None and c.statistic in ("time_above", "storm_duration"):
        return S.first_crossing(s, threshold)
    for t, v in zip(s.ts, s.values, strict=True):
        if not contains(band, v):
            return t
    return None


def _pattern(c: Criterion, text: str | None, names: Names) -> str | None:
    if text is None:
        return None

    def sub(m: re.Match[str]) -> str:
        v = names.variables.get(m.group(1))
        if v is None:
            known = ", ".join(sorted(k for k, x in names.variables.items() if isinstance(x, str)))
            raise CriteriaFileError(
                f"criterion {c.name!r}: unknown variable {{{m.group(1)}}} in select (known: {known})"
            )
        return str(v)

    return VARIABLE.sub(sub, text)


# --- judging --------------------------------------------------------------------------------------


@dataclass
class _Judged:
    """What judging one criterion found, before it becomes a CriterionVerdict."""

    entities: list[EntityValue]
    missing: list[str]
    coverage: float | None
    refs: list[SeriesRef]
    unit: str
    no_data: str = ""  # why a series could not be judged (the worst gap), "" if it could
    fault: str = ""  # why the lab failed the criterion (machines without a value), "" if it did not


def _numbers(s: Series) -> Series:
    """The series without samples whose value is NaN (a source that had no value to report)."""
    if not any(math.isnan(v) for v in s.values):
        return s
    keep = [(t, v) for t, v in zip(s.ts, s.values, strict=True) if not math.isnan(v)]
    return Series(
        s.source, s.entity, s.metric, s.unit, s.cell, tuple(t for t, _ in keep), tuple(v for _, v in keep)
    )


def _interval(s: Series, summary: CellSummary) -> tuple[float | None, str]:
    """The interval a series is held to, and how it is known (for the message)."""
    known = summary.metrics.get(s.key)
    if known is not None:  # None: an on-change source, no coverage to hold it to
        return known.expected_interval_s, "its source promised one every {} s"
    mid = S.median_interval(s)
    return (mid, "its samples came every {} s (median)") if mid > 0 else (None, "")


def _rel(ts: float, window: Window) -> str:
    return f"t = {fmt(ts - window.start_ts_s)} s"


def _series(
    c: Criterion,
    data: SeriesProvider,
    summary: CellSummary,
    window: Window | None,
    names: Names,
    r: _Resolved,
) -> tuple[_Judged, str]:
    sel = c.select
    entity = _pattern(c, sel.entity, names)
    selector = "/".join(p or "*" for p in (sel.source, entity, sel.metric))
    found = data.series(cell=summary.cell, source=sel.source, entity=entity, metric=sel.metric)
    span = window.as_tuple() if window is not None else None
    judged = _Judged([], [], None, [], c.unit or (found[0].unit if found else ""))
    worst_gap: tuple[float, Series, S.Silence, str] | None = None  # (coverage, series, gap, interval said)
    covers: list[float] = []
    for s in found:
        w = _numbers(s.window(*span) if span else s)
        judged.refs.append(
            SeriesRef(file="series.csv", cell=s.cell, source=s.source, entity=s.entity, metric=s.metric)
        )
        interval, said = _interval(s, summary)
        cover: float | None = None
        if span is not None and interval is not None:
            cover = S.coverage(s, interval, span)
            covers.append(cover)
            gaps = S.silences(s, interval, span)
            if cover < c.min_coverage and gaps:
                longest = max(gaps, key=lambda g: g.duration_s)
                if worst_gap is None or cover < worst_gap[0]:
                    worst_gap = (cover, s, longest, said.format(fmt(interval)))
        if len(w) == 0:
            judged.missing.append(s.entity)
            continue
        v = statistic(w, c.statistic, r.threshold)
        outcome = judge(v, r.pass_band, r.marginal)
        if cover is not None and cover < c.min_coverage and outcome is not Outcome.FAIL:
            # what the hole hid could have failed: only a measured failure stands
            outcome = Outcome.NO_DATA
        judged.entities.append(
            EntityValue(
                entity=s.entity,
                value=v,
                outcome=outcome,
                first_crossing_ts=_crossing(w, c, r.pass_band, r.threshold),
                samples=len(w),
            )
        )
    judged.coverage = min(covers) if covers else None
    if worst_gap is not None and window is not None:
        cover, s, gap, said = worst_gap
        judged.no_data = (
            f"no sample from {_rel(gap.start_ts, window)} to {_rel(gap.end_ts, window)} in {s.key} "
            f"(covers {cover:.0%} of the window, needs {c.min_coverage:.0%}; {said})"
        )
    elif not judged.entities:
        judged.no_data = f"no data for {selector}" + (" in the window" if found else "")
    role = c.expected_role()
    if role is not None:
        have = {e.entity for e in judged.entities}
        expected = [m.name for m in summary.by_role(role)]
        lacking = [n for n in expected if n not in have]
        if lacking:
            judged.missing = lacking
            judged.fault = (
                f"{len(lacking)} of {len(expected)} {role} machines have no {sel.metric or 'data'}: "
                + _names(lacking, summary)
            )
    return judged, selector


def _names(machines: Sequence[str], summary: CellSummary, limit: int = 8) -> str:
    """``optiplex-003 (timeout: not ready by the deadline), optiplex-007 (...)`` and N more."""
    shown = []
    for name in machines[:limit]:
        c: ClientOutcome | None = summary.clients.get(name)
        why = ""
        if c is not None:
            why = c.outcome + (f": {c.detail}" if c.detail else "")
        shown.append(f"{name} ({why})" if why else name)
    more = f" and {len(machines) - limit} more" if len(machines) > limit else ""
    return ", ".join(shown) + more


def _result(c: Criterion, summary: CellSummary, r: _Resolved) -> tuple[_Judged, str]:
    sel = c.select
    field = sel.result
    assert field is not None
    machines = summary.by_role(sel.role)
    selector = sel.text()
    judged = _Judged([], [], None, [], c.unit)
    judged.refs.append(
        SeriesRef(
            file=SUMMARY_FILE, cell=summary.cell, source="clients", entity=sel.role or "*", metric=field
        )
    )
    lacking: list[str] = []
    for m in machines:
        v = getattr(m, field)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            lacking.append(m.name)
            continue
        v = float(v)
        judged.entities.append(
            EntityValue(entity=m.name, value=v, outcome=judge(v, r.pass_band, r.marginal), samples=1)
        )
    role = f"{sel.role} machines" if sel.role else "machines"
    if not machines:
        judged.no_data = f"no {role} in the cell summary"
    elif lacking and not c.present_only and (c.required or judged.entities):
        judged.missing = lacking
        judged.fault = f"{len(lacking)} of {len(machines)} {role} have no {field}: " + _names(
            lacking, summary
        )
    elif not judged.entities:
        judged.no_data = f"no {role} have {field}"
    return judged, selector


def phase_window(c: Criterion, summary: CellSummary, window: Window | None) -> Window | None:
    """The span a criterion judges: its ``phase:`` of the cell (e.g. ``steady``, where all N
    sessions run) when it names one, else the cell's window. A phase the cell did not run, or that
    never ended, leaves an empty window: the criterion finds no data in it."""
    if c.phase is None:
        return window
    for p in summary.phases:
        if p.name == c.phase and p.end_ts_s is not None:
            return Window(start_ts_s=p.start_ts_s, end_ts_s=p.end_ts_s)
    at = window.start_ts_s if window is not None else 0.0
    return Window(start_ts_s=at, end_ts_s=at)


def evaluate_criterion(
    c: Criterion, data: SeriesProvider, summary: CellSummary, *, names: Names, window: Window | None
) -> CriterionVerdict:
    """Judge one criterion over one cell."""
    r = resolve(c, names)
    if c.select.is_result:
        judged, selector = _result(c, summary, r)
    else:
        judged, selector = _series(c, data, summary, window, names, r)
    unit = f" {judged.unit}" if judged.unit else ""
    bands = band_text(r.pass_band, judged.unit)
    if r.marginal is not None:
        bands += f"; marginal {band_text(r.marginal, judged.unit)}"
    stat = c.statistic + (f" above {fmt(r.threshold)}" if r.threshold is not None else "")

    outcome, observed, entity, crossing = Outcome.NO_DATA, None, None, None
    ents = judged.entities
    if ents:
        if c.across == "worst":
            decider = max(ents, key=lambda e: (e.outcome.severity, badness(r.pass_band, e.value)))
            observed, entity, outcome = decider.value, decider.entity, decider.outcome
            crossing = decider.first_crossing_ts
        else:
            vals = [e.value for e in ents]
            observed = {
                "max": max(vals),
                "min": min(vals),
                "mean": math.fsum(vals) / len(vals),
                "sum": math.fsum(vals),
            }[c.across]
            crossings = [e.first_crossing_ts for e in ents if e.first_crossing_ts is not None]
            crossing = min(crossings) if crossings else None
            entity = ents[0].entity if len(ents) == 1 else None
            outcome = Outcome.NO_DATA if judged.no_data else judge(observed, r.pass_band, r.marginal)
    if judged.no_data and outcome is not Outcome.FAIL:
        outcome = Outcome.NO_DATA  # a value taken over a hole passes nothing
    if judged.fault:
        outcome = Outcome.LAB_FAULT

    where = f" on {entity}" if entity and len(ents) > 1 else ""
    short = _too_short(c, window)
    if short and outcome is not Outcome.LAB_FAULT:
        measured = f"; measured {stat} {fmt(observed)}{unit}{where}" if observed is not None else ""
        outcome = Outcome.NO_DATA
        judged.no_data = f"not judged: {short}{measured}"
    if outcome is Outcome.LAB_FAULT:
        message = f"{c.name}: {judged.fault}"
    elif outcome is Outcome.NO_DATA:
        message = f"{c.name}: {judged.no_data} (band {bands})"
    else:
        verb = "within" if outcome is Outcome.PASS else "outside"
        message = f"{c.name}: {stat} {fmt(observed)}{unit}{where} {verb} pass band {bands}"
        if outcome is Outcome.MARGINAL:
            message += " (marginal)"
        if outcome is not Outcome.PASS and crossing is not None:
            into = f" ({fmt(crossing - window.start_ts_s)} s into the window)" if window is not None else ""
            message += f"; first crossed at {iso_utc(crossing)}{into}"
        if judged.no_data:
            message += f"; and {judged.no_data}"
    return CriterionVerdict(
        name=c.name,
        description=c.description,
        required=c.required,
        outcome=outcome,
        statistic=c.statistic,
        unit=judged.unit,
        selector=selector,
        observed=observed,
        entity=entity,
        pass_band=r.pass_band,
        marginal_band=r.marginal,
        threshold=r.threshold,
        first_crossing_ts=crossing,
        window=window,
        coverage=judged.coverage,
        entities=ents,
        missing=judged.missing,
        series=judged.refs,
        message=message,
        min_window_s=c.min_window_s,
    )


def _too_short(c: Criterion, window: Window | None) -> str:
    """Why the window is too short for the criterion's band ("" when it is long enough). A phase
    the cell did not run (an empty window) is plain no data, not a short one."""
    if c.min_window_s is None or window is None or window.duration_s <= 0:
        return ""
    if window.duration_s >= c.min_window_s:
        return ""
    what = f"the {c.phase} phase" if c.phase else "the window"
    return (
        f"{what} lasted {fmt(window.duration_s)} s, shorter than the {fmt(c.min_window_s)} s this band "
        "was measured over (a longer profile judges it)"
    )


def cell_outcome(criteria: Sequence[CriterionVerdict]) -> Outcome:
    """The worst criterion's outcome; a criterion that is not required, or whose window was too
    short for it, cannot make it no_data."""
    return worst(c.outcome if c.counts else Outcome.PASS for c in criteria)


def evaluate(
    criteria: CriteriaFile | Sequence[Criterion],
    data: SeriesProvider,
    summary: CellSummary,
    *,
    names: Names | None = None,
    window: Window | tuple[float, float] | None = None,
    only: Sequence[str] | None = None,
) -> CellVerdict:
    """Judge every criterion (or those named in ``only``) over the cell of ``summary``, in
    ``window`` (default: the summary's). Raises CriteriaFileError for a limit that does not
    evaluate with ``names`` (a problem of the file, not of the lab)."""
    if isinstance(window, tuple):
        window = Window(start_ts_s=window[0], end_ts_s=window[1])
    items = criteria.criteria if isinstance(criteria, CriteriaFile) else tuple(criteria)
    if only is not None:
        unknown = set(only) - {c.name for c in items}
        if unknown:
            raise CriteriaFileError(f"no criteria named {', '.join(sorted(unknown))}")
        items = tuple(c for c in items if c.name in only)
    win = window if window is not None else summary.window
    judged = [
        evaluate_criterion(c, data, summary, names=names or Names(), window=phase_window(c, summary, win))
        for c in items
    ]
    return CellVerdict(cell=summary.cell, outcome=cell_outcome(judged), criteria=judged)


# --- how a verdict fails a cell ---------------------------------------------------------------------


def _joined(what: str, results: Sequence[CriterionVerdict], cell: str) -> str:
    head = f"{cell}: " if cell else ""
    if len(results) == 1:
        return f"{head}{what}: {results[0].message}"
    return f"{head}{len(results)} criteria: {what}\n" + "\n".join(f"- {r.message}" for r in results)


def raise_for_outcome(verdict: CellVerdict, *, marginal_fails: bool = False) -> None:
    """Lab faults first (the cell says nothing about the system), then threshold failures, then
    missing data (required criteria only). Marginal passes unless ``marginal_fails``."""
    faults = verdict.of(Outcome.LAB_FAULT)
    if faults:
        raise LabFault(_joined("lab fault", faults, verdict.cell), evidence=faults)
    failed = verdict.of(Outcome.FAIL) + (verdict.of(Outcome.MARGINAL) if marginal_fails else [])
    if failed:
        raise ThresholdFailure(_joined("threshold failure", failed, verdict.cell), evidence=failed)
    missing = [r for r in verdict.of(Outcome.NO_DATA) if r.counts]
    if missing:
        raise NoDataError(_joined("no data", missing, verdict.cell), evidence=missing)
