"""Evaluate criteria over recorded series: a :class:`Verdict` with the evidence for each criterion.

    names = lab_names(lab).with_vars(group_size=50)
    verdict = evaluate(load_criteria(path), recorder, cell=cell, window=(t0, t1), names=names,
                       expected={"clients": group_members})
    verdict.write(run_folder)          # cells/<cell>/verdicts.json
    verdict.raise_for_outcome()        # LabFault / ThresholdFailure / NoDataError, or nothing

The data may be a live :class:`~labctl.recorder.Recorder` or a run folder on disk
(:class:`~labctl.recorder.RunSeries`): the same criteria can be re-judged offline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from labctl.criteria.errors import CriteriaFileError, LabFault, NoDataError, ThresholdFailure
from labctl.criteria.expr import ExpressionError
from labctl.criteria.expr import evaluate as eval_limit
from labctl.criteria.model import Band, CriteriaFile, Criterion
from labctl.criteria.variables import Names
from labctl.recorder.cells import VERDICTS_FILE, cell_dir, write_json_atomic
from labctl.records import stats as S
from labctl.records.series import Series, SeriesProvider, iso_utc


class Outcome(StrEnum):
    PASS = "pass"
    MARGINAL = "marginal"
    NO_DATA = "no_data"
    FAIL = "fail"
    LAB_FAULT = "lab_fault"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {
    Outcome.PASS: 0,
    Outcome.MARGINAL: 1,
    Outcome.NO_DATA: 2,
    Outcome.FAIL: 3,
    Outcome.LAB_FAULT: 4,
}


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    return max(outcomes, key=lambda o: o.severity, default=Outcome.PASS)


def fmt(v: float | None) -> str:
    """A number as a person reads it: 12.3, 0.42, 1500 (no 1.5e+03)."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a >= 100 or v == int(v):
        text = f"{v:.0f}" if a >= 100 else f"{int(v)}"
    elif a >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2f}"
    return text


@dataclass(frozen=True)
class ResolvedBand:
    min: float | None
    max: float | None
    min_expr: str | None = None
    max_expr: str | None = None

    def contains(self, v: float) -> bool:
        return (self.min is None or v >= self.min) and (self.max is None or v <= self.max)

    def outside_by(self, v: float) -> float:
        """How far ``v`` is outside the band (0 inside), for picking the worst entity."""
        d = 0.0
        if self.min is not None and v < self.min:
            d = self.min - v
        if self.max is not None and v > self.max:
            d = max(d, v - self.max)
        return d

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        parts = []
        for op, num, expr in ((">=", self.min, self.min_expr), ("<=", self.max, self.max_expr)):
            if num is None:
                continue
            shown = f"{op} {fmt(num)}{u}"
            if expr is not None:
                shown += f" (= {expr})"
            parts.append(shown)
        return " and ".join(parts)


@dataclass
class EntityValue:
    entity: str
    value: float
    outcome: Outcome
    first_crossing_ts: float | None
    samples: int


@dataclass
class CriterionResult:
    name: str
    outcome: Outcome
    statistic: str
    unit: str
    selector: str
    observed: float | None = None
    entity: str | None = None  # the entity that decided (across: worst), if one did
    pass_band: ResolvedBand | None = None
    marginal_band: ResolvedBand | None = None
    threshold: float | None = None
    first_crossing_ts: float | None = None  # lab time the series first left the pass band
    window: tuple[float | None, float | None] = (None, None)
    entities: list[EntityValue] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # expected entities without data
    series: list[dict[str, str]] = field(default_factory=list)  # where the evidence is
    description: str = ""
    required: bool = True  # no data for a required criterion fails the cell
    message: str = ""

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:  # tracebacks show it: keep it to one line
        return f"CriterionResult({self.name!r}, {self.outcome}, observed={fmt(self.observed)})"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["outcome"] = str(self.outcome)
        for e in d["entities"]:
            e["outcome"] = str(e["outcome"])
        if self.first_crossing_ts is not None:
            d["first_crossing_time"] = iso_utc(self.first_crossing_ts)
        return d


