"""A fair comparison of a run with its baseline: a regression is a change outside the run-to-run
noise AND in the bad direction; a lab fault is reported as such, never as a regression.

    result = compare(run_figures, [baseline_figures, ...], history=store.figure_history(...))
    print(result.text()); sys.exit(result.exit_code)

Per cell present in the run and the baseline, per key figure of the cell (see
:mod:`labctl.records.figures`: boot time, retries, copy time, never-booted machines; peaks and
means of the server counters over the criteria window):

1. **Lab faults first.** A run cell that is ``lab_fault``, ``no_data``, ``interrupted`` or
   ``error`` measured the lab, not the product: the cell is ``lab_fault`` and its figures are not
   judged. Baseline runs whose cell was such are left out; with none left the cell is ``lab_fault``.
2. **Reference** = the mean of the baseline runs' values (one run or several).
3. **Noise** (:mod:`labctl.report.noise`): a per-kind prior, pooled with the spread of the baseline
   runs, or, given a history of earlier runs, with the spread inside the history's stretches
   between change points (E-divisive, :mod:`labctl.report.edivisive`), so a past step does not
   count as noise. Tolerance = ``t(1 - ALPHA, df) * sd * sqrt(1 + 1/n)``, a one-sided Student-t
   prediction interval for one new run.
4. **Judgement**: within the tolerance: ``within``. Outside: ``regressed`` if the figure moved in
   its bad direction, ``improved`` if in its good one, ``changed`` for a neutral figure. A figure
   whose series covers less than ``MIN_COVERAGE`` of the window in either run is ``not_compared``.
5. The criteria verdict: a cell that passed in the baseline and fails now is a regression too
   (after the figures that explain it); marginal now is ``changed``.

Figures are ordered by how far outside the noise they are, so the responsible metrics come first.

**Unlike runs.** A run and a baseline of another lab, plan, configuration, parameter profile or
resolved plan parameters (a 360 s window against a 120 s one; :mod:`labctl.records.run_kind`)
measure different things. They are still compared figure by figure, but the differences are named
first (``unlike``) and the exit code is 2, whatever the figures say, unless ``allow_unlike`` (the
CLI's ``--allow-unlike``) accepts them: then the usual codes, with the warning kept in the text.

Exit codes: 0 no regression, 1 regression, 3 lab fault (a lab fault or a missing cell in the
compared cells, and no regression elsewhere); 2 bad input (raised before comparing) or unlike runs
not accepted.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from labctl.errors import BadInputError
from labctl.records.figures import CellFigures, Direction, Figure, RunFigures
from labctl.records.run_record import Outcome
from labctl.report.edivisive import e_divisive, segments
from labctl.report.noise import Noise, estimate, prior, t_quantile

ALPHA = 0.001  # one-sided, per figure: the chance that an unchanged figure is flagged
MIN_COVERAGE = 0.9  # as the criteria's default: a series with less says too little to compare
MIN_HISTORY = 6  # earlier runs a figure needs before its history is searched for change points
OUTLIER_SDS = 5.0  # a history value this many robust SDs from its stretch's median is left out
HISTORY_RUNS = 30  # earlier runs read for it (the store's figure_history)
FAULTS = (Outcome.NO_DATA, Outcome.LAB_FAULT, Outcome.ERROR, Outcome.INTERRUPTED)

EXIT_OK, EXIT_REGRESSION, EXIT_UNLIKE, EXIT_LAB_FAULT = 0, 1, 2, 3

History = Sequence[
    tuple[str, dict[str, dict[str, float]]]
]  # [(run_id, {cell: {figure: value}})], oldest first


class FigureStatus(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    CHANGED = "changed"  # outside the noise, neutral direction (or a marginal verdict)
    NOT_COMPARED = "not_compared"  # too little coverage
    MISSING = "missing"  # in the baseline, not in the run
    NEW = "new"  # in the run, not in the baseline
    WITHIN = "within"  # inside the noise


class CellStatus(StrEnum):
    REGRESSED = "regressed"
    LAB_FAULT = "lab_fault"
    MISSING = "missing"  # the baseline has the cell, the run does not: not judged
    CHANGED = "changed"
    IMPROVED = "improved"
    WITHIN = "within"
    NEW = "new"


_FIGURE_ORDER = list(FigureStatus)
_CELL_ORDER = list(CellStatus)


class Shift(BaseModel):
    """A change of level in a figure's history (a change point found by E-divisive)."""

    at_run: str = Field(description="the first run of the new level")
    before: float = Field(description="mean of the stretch before")
    after: float = Field(description="mean of the stretch from that run on")
    p_value: float


