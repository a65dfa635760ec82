"""The document's verdict, from every measurement of every run given.

- **not certified** when a run did not finish (killed: ``run.json`` still says ``running``), was
  interrupted or broke, or when any cell is not a pass: a failed criterion, a lab fault, no data, an
  error, an interrupted or never-summarised cell, a cell without a verdict. The reason names the
  first such run or cell; every one is listed.
- **certified with observations** when every cell passed and some criterion was marginal (outside
  its pass band, inside its marginal band: reported, not failing), or a criterion judged only when
  measured (``required: false``) had nothing to judge.
- **certified** otherwise.

A failure is never presented as a pass: nothing here looks at how many cells passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from labctl.records.run_record import CriterionVerdict, Outcome, RunOutcome
from labctl.report.certify.common import WORDS, band_text, cell_label, why_not_passed, with_unit, words
from labctl.report.certify.inputs import Inputs
from labctl.report.certify.model import Status, Verdict
from labctl.report.run_view import CellView


def cell_problem(c: CellView) -> str | None:
    """Why a cell does not count as a pass (one line), or None when it passed."""
    if c.provisional:
        return f"cell {c.id} never finished (the run was killed during it)"
    if c.outcome not in (Outcome.PASS, Outcome.MARGINAL):
        reason = f": {words(c.reason)}" if c.reason else ""
        return f"cell {c.id} {WORDS[c.outcome]}{reason}"
    if c.verdict is None:
        return f"cell {c.id} was not judged (no verdicts.json)"
    return None


def _deciding(c: CellView) -> list[CriterionVerdict]:
    """The criteria that gave the cell its outcome."""
    return [v for v in c.verdict.criteria if v.outcome is c.outcome] if c.verdict is not None else []


def _listed(cells: Sequence[CellView], shown: int = 3) -> str:
    labels = [cell_label(c) for c in cells[:shown]]
    more = f" and {len(cells) - shown} more" if len(cells) > shown else ""
    return "; ".join(labels) + more  # a label has commas of its own


def cell_problems(cells: Sequence[CellView]) -> list[tuple[str, str]]:
    """The cells that did not pass, grouped by outcome and deciding criterion: per group, a short
    head (``18 cells had no data to judge on write-cache disk queue``) and the line with the
    numbers and the cells."""
    groups: dict[tuple[str, str], list[CellView]] = {}
    for c in cells:
        if cell_problem(c) is None:
            continue
        if c.provisional:
            key = ("killed", "")
        elif c.outcome in (Outcome.PASS, Outcome.MARGINAL):
            key = ("unjudged", "")
        else:
            deciding = _deciding(c)
            key = (c.outcome.value, deciding[0].name if deciding else "")
        groups.setdefault(key, []).append(c)
    out = []
    for (what, name), group in groups.items():
        n = f"{len(group)} cell{'s' if len(group) > 1 else ''}"
        if what == "killed":
            head = f"{n} never finished (the run was killed during it)"
            out.append((head, f"{head}: {_listed(group)}"))
            continue
        if what == "unjudged":
            head = f"{n} not judged (no verdicts.json)"
            out.append((head, f"{head}: {_listed(group)}"))
            continue
        outcome = Outcome(what)
        criteria = [v for c in group for v in _deciding(c) if v.name == name]
        head = f"{n} {WORDS[outcome]}" + (f" on {name}" if name else "")
        out.append((head, f"{head}: {why_not_passed(outcome, criteria, group)} ({_listed(group)})"))
    return out


def run_problems(inputs: Inputs) -> list[str]:
    out = []
    for r in inputs.runs:
        info = r.info
        if info is None:
            out.append(f"run {r.run_id} has no readable run.json")
        elif info.outcome is RunOutcome.RUNNING:
            out.append(
                f"run {r.run_id} did not finish: no end was recorded (the process was killed or still runs)"
            )
        elif info.outcome is RunOutcome.INTERRUPTED:
            out.append(f"run {r.run_id} was interrupted" + (f" ({info.reason})" if info.reason else ""))
        elif info.outcome is RunOutcome.ERROR:
            out.append(
                f"run {r.run_id} broke off with an error" + (f" ({info.reason})" if info.reason else "")
            )
        if info is not None and not r.view.cells:
            out.append(f"run {r.run_id} measured no cell")
        missing = [
            c for c in (info.cells if info is not None else []) if c not in {v.id for v in r.view.cells}
        ]
        if missing:
            out.append(f"run {r.run_id}: cell {missing[0]} is listed in run.json but has no readable summary")
    return out


UNJUDGED = ": nothing to judge (judged when measured)"


def observations(inputs: Inputs) -> list[str]:
    out = []
    for c in inputs.all_cells:
        if c.verdict is None:
            continue
        for v in c.verdict.criteria:
            if v.outcome is Outcome.MARGINAL:
                out.append(
                    f"{cell_label(c)}: {v.name}: {with_unit(v.observed, v.unit)}, outside the pass band "
                    f"{band_text(v.pass_band, v.unit, expression=False)}"
                )
            elif not v.required and v.outcome is Outcome.NO_DATA:
                # judged when measured, and this cell gave it nothing: reported, not failing. Measured
                # outside its bands it is a failure like any other (cell_problems), never an observation.
                out.append(f"{cell_label(c)}: {v.name}{UNJUDGED}")
    return out


def verdict(inputs: Inputs) -> Verdict:
    runs = run_problems(inputs)
    bad = [c for c in inputs.all_cells if cell_problem(c) is not None]
    groups = cell_problems(inputs.all_cells)
    reasons = runs + [line for _, line in groups]
    if not inputs.all_cells and not reasons:
        reasons.append("no cell was measured")
    seen = observations(inputs)
    if reasons:
        if runs:
            headline = f"Not certified: {runs[0]}."
        elif bad:
            heads = [h for h, _ in groups]
            shown = "; ".join(heads[:3]) + ("; ..." if len(heads) > 3 else "")
            headline = f"Not certified: {len(bad)} of {len(inputs.all_cells)} cells did not pass ({shown})."
        else:
            headline = f"Not certified: {reasons[0]}."
        return Verdict(Status.NOT_CERTIFIED, headline, tuple(reasons), tuple(seen))
    if seen:
        unjudged = sum(1 for o in seen if o.endswith(UNJUDGED))
        marginal = len(seen) - unjudged
        said = []
        if marginal:
            said.append(
                ("1 result was outside its" if marginal == 1 else f"{marginal} results were outside their")
                + " pass band but inside the marginal band"
            )
        if unjudged:
            said.append(
                f"{unjudged} criteri{'on' if unjudged == 1 else 'a'} judged only when measured had nothing to judge"
            )
        return Verdict(
            Status.OBSERVATIONS,
            "Certified with observations: every cell passed; " + "; ".join(said) + ".",
            (),
            tuple(seen),
        )
    return Verdict(Status.CERTIFIED, "Certified: every cell passed every criterion.", (), ())
