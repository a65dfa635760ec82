"""A night's verdict and its short summary for a chat message (``nightly.md``, ``nightly.txt``).

    verdict = night_verdict(figures, comparison)          # comparison None: no baseline yet
    verdict.exit_code                                     # 0, 1, 3 or 130
    markdown(verdict, comparison, links)                  # for Slack, Teams, Mattermost, GitLab
    text(verdict, comparison, links)                      # the same, plain (mail, a CI log)

The verdict, worst first:

- **interrupted** (130): the run was stopped; nothing is compared;
- **regression** (1): a cell moved beyond the run-to-run noise in its bad direction;
- **failed** (1): a cell failed its criteria (also when the baseline failed them too);
- **lab fault** (3): a cell measured the lab, not the product (``lab_fault``, ``no_data``,
  ``error``), or a baseline cell is missing from the run or has no clean baseline run;
- **passed** (0): none of the above. Without a baseline the run is judged by its own outcome and
  the summary gives the command that makes it the baseline.

A regression is reported with a lab fault beside it: one broken cell does not hide another's
regression.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, Field

from labctl.records.figures import RunFigures
from labctl.records.run_record import Outcome, RunOutcome
from labctl.report.compare import FAULTS, CellStatus, Comparison, FigureChange

EXIT_OK, EXIT_REGRESSION, EXIT_LAB_FAULT, EXIT_INTERRUPTED = 0, 1, 3, 130
FIGURES_PER_CELL = 3  # the responsible metrics shown per regressed cell


class Verdict(StrEnum):
    PASSED = "passed"
    REGRESSION = "regression"
    FAILED = "failed"
    LAB_FAULT = "lab_fault"
    INTERRUPTED = "interrupted"


EXIT_CODES = {
    Verdict.PASSED: EXIT_OK,
    Verdict.REGRESSION: EXIT_REGRESSION,
    Verdict.FAILED: EXIT_REGRESSION,
    Verdict.LAB_FAULT: EXIT_LAB_FAULT,
    Verdict.INTERRUPTED: EXIT_INTERRUPTED,
}


class NightVerdict(BaseModel):
    """What the nightly concluded of a run; kept in its ``run.json`` under ``extra.nightly`` (and so
    in the store), where the trends page reads past nights' verdicts."""

    run_id: str
    lab: str
    plan: str
    started_utc: str = ""
    verdict: Verdict
    exit_code: int
    run_outcome: str = Field(description="run.json's outcome")
    cells: int = 0
    baseline_set: str | None = Field(None, description="None: no baseline was set, nothing compared")
    baseline_runs: list[str] = Field(default_factory=list)
    history_runs: int = 0
    regressed: dict[str, list[str]] = Field(
        default_factory=dict, description="cell -> regressed figures, the furthest outside the noise first"
    )
    lab_faults: dict[str, str] = Field(default_factory=dict, description="cell -> why")
    failed: dict[str, str] = Field(default_factory=dict, description="cell -> the failed criteria")

    @property
    def compared(self) -> bool:
        return self.baseline_set is not None

    def baseline_command(self) -> str:
        return f"labctl baseline set {self.lab} {self.plan} {self.run_id}"

    def headline(self) -> str:
        """The one-line verdict."""
        if self.verdict is Verdict.INTERRUPTED:
            return f"INTERRUPTED after {self.cells} cell(s): not compared; what was measured is stored"
        if self.verdict is Verdict.REGRESSION:
            cells = ", ".join(self.regressed)
            first = next(iter(self.regressed.values()))[0]
            return (
                f"REGRESSION in {len(self.regressed)} of {self.cells} cell(s) beyond the run-to-run noise: "
                f"{cells} (first: {first})"
            )
        if self.verdict is Verdict.FAILED:
            return f"FAILED criteria in {len(self.failed)} of {self.cells} cell(s): {', '.join(self.failed)}"
        if self.verdict is Verdict.LAB_FAULT:
            return (
                f"LAB FAULT in {len(self.lab_faults)} of {self.cells} cell(s): the lab, not the product: "
                f"{', '.join(self.lab_faults)}"
            )
        if not self.compared:
            return f"NO BASELINE yet: the run passed ({self.cells} cell(s)) and is stored"
        return f"no regression: {self.cells} cell(s) within the run-to-run noise of the baseline"


def _cell_faults(figures: RunFigures, comparison: Comparison | None) -> dict[str, str]:
    faults = {
        c.cell: f"{c.outcome.value}: {c.reason}" if c.reason else c.outcome.value
        for c in figures.cells.values()
        if c.outcome in FAULTS
    }
    if comparison is not None:
        for c in comparison.of(CellStatus.LAB_FAULT, CellStatus.MISSING):
            faults.setdefault(c.cell, f"{c.status.value.replace('_', ' ')}: {c.reason}")
    return faults