class FigureChange(BaseModel):
    figure: str
    kind: str
    statistic: str
    entity: str = ""
    unit: str = ""
    direction: Direction
    status: FigureStatus
    baseline: float | None = Field(None, description="mean of the baseline runs' values")
    baseline_values: list[float] = Field(default_factory=list)
    value: float | None = Field(None, description="the run's value")
    delta: float | None = None
    delta_pct: float | None = None
    tolerance: float | None = Field(None, description="half-width of the noise band around the baseline")
    noise_sd: float | None = None
    noise_df: float | None = None
    noise_from: str = ""
    score: float | None = Field(None, description="|delta| / tolerance: above 1 is outside the noise")
    shifts: list[Shift] = Field(default_factory=list)
    note: str = ""

    def line(self) -> str:
        if self.value is None or self.baseline is None:
            shown = (
                ""
                if self.value is None and self.baseline is None
                else _fmt(self.value if self.value is not None else self.baseline)
            )
            return " ".join(p for p in (f"{self.status.value:<12}", self.figure, shown, self.note) if p)
        pct = f", {self.delta_pct:+.0f} %" if self.delta_pct is not None else ""
        text = (
            f"{self.status.value:<12} {self.figure:<44} {_fmt(self.baseline):>9} -> {_fmt(self.value):<9} "
            f"({_fmt(self.delta, sign=True)}{pct})"
        )
        if self.tolerance is not None:
            text += f"  noise ±{_fmt(self.tolerance)} {self.unit}".rstrip() + f" [{self.noise_from}]"
        for s in self.shifts:
            text += f"; level moved at {s.at_run}: {_fmt(s.before)} -> {_fmt(s.after)} (p {s.p_value:.3f})"
        return text


class CellComparison(BaseModel):
    cell: str
    status: CellStatus
    reason: str = ""
    run_outcome: Outcome | None = None
    baseline_runs: list[str] = Field(default_factory=list, description="the baseline runs compared with")
    excluded: dict[str, str] = Field(default_factory=dict, description="baseline runs left out, and why")
    figures: list[FigureChange] = Field(default_factory=list)

    @property
    def regressed(self) -> list[FigureChange]:
        return [f for f in self.figures if f.status is FigureStatus.REGRESSED]

    def worst_score(self) -> float:
        return max((f.score or 0.0 for f in self.regressed), default=0.0)