@dataclass
class Verdict:
    cell: str
    results: list[CriterionResult]

    @property
    def outcome(self) -> Outcome:
        return worst(r.outcome for r in self.results)

    def __repr__(self) -> str:  # tracebacks show it: keep it to one line
        counts: dict[str, int] = {}
        for r in self.results:
            counts[str(r.outcome)] = counts.get(str(r.outcome), 0) + 1
        shown = ", ".join(f"{n} {o}" for o, n in counts.items())
        return f"Verdict({self.cell!r}, {self.outcome}: {shown})"

    def of(self, outcome: Outcome) -> list[CriterionResult]:
        return [r for r in self.results if r.outcome is outcome]

    def __getitem__(self, name: str) -> CriterionResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "outcome": str(self.outcome),
            "criteria": [r.as_dict() for r in self.results],
        }

    def write(self, run: Any) -> Path:
        """``cells/<cell>/verdicts.json`` in the run folder."""
        return write_json_atomic(cell_dir(run, self.cell) / VERDICTS_FILE, self.as_dict())

    def lines(self) -> list[str]:
        return [f"[{r.outcome}] {r.message}" for r in self.results]

    def raise_for_outcome(self, *, marginal_fails: bool = False) -> None:
        """Lab faults first (the cell says nothing about the system), then threshold failures,
        then missing data (required criteria only). Marginal passes unless ``marginal_fails``."""
        faults = self.of(Outcome.LAB_FAULT)
        if faults:
            raise LabFault(_joined("lab fault", faults, self.cell), evidence=faults)
        failed = self.of(Outcome.FAIL) + (self.of(Outcome.MARGINAL) if marginal_fails else [])
        if failed:
            raise ThresholdFailure(_joined("threshold failure", failed, self.cell), evidence=failed)
        missing = [r for r in self.of(Outcome.NO_DATA) if r.required]
        if missing:
            raise NoDataError(_joined("no data", missing, self.cell), evidence=missing)


def _joined(what: str, results: list[CriterionResult], cell: str) -> str:
    head = f"{cell}: " if cell else ""
    if len(results) == 1:
        return f"{head}{what}: {results[0].message}"
    return f"{head}{len(results)} criteria: {what}\n" + "\n".join(f"- {r.message}" for r in results)


# --- evaluation ------------------------------------------------------------------------------

_VAR = re.compile(r"\{(\w+)\}")


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

    return _VAR.sub(sub, text)


def _limit(c: Criterion, where: str, value: Any, names: Names) -> tuple[float | None, str | None]:
    if value is None:
        return None, None
    try:
        num = eval_limit(value, names.variables, names.functions)
    except ExpressionError as exc:
        raise CriteriaFileError(f"criterion {c.name!r}: {where}: {exc}") from None
    return num, (value if isinstance(value, str) else None)


def _band(c: Criterion, where: str, band: Band | None, names: Names) -> ResolvedBand | None:
    if band is None:
        return None
    lo, lo_e = _limit(c, f"{where}.min", band.min, names)
    hi, hi_e = _limit(c, f"{where}.max", band.max, names)
    return ResolvedBand(lo, hi, lo_e, hi_e)


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


def _judge(v: float, pass_band: ResolvedBand, marginal: ResolvedBand | None) -> Outcome:
    if pass_band.contains(v):
        return Outcome.PASS
    if marginal is not None and marginal.contains(v):
        return Outcome.MARGINAL
    return Outcome.FAIL


def _crossing(s: Series, c: Criterion, band: ResolvedBand, threshold: float | None) -> float | None:
    """When the series first left the pass band (for time statistics: first went above the
    threshold)."""
    if threshold is not None and c.statistic in ("time_above", "storm_duration"):
        return S.first_crossing(s, threshold)
    for t, v in zip(s.ts, s.values, strict=True):
        if not band.contains(v):
            return t
    return None