def night_verdict(
    figures: RunFigures, comparison: Comparison | None, *, run_reason: str = "", history_runs: int = 0
) -> NightVerdict:
    """The night's verdict from the run's figures (cells and their outcomes), its comparison with
    the baseline (None: no baseline is set) and run.json's one-line ``run_reason``. A run that
    failed or broke outside its cells (a plan's own check, a crash) counts as ``(run)``; so does
    a run with no end recorded (killed, or still running)."""
    regressed = (
        {c.cell: [f.figure for f in c.regressed] or ["verdict"] for c in comparison.of(CellStatus.REGRESSED)}
        if comparison is not None
        else {}
    )
    failed = {c.cell: c.reason or "failed" for c in figures.cells.values() if c.outcome is Outcome.FAIL}
    faults = _cell_faults(figures, comparison)
    outcome = figures.outcome
    if outcome == RunOutcome.FAILED.value and not failed:  # e.g. a plan's own assertion
        failed["(run)"] = run_reason or "the run failed outside its cells"
    if outcome == RunOutcome.RUNNING.value:
        faults["(run)"] = "no end recorded: the run was killed, or is still running"
    elif outcome == RunOutcome.ERROR.value and not faults:
        faults["(run)"] = run_reason or "the run broke outside its cells"
    if figures.outcome == RunOutcome.INTERRUPTED.value:
        verdict = Verdict.INTERRUPTED
    elif regressed:
        verdict = Verdict.REGRESSION
    elif failed:
        verdict = Verdict.FAILED
    elif faults or outcome == RunOutcome.LAB_FAULT.value:
        verdict = Verdict.LAB_FAULT
        faults = faults or {"(run)": run_reason or outcome}
    else:
        verdict = Verdict.PASSED
    return NightVerdict(
        run_id=figures.run_id,
        lab=figures.lab,
        plan=figures.plan,
        started_utc=figures.started_utc,
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        run_outcome=figures.outcome,
        cells=len(figures.cells),
        baseline_set=(comparison.baseline_set or "(runs)") if comparison is not None else None,
        baseline_runs=comparison.baseline_runs if comparison is not None else [],
        history_runs=comparison.history_runs if comparison is not None else history_runs,
        regressed=regressed,
        lab_faults=faults,
        failed=failed,
    )


# --- rendering ------------------------------------------------------------------------------------------


def change_line(f: FigureChange) -> str:
    """``disk_latency_ms mean pvs-01/D: 0.10 -> 6.56 ms (+6.46, +6400 %; noise ±1.28)``."""
    if f.value is None or f.baseline is None:
        return f"{f.figure} {f.note or f.status.value}"
    unit = f" {f.unit}" if f.unit else ""
    pct = f", {f.delta_pct:+.0f} %" if f.delta_pct is not None else ""
    noise = f"; noise ±{f.tolerance:.3g}" if f.tolerance is not None else ""
    return f"{f.figure} {f.baseline:.3g} -> {f.value:.3g}{unit} ({f.delta:+.3g}{pct}{noise})"


def shown_link(url: str, run_id: str) -> str:
    """A report link as a reader may see it: a URL as given; a local path relative to the run
    folder (the summary sits in it), never the controller's absolute path."""
    if "://" in url or not url.startswith("/"):
        return url
    _head, sep, rest = url.partition(f"/{run_id}/")
    return rest if sep else url  # not under the run folder: nothing to make it relative to


def _lines(v: NightVerdict, comparison: Comparison | None, links: Mapping[str, str], md: bool) -> list[str]:
    def code(s: str) -> str:
        return f"`{s}`" if md else s

    def bold(s: str) -> str:
        return f"**{s}**" if md else s

    when = v.started_utc[:16].replace("T", " ") + " UTC" if v.started_utc else v.run_id
    out = [bold(f"{v.plan} on {v.lab}, night of {when}: {v.headline()}") + f" (exit {v.exit_code})"]
    if v.compared:
        hist = f"; noise from a history of {v.history_runs} runs" if v.history_runs else ""
        out.append(f"run {code(v.run_id)} against baseline {code(str(v.baseline_set))} "
                   f"({', '.join(code(r) for r in v.baseline_runs)}){hist}")  # fmt: skip
    else:
        out.append(f"run {code(v.run_id)}: no baseline for {v.lab} / {v.plan}, not compared")
    if comparison is not None and comparison.unlike:  # e.g. a baseline set before sets had a profile
        out.append(bold("Baseline not alike") + ": " + "; ".join(comparison.unlike))
    if v.regressed and comparison is not None:
        out += ["", bold("Regressions") + " (the responsible metrics first)"]
        for c in comparison.of(CellStatus.REGRESSED):
            out.append(f"- {code(c.cell)}")
            out += [f"  - {change_line(f)}" for f in c.regressed[:FIGURES_PER_CELL]]
            rest = len(c.regressed) - FIGURES_PER_CELL
            if rest > 0:
                out.append(f"  - and {rest} more (compare.json)")
            if not c.regressed:
                out.append("  - verdict " + next((f.note for f in c.figures if f.figure == "verdict"), ""))
    if v.failed:
        out += ["", bold("Failed criteria")]
        out += [f"- {code(cell)}: {why}" for cell, why in v.failed.items()]
    out += ["", bold("Lab faults") + (" (the lab, not the product)" if v.lab_faults else ": none")]
    out += [f"- {code(cell)}: {why}" for cell, why in v.lab_faults.items()]
    if not v.compared and v.verdict is Verdict.PASSED:
        out += ["", f"Make it the baseline: {code(v.baseline_command())}"]
    if links:
        links = {name: shown_link(url, v.run_id) for name, url in links.items()}
        shown = [f"[{name}]({url})" if md else f"{name}: {url}" for name, url in links.items()]
        out += ["", ("Reports: " + " · ".join(shown)) if md else "Reports:", *([] if md else shown)]
    return out


def markdown(
    v: NightVerdict, comparison: Comparison | None = None, links: Mapping[str, str] | None = None
) -> str:
    """The summary as Markdown (chat message, merge-request comment)."""
    return "\n".join(_lines(v, comparison, links or {}, md=True)) + "\n"


def text(
    v: NightVerdict, comparison: Comparison | None = None, links: Mapping[str, str] | None = None
) -> str:
    """The summary as plain text (mail, a CI log)."""
    return "\n".join(_lines(v, comparison, links or {}, md=False)) + "\n"