class Comparison(BaseModel):
    run_id: str
    lab: str
    plan: str
    baseline_runs: list[str]
    baseline_set: str | None = None
    history_runs: int = 0
    method: dict[str, Any] = Field(default_factory=dict)
    unlike: list[str] = Field(
        default_factory=list, description="how the run and its baseline differ (lab, profile, parameters)"
    )
    allow_unlike: bool = Field(False, description="unlike runs accepted: the usual exit codes")
    notes: list[str] = Field(default_factory=list)
    headlines: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="VDI cells: the response-time index's headline, {cell: {'run': ..., 'baseline': ...}}",
    )
    cells: list[CellComparison] = Field(default_factory=list)

    def of(self, *status: CellStatus) -> list[CellComparison]:
        return [c for c in self.cells if c.status in status]

    @property
    def regressions(self) -> list[tuple[str, FigureChange]]:
        return [(c.cell, f) for c in self.of(CellStatus.REGRESSED) for f in c.regressed]

    @property
    def exit_code(self) -> int:
        if self.unlike and not self.allow_unlike:
            return EXIT_UNLIKE
        if self.of(CellStatus.REGRESSED):
            return EXIT_REGRESSION
        if self.of(CellStatus.LAB_FAULT, CellStatus.MISSING):
            return EXIT_LAB_FAULT
        return EXIT_OK

    def headline(self) -> str:
        counts = [(s, len(self.of(s))) for s in CellStatus]
        parts = ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in counts if n)
        code = self.exit_code
        if code == EXIT_UNLIKE:
            code = (
                EXIT_REGRESSION
                if self.of(CellStatus.REGRESSED)
                else EXIT_LAB_FAULT
                if self.of(CellStatus.LAB_FAULT, CellStatus.MISSING)
                else EXIT_OK
            )
        verdict = {EXIT_OK: "no regression", EXIT_REGRESSION: "REGRESSION", EXIT_LAB_FAULT: "LAB FAULT"}[code]
        text = f"{verdict}: {parts or 'no cells'}"
        if self.unlike:
            accepted = " (accepted with --allow-unlike)" if self.allow_unlike else ""
            text = f"UNLIKE RUNS{accepted}: {'; '.join(self.unlike)}; figures say {text}"
        return text

    def text(self, all_figures: bool = False) -> str:
        base = ", ".join(self.baseline_runs)
        bset = f" (baseline set {self.baseline_set})" if self.baseline_set else ""
        hist = f"; noise from a history of {self.history_runs} runs" if self.history_runs else ""
        lines = [f"{self.run_id} ({self.lab}, {self.plan}) against {base}{bset}{hist}", self.headline()]
        lines += [f"note: {n}" for n in self.notes]
        for c in self.cells:
            head = f"{c.status.value.upper().replace('_', ' '):<10} {c.cell}"
            if c.reason:
                head += f": {c.reason}"
            quiet = [f for f in c.figures if f.status is FigureStatus.WITHIN]
            shown = (
                c.figures if all_figures else [f for f in c.figures if f.status is not FigureStatus.WITHIN]
            )
            if quiet and not all_figures:
                head += f" ({len(quiet)} figures within noise)"
            lines.append(head)
            lines += self._headline_lines(c.cell, "    ")
            lines += [f"    {f.line()}" for f in shown]
            lines += [f"    baseline {rid} left out: {why}" for rid, why in c.excluded.items()]
        return "\n".join(lines)

    def _headline_lines(self, cell: str, indent: str) -> list[str]:
        h = self.headlines.get(cell) or {}
        if not h.get("run") and not h.get("baseline"):
            return []
        base = f" (baseline: {h['baseline']})" if h.get("baseline") else ""
        return [f"{indent}index: {h.get('run') or '-'}{base}"]

    def markdown(self, limit: int = 5) -> str:
        """A short summary for a chat message: the verdict, then the worst figures per cell."""
        out = [
            f"**{self.plan} on {self.lab}: {self.headline()}**  ",
            f"run `{self.run_id}` vs `{', '.join(self.baseline_runs)}`",
        ]
        for c in self.cells:
            if c.status in (CellStatus.WITHIN, CellStatus.NEW):
                continue
            out.append(
                f"- **{c.cell}** {c.status.value.replace('_', ' ')}" + (f": {c.reason}" if c.reason else "")
            )
            out += self._headline_lines(c.cell, "  - ")
            for f in [f for f in c.figures if f.status is not FigureStatus.WITHIN][:limit]:
                if f.value is not None and f.baseline is not None:
                    pct = f" ({f.delta_pct:+.0f} %)" if f.delta_pct is not None else ""
                    tol = f", noise ±{_fmt(f.tolerance)}" if f.tolerance is not None else ""
                    out.append(f"  - {f.figure}: {_fmt(f.baseline)} → {_fmt(f.value)}{pct}{tol}")
                else:
                    out.append(f"  - {f.figure}: {f.status.value}")
        return "\n".join(out)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
        return path


def _fmt(v: float | None, sign: bool = False) -> str:
    if v is None:
        return "-"
    if v != 0 and abs(v) < 0.01:
        return f"{v:+.2g}" if sign else f"{v:.2g}"
    text = f"{v:+.2f}" if sign else f"{v:.2f}"
    return text if abs(v) < 1000 else (f"{v:+.0f}" if sign else f"{v:.0f}")