def evaluate_criterion(
    c: Criterion,
    data: SeriesProvider,
    *,
    cell: str | None = None,
    window: tuple[float | None, float | None] = (None, None),
    names: Names | None = None,
    expected: Mapping[str, Sequence[str]] | None = None,
) -> CriterionResult:
    names = names or Names()
    sel = c.select
    entity_pattern = _pattern(c, sel.entity, names)
    selector = "/".join(p or "*" for p in (sel.source, entity_pattern, sel.metric))
    pass_band = _band(c, "pass", c.pass_band, names)
    assert pass_band is not None
    marginal = _band(c, "marginal", c.marginal, names)
    threshold, _ = _limit(c, "threshold", c.threshold, names)
    start, end = window
    found = [
        s.window(start, end)
        for s in data.series(cell=cell, source=sel.source, entity=entity_pattern, metric=sel.metric)
    ]
    found = [s for s in found if len(s)]
    res = CriterionResult(
        name=c.name,
        outcome=Outcome.NO_DATA,
        statistic=c.statistic,
        unit=c.unit or (found[0].unit if found else ""),
        selector=selector,
        pass_band=pass_band,
        marginal_band=marginal,
        threshold=threshold,
        window=window,
        series=[s.ref() for s in found],
        description=c.description,
        required=c.required,
    )
    unit = f" {res.unit}" if res.unit else ""

    if c.expect is not None:
        if expected is None or c.expect not in expected:
            raise CriteriaFileError(
                f"criterion {c.name!r} expects {c.expect!r}: the plan must hand in "
                f"expected={{{c.expect!r}: [...]}} when it evaluates"
            )
        have = {s.entity for s in found}
        res.missing = [e for e in expected[c.expect] if e not in have]

    for s in found:
        v = statistic(s, c.statistic, threshold)
        res.entities.append(
            EntityValue(
                s.entity, v, _judge(v, pass_band, marginal), _crossing(s, c, pass_band, threshold), len(s)
            )
        )

    band_text = pass_band.text(res.unit)
    if marginal is not None:
        band_text += f"; marginal {marginal.text(res.unit)}"
    stat = c.statistic + (f" above {fmt(threshold)}" if threshold is not None else "")

    if res.entities:
        if c.across == "worst":
            decider = max(res.entities, key=lambda e: (e.outcome.severity, pass_band.outside_by(e.value)))
            res.observed, res.entity, res.outcome = decider.value, decider.entity, decider.outcome
            res.first_crossing_ts = decider.first_crossing_ts
        else:
            vals = [e.value for e in res.entities]
            combined = {
                "max": max(vals),
                "min": min(vals),
                "mean": math.fsum(vals) / len(vals),
                "sum": math.fsum(vals),
            }[c.across]
            res.observed = combined
            res.outcome = _judge(combined, pass_band, marginal)
            crossings = [e.first_crossing_ts for e in res.entities if e.first_crossing_ts is not None]
            res.first_crossing_ts = min(crossings) if crossings else None
            if len(res.entities) == 1:
                res.entity = res.entities[0].entity

    where = f" on {res.entity}" if res.entity and len(res.entities) > 1 else ""
    if res.outcome is Outcome.NO_DATA and not res.missing:
        res.message = f"{c.name}: no data for {selector} (band {band_text})"
    elif res.observed is not None:
        verb = {Outcome.PASS: "within", Outcome.MARGINAL: "outside", Outcome.FAIL: "outside"}.get(
            res.outcome, "vs"
        )
        res.message = f"{c.name}: {stat} {fmt(res.observed)}{unit}{where} {verb} pass band {band_text}"
        if res.outcome is Outcome.MARGINAL:
            res.message += " (marginal)"
        if res.outcome is not Outcome.PASS and res.first_crossing_ts is not None:
            into = ""
            if start is not None:
                into = f" ({fmt(res.first_crossing_ts - start)} s into the window)"
            res.message += f"; first crossed at {iso_utc(res.first_crossing_ts)}{into}"

    if res.missing and c.expect is not None and expected is not None:
        res.outcome = Outcome.LAB_FAULT
        shown = ", ".join(res.missing[:10]) + (
            f" and {len(res.missing) - 10} more" if len(res.missing) > 10 else ""
        )
        res.message = (
            f"{c.name}: {len(res.missing)} of {len(expected[c.expect])} "
            f"{c.expect} never reported {sel.metric or 'data'}: {shown}"
        )
    return res


def evaluate(
    criteria: CriteriaFile | Sequence[Criterion],
    data: SeriesProvider,
    *,
    cell: str = "",
    window: tuple[float | None, float | None] = (None, None),
    names: Names | None = None,
    expected: Mapping[str, Sequence[str]] | None = None,
    only: Sequence[str] | None = None,
) -> Verdict:
    """Judge every criterion (or those named in ``only``) over ``cell``'s series in ``window``."""
    items = criteria.criteria if isinstance(criteria, CriteriaFile) else tuple(criteria)
    if only is not None:
        unknown = set(only) - {c.name for c in items}
        if unknown:
            raise CriteriaFileError(f"no criteria named {', '.join(sorted(unknown))}")
        items = tuple(c for c in items if c.name in only)
    results = [
        evaluate_criterion(c, data, cell=cell or None, window=window, names=names, expected=expected)
        for c in items
    ]
    return Verdict(cell, results)