# --- judging ------------------------------------------------------------------------------------------


def _history_of(history: History, cell: str, figure: str) -> list[tuple[str, float]]:
    return [(rid, cells[cell][figure]) for rid, cells in history if figure in cells.get(cell, {})]


def _without_outliers(group: list[float], floor_sd: float) -> tuple[list[float], int]:
    """A stretch of history without its outliers (a regressed night is not noise): values further
    than ``OUTLIER_SDS`` robust SDs from the median, the SD being 1.4826 MAD (which one outlier
    cannot move) but never below ``floor_sd`` (the prior: a count that is mostly 0 has MAD 0)."""
    if len(group) < 4:
        return group, 0
    ordered = sorted(group)
    med = (
        ordered[len(ordered) // 2]
        if len(ordered) % 2
        else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    )
    deviations = sorted(abs(x - med) for x in group)
    mad = deviations[len(deviations) // 2]
    limit = OUTLIER_SDS * max(1.4826 * mad, floor_sd)
    kept = [x for x in group if abs(x - med) <= limit]
    return kept, len(group) - len(kept)


def _noise(
    f: Figure,
    level: float,
    base_values: list[float],
    hist: list[tuple[str, float]],
    run_id: str,
    value: float,
) -> tuple[Noise, list[Shift]]:
    """The figure's noise: the prior with the baseline runs' spread, or with the history's."""
    p_sd = prior(f.kind, f.statistic).sd(level, f.n)
    if len(hist) < MIN_HISTORY:
        src = f"prior + {len(base_values)} baseline runs" if len(base_values) > 1 else "prior"
        return estimate(p_sd, [base_values], src), []
    values = [v for _, v in hist] + [value]
    ids = [rid for rid, _ in hist] + [run_id]
    points = e_divisive(values)
    stretches = segments(len(values), points)
    groups = [values[s:e] for s, e in stretches]
    groups[-1] = groups[-1][:-1]  # the run under test is not part of its own noise
    cleaned = [_without_outliers(g, p_sd) for g in groups]
    groups = [g for g, _ in cleaned]
    dropped = sum(n for _, n in cleaned)
    shifts = [
        Shift(
            at_run=ids[cp.index],
            before=sum(values[s : cp.index]) / (cp.index - s),
            after=sum(values[cp.index : e]) / (e - cp.index),
            p_value=cp.p_value,
        )
        for cp, (s, _), (_, e) in zip(points, stretches[:-1], stretches[1:], strict=True)
    ]
    changes = f", {len(points)} level change{'s' if len(points) != 1 else ''}" if points else ""
    outliers = f", {dropped} outlier{'s' if dropped != 1 else ''} left out" if dropped else ""
    return estimate(p_sd, groups, f"prior + history of {len(hist)} runs{changes}{outliers}"), shifts


def _judge_figure(
    key: str,
    now: Figure | None,
    base: list[Figure],
    hist: list[tuple[str, float]],
    run_id: str,
) -> FigureChange:
    ref = now or base[0]
    out = FigureChange(
        figure=key,
        kind=ref.kind,
        statistic=ref.statistic,
        entity=ref.entity,
        unit=ref.unit,
        direction=ref.direction,
        status=FigureStatus.WITHIN,
    )
    if now is None:
        mean = sum(b.value for b in base) / len(base)
        return out.model_copy(
            update={"status": FigureStatus.MISSING, "baseline": mean, "note": "not in the run"}
        )
    if not base:
        return out.model_copy(
            update={"status": FigureStatus.NEW, "value": now.value, "note": "not in the baseline"}
        )
    low = [c for c in (now.coverage, *(b.coverage for b in base)) if c is not None and c < MIN_COVERAGE]
    values = [b.value for b in base]
    level = sum(values) / len(values)
    update: dict[str, Any] = {"baseline": level, "baseline_values": values, "value": now.value}
    if low:
        note = f"series coverage {min(low):.0%} < {MIN_COVERAGE:.0%}: not compared"
        return out.model_copy(update={**update, "status": FigureStatus.NOT_COMPARED, "note": note})
    noise, shifts = _noise(now, level, values, hist, run_id, now.value)
    tol = t_quantile(1 - ALPHA, noise.df) * noise.sd * math.sqrt(1 + 1 / len(values))
    delta = now.value - level
    score = abs(delta) / tol if tol > 0 else (math.inf if delta else 0.0)
    if score <= 1:
        status = FigureStatus.WITHIN
    elif now.direction is Direction.NEUTRAL:
        status = FigureStatus.CHANGED
    else:
        status = FigureStatus.REGRESSED if now.direction.worse(delta) else FigureStatus.IMPROVED
    update.update(
        status=status,
        delta=delta,
        delta_pct=100 * delta / abs(level) if level else None,
        tolerance=tol,
        noise_sd=noise.sd,
        noise_df=noise.df,
        noise_from=noise.source,
        score=score if math.isfinite(score) else 1e9,
        shifts=shifts,
    )
    return out.model_copy(update=update)


def _verdict(now: CellFigures, base: list[CellFigures]) -> FigureChange | None:
    """The criteria verdict as a pseudo-figure: pass -> fail is a regression, -> marginal a change."""
    judged = [b.verdict_outcome for b in base if b.verdict_outcome is not None]
    if now.verdict_outcome is None or not judged:
        return None
    ref = max(judged, key=lambda o: o.severity)
    mine = now.verdict_outcome
    if mine.severity > ref.severity:
        status = FigureStatus.REGRESSED if mine is Outcome.FAIL else FigureStatus.CHANGED
    elif mine.severity < ref.severity:
        status = FigureStatus.IMPROVED
    else:
        status = FigureStatus.WITHIN
    return FigureChange(
        figure="verdict",
        kind="verdict",
        statistic="outcome",
        direction=Direction.UP_IS_WORSE,
        status=status,
        note=f"{ref.value} -> {mine.value}"
        + (f": {now.reason}" if now.reason and status is not FigureStatus.WITHIN else ""),
    )


def _order(f: FigureChange) -> tuple[int, float]:
    return (_FIGURE_ORDER.index(f.status), -(f.score or 0.0))


def _compare_cell(
    cell: str, now: CellFigures, base: list[tuple[str, CellFigures]], history: History, run_id: str
) -> CellComparison:
    if now.outcome in FAULTS:
        why = f"the run's cell is {now.outcome.value}" + (f": {now.reason}" if now.reason else "")
        return CellComparison(cell=cell, status=CellStatus.LAB_FAULT, reason=why, run_outcome=now.outcome)
    clean = [(rid, c) for rid, c in base if c.outcome not in FAULTS]
    excluded = {
        rid: f"{c.outcome.value}" + (f": {c.reason}" if c.reason else "")
        for rid, c in base
        if c.outcome in FAULTS
    }
    if not clean:
        return CellComparison(
            cell=cell,
            status=CellStatus.LAB_FAULT,
            reason="no baseline run measured this cell cleanly",
            run_outcome=now.outcome,
            excluded=excluded,
        )
    keys = sorted(set(now.figures) | {k for _, c in clean for k in c.figures})
    figures = [
        _judge_figure(
            k,
            now.figures.get(k),
            [c.figures[k] for _, c in clean if k in c.figures],
            _history_of(history, cell, k),
            run_id,
        )
        for k in keys
    ]
    figures.sort(key=_order)
    verdict = _verdict(now, [c for _, c in clean])
    if verdict is not None:  # after the figures that explain it
        at = next(
            (i for i, f in enumerate(figures) if _order(f)[0] > _FIGURE_ORDER.index(verdict.status)),
            len(figures),
        )
        figures.insert(at, verdict)
    seen = {f.status for f in figures}
    status = CellStatus.WITHIN
    for fs, cs in (
        (FigureStatus.REGRESSED, CellStatus.REGRESSED),
        (FigureStatus.IMPROVED, CellStatus.IMPROVED),
        (FigureStatus.CHANGED, CellStatus.CHANGED),
    ):
        if fs in seen:
            status = cs
            break
    reason = ""
    if status is CellStatus.REGRESSED:
        worst = [f.figure for f in figures if f.status is FigureStatus.REGRESSED][:3]
        reason = "worse: " + ", ".join(worst)
    return CellComparison(
        cell=cell,
        status=status,
        reason=reason,
        run_outcome=now.outcome,
        baseline_runs=[rid for rid, _ in clean],
        excluded=excluded,
        figures=figures,
    )


def _cell_order(c: CellComparison) -> tuple[int, float, str]:
    return (_CELL_ORDER.index(c.status), -c.worst_score(), c.cell)


def unlike_runs(run: RunFigures, baselines: Sequence[RunFigures]) -> tuple[list[str], list[str]]:
    """How ``run`` differs from its baselines (one phrase per difference and baseline run: lab,
    plan, configuration, profile, parameters), and notes for runs whose profile was not recorded."""
    unlike: list[str] = []
    unknown: list[str] = []
    for b in baselines:
        diffs = [
            f"{what} {mine} vs {theirs}"
            for what, mine, theirs in (
                ("lab", run.lab, b.lab),
                ("plan", run.plan, b.plan),
                ("configuration", run.configuration, b.configuration),
            )
            if mine != theirs
        ]
        diffs += run.kind.differences(b.kind)
        if diffs:
            unlike.append(f"baseline {b.run_id}: {', '.join(diffs)}")
        for r in (run, b):
            if not r.kind.recorded and r.kind.profile is None:
                note = (
                    f"{r.run_id}: profile and parameters not recorded: cannot tell whether the runs are alike"
                )
                if note not in unknown:
                    unknown.append(note)
    return unlike, unknown


def compare(
    run: RunFigures,
    baselines: Sequence[RunFigures],
    *,
    history: History = (),
    baseline_set: str | None = None,
    cells: str | None = None,
    allow_unlike: bool = False,
) -> Comparison:
    """Compare ``run`` with one or several baseline runs (see the module docstring). ``history``:
    earlier runs' figures (oldest first) to measure the noise by; ``cells``: a glob of cell ids to
    compare (default all). Raises BadInputError when there is nothing to compare."""
    if not baselines:
        raise BadInputError(
            f"{run.run_id}: no baseline run to compare with (give one, or `labctl baseline set`)"
        )
    history = [(rid, c) for rid, c in history if rid != run.run_id]
    unlike, unknown = unlike_runs(run, baselines)
    result = Comparison(
        run_id=run.run_id,
        lab=run.lab,
        plan=run.plan,
        baseline_runs=[b.run_id for b in baselines],
        baseline_set=baseline_set,
        history_runs=len(history),
        unlike=unlike,
        allow_unlike=allow_unlike,
        notes=unknown,
        method={
            "alpha": ALPHA,
            "min_coverage": MIN_COVERAGE,
            "min_history": MIN_HISTORY,
            "prior_df": estimate(1.0, []).df,
            "noise": "Student-t prediction interval; per-kind prior pooled with baseline or history spread",
            "change_points": "E-divisive means (Matteson & James 2014), permutation test",
        },
    )
    names = set(run.cells) | {c for b in baselines for c in b.cells}
    if cells:
        names = {c for c in names if fnmatch.fnmatchcase(c, cells)}
    if not set(run.cells) & {c for b in baselines for c in b.cells} & names:
        raise BadInputError(
            f"{run.run_id}: no cell in common with the baseline {', '.join(result.baseline_runs)}"
            + (f" matching {cells!r}" if cells else "")
            + " (compare runs of the same plan)"
        )
    for cell in sorted(names):
        now = run.cells.get(cell)
        base = [(b.run_id, b.cells[cell]) for b in baselines if cell in b.cells]
        if now is None:
            result.cells.append(
                CellComparison(cell=cell, status=CellStatus.MISSING, reason="in the baseline, not in the run")
            )
        elif not base:
            result.cells.append(
                CellComparison(cell=cell, status=CellStatus.NEW, reason="not in the baseline")
            )
        else:
            result.cells.append(_compare_cell(cell, now, base, history, run.run_id))
    result.cells.sort(key=_cell_order)
    return result
