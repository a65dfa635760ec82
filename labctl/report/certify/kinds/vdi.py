"""The VDI storms in the certification (plans ``vdi_storm``, ``scale_out``, ``write_cache_modes``):
desktops booted, logged on, worked and logged off on one timeline against the arrays and hosts.

Method: the phases as the 2012 paper ran them, the cells' parameters, the criteria in words.
Results: a table per cell (desktops, logons, IOPS per desktop per phase beside the paper's table 7,
array peaks and latency, host CPU, the response-time index's headline), the figures page's VDI
charts (:mod:`labctl.report.figures_vdi`: not drawn again), the logon waterfall per cell whose
launchers timed it (:mod:`.vdi_waterfall`), the criteria matrix. Findings: the measured figures in
sentences. Conclusion: per cell, what it supports as VSImax is read
(:mod:`labctl.report.headline`). Sizing: desktops per array and arrays for the desktops measured,
from the cells that passed (:func:`labctl.sizing.from_run.run_profile`, ``labctl size measured``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from labctl.errors import BadInputError
from labctl.records.run_record import Outcome, PhaseFigures
from labctl.report import figures_vdi, figures_vdi_waterfall
from labctl.report.certify.common import (
    OUTCOME_WORD,
    WORDS,
    band_text,
    cell_label,
    criteria_table,
    criterion_findings,
    num,
    outcome_cell,
    verdict_matrix,
    with_unit,
    words,
)
from labctl.report.certify.figures import sections_as_blocks
from labctl.report.certify.kinds import vdi_waterfall
from labctl.report.certify.model import Block, Cell, Formula, Section, Table, Text, Tone
from labctl.report.certify.registry import Context, Kind, register
from labctl.report.headline import index_headline
from labctl.report.run_view import VDI_HOST_SOURCES, VDI_SCENARIOS, CellView
from labctl.report.waterfall import sentence
from labctl.sizing import size_from_measurements
from labctl.sizing.from_run import run_profile

PASSED = (Outcome.PASS, Outcome.MARGINAL)
PAPER_PER_DESKTOP = {"boot": "16-18", "login": "11-13", "steady": "7-8"}  # 2012 paper, table 7
HOST_CPU = ("cpu_pct", "cpu.usage.average")
PHASE_WORDS = {
    "boot": "boot storm",
    "idle": "idle settle",
    "login": "login storm",
    "steady": "steady state",
    "logoff": "logoff",
}


def passed(c: CellView) -> bool:
    return c.whole and c.outcome in PASSED and c.verdict is not None


def desktops(c: CellView) -> int:
    n = len(c.summary.by_role("desktop"))
    if n:
        return n
    x = c.summary.extra.get("desktops")
    return int(x) if isinstance(x, int | float) else 0


def _phase(c: CellView, name: str) -> PhaseFigures | None:
    return next((f for f in c.summary.phase_figures if f.phase == name and not f.array), None)


def _logons(c: CellView) -> list[float]:
    return sorted(d.login_s for d in c.summary.by_role("desktop") if d.login_s is not None)


def _host_cpu(c: CellView) -> tuple[str, float] | None:
    found = [
        (m.entity, m.peak)
        for m in c.metrics.values()
        if m.source in VDI_HOST_SOURCES and m.metric in HOST_CPU and m.peak is not None
    ]
    return max(found, key=lambda x: x[1]) if found else None


def _latency(c: CellView) -> tuple[float | None, float | None]:
    """(the highest phase mean, the highest sample) of the arrays' latency, ms."""
    figs = [f for f in c.summary.phase_figures if not f.array]
    means = [f.latency_mean_ms for f in figs if f.latency_mean_ms is not None]
    peaks = [f.latency_peak_ms for f in figs if f.latency_peak_ms is not None]
    return (max(means) if means else None, max(peaks) if peaks else None)


def _per_desktop(c: CellView) -> str:
    shown = [_phase(c, p) for p in ("boot", "login", "steady")]
    if not any(shown):
        return "-"
    return " / ".join(num(f.iops_per_desktop) if f is not None else "-" for f in shown)


def results_table(cells: Sequence[CellView]) -> Table:
    rows: list[list[str | Cell]] = []
    for c in cells:
        n = desktops(c)
        logons = _logons(c)
        peaks = [f.iops_peak for f in c.summary.phase_figures if not f.array and f.iops_peak is not None]
        mean_ms, peak_ms = _latency(c)
        cpu = _host_cpu(c)
        head = index_headline(c.summary.response_index)
        rows.append(
            [
                cell_label(c),
                outcome_cell(c.outcome, OUTCOME_WORD[c.outcome] + (" (killed)" if c.provisional else "")),
                Cell(
                    f"{len(logons)} of {n}" if n else "-",
                    Tone.BAD if n and len(logons) < n else Tone.NONE,
                    True,
                ),
                Cell(
                    f"{num(statistics.median(logons), 0)} / {num(logons[-1], 0)}" if logons else "-", num=True
                ),
                Cell(_per_desktop(c), num=True),
                Cell(num(max(peaks), 0) if peaks else "-", num=True),
                Cell(f"{num(mean_ms, 2)} / {num(peak_ms, 2)}" if mean_ms is not None else "-", num=True),
                Cell(num(cpu[1], 0) if cpu else "-", num=True),
                head.text if head is not None else "-",
            ]
        )
    return Table.of(
        "VDI storm results per cell",
        (
            "cell",
            "outcome",
            "desktops logged on",
            "logon, s (median / longest)",
            "IOPS per desktop (boot / login / steady)",
            "array IOPS (peak)",
            "array latency, ms (highest phase mean / peak)",
            "host CPU, % (peak)",
            "response-time index",
        ),
        rows,
        note="IOPS per desktop as the 2012 paper's table 7 gives them (boot 16-18, login 11-13, steady "
        "state 7-8): the phase's highest sample over its desktops for the boot and login storms, the mean "
        "over the desktops in steady state. The response-time index is read as VSImax is: the session "
        "count at which a typical operation stays more than its threshold above the baseline, or not "
        "saturated up to the most sessions run; a desktop is good within half a second of the baseline.",
    )


def _phase_sentence(c: CellView) -> str | None:
    parts = []
    for name in ("boot", "login", "steady"):
        f = _phase(c, name)
        if f is None or f.iops_per_desktop is None:
            continue
        figure = f.iops_mean if name == "steady" else f.iops_peak
        how = "averaged" if name == "steady" else "peaked at"
        parts.append(
            f"{how} {num(figure, 0)} IOPS in the {PHASE_WORDS[name]} ({num(f.iops_per_desktop)} per desktop; "
            f"the 2012 paper: {PAPER_PER_DESKTOP[name]})"
        )
    if not parts:
        return None
    arrays = figures_vdi.arrays(c)
    who = (
        f"array {arrays[0]}"
        if len(arrays) == 1
        else f"the {len(arrays)} arrays together"
        if arrays
        else "storage"
    )
    return (
        f"In {cell_label(c)}, {who} "
        + ", ".join(parts[:-1])
        + (" and " if len(parts) > 1 else "")
        + parts[-1]
        + "."
    )


def cell_findings(c: CellView) -> list[str]:
    out = []
    n = desktops(c)
    logons = _logons(c)
    waterfall = figures_vdi_waterfall.of(c)
    said = sentence(cell_label(c), waterfall) if waterfall is not None else None
    if n:
        if len(logons) == n:
            lead = f"In {cell_label(c)}, all {n} desktops logged on"
        else:
            lead = f"In {cell_label(c)}, {len(logons)} of {n} desktops logged on"
        if logons:
            lead += f"; a logon took {num(statistics.median(logons), 0)} s at the median and {num(logons[-1], 0)} s at the longest"
        out.append(lead + ".")
    if said:
        out.append(said)
    phases = _phase_sentence(c)
    if phases:
        out.append(phases)
    mean_ms, peak_ms = _latency(c)
    if mean_ms is not None:
        out.append(
            f"Array latency averaged at most {num(mean_ms, 2)} ms over a phase and peaked at {num(peak_ms, 2)} ms "
            f"in {cell_label(c)} (the 2012 paper's criterion: under 20 ms)."
        )
    cpu = _host_cpu(c)
    if cpu is not None:
        out.append(f"ESXi host CPU peaked at {num(cpu[1], 0)} % on {cpu[0]} in {cell_label(c)}.")
    head = index_headline(c.summary.response_index)
    if head is not None:
        out.append(f"The response-time index of {cell_label(c)}: {head.text}.")
    return out


def _not_passed(c: CellView) -> str:
    """``VDI storm, 630 desktops, 100 % pre-booted failed: steady IOPS per desktop 10.4 IO/s, outside
    its pass band (≥ 6.5 IO/s and ≤ 8.5 IO/s) and its marginal band.``"""
    label = cell_label(c)
    lead = f"{label[0].upper()}{label[1:]}"
    deciding = [v for v in (c.verdict.criteria if c.verdict else []) if v.outcome is c.outcome]
    if c.outcome is Outcome.FAIL and deciding:
        said = "; ".join(
            f"{v.name} {with_unit(v.observed, v.unit)}, outside its pass band "
            f"({band_text(v.pass_band, v.unit, expression=False)}) and its marginal band"
            for v in deciding[:2]
        )
        return f"{lead} failed: {said}."
    why = f": {words(c.reason)}" if c.reason else ""
    return f"{lead} {WORDS[c.outcome]}{why}."


class VdiStorm(Kind):
    key = "vdi_storm"
    title = "VDI storm"

    def select(self, cells: Sequence[CellView]) -> list[CellView]:
        return [c for c in cells if c.summary.scenario in VDI_SCENARIOS]

    def owns(self, c: CellView) -> bool:
        return c.summary.scenario in VDI_SCENARIOS

    def method(self, ctx: Context, cells: Sequence[CellView]) -> list[Block]:
        durations: dict[str, list[float]] = {}
        for c in cells:
            for p in c.summary.phases:
                if p.name in PHASE_WORDS and p.end_ts_s is not None:
                    durations.setdefault(p.name, []).append(p.end_ts_s - p.start_ts_s)
        params = sorted({f"{k} {v}" for c in cells for k, v in c.summary.parameters.items()})
        intervals = sorted(
            {
                f"{m.source} {num(m.expected_interval_s)} s"
                for c in cells
                for m in c.metrics.values()
                if m.expected_interval_s and m.source not in ("sessions",)
            }
        )
        rows = [
            ["cells", "; ".join(cell_label(c) for c in cells)],
            ["desktops per cell", ", ".join(sorted({str(desktops(c)) for c in cells}, key=int)) or "-"],
            ["parameters", ", ".join(params).replace("_", " ") or "-"],
            *[
                [f"{PHASE_WORDS[name]}, lab minutes", " / ".join(num(d / 60) for d in sorted(set(ds)))]
                for name in PHASE_WORDS
                if (ds := durations.get(name))
            ],
            ["counters sampled every", "; ".join(intervals) or "-"],
        ]
        blocks: list[Block] = [
            Text(
                "VDI storm (the 2012 paper's method). The desktops of the pool are powered on through vCenter "
                "(those not pre-booted boot on demand), left to settle, and the users log on from the session "
                "launchers at the paper's rate; each session then runs the task workload's timed operations "
                "through the steady state and logs off. The arrays' front-end IOPS, read and write sizes and "
                "latency are sampled from the arrays themselves, the ESXi hosts' CPU, memory and network from "
                "vCenter, and each session's logon duration and operation response times from its launcher. "
                "Per phase the arrays' figures give the IOPS per desktop of the paper's table 7; the operations "
                "give the response-time index (docs/response-time-index.md), read as VSImax is."
            ),
            Table.of("VDI storm parameters", ("parameter", "value"), rows),
        ]
        table = criteria_table(cells, "Acceptance criteria of each VDI storm cell")
        if table is not None:
            blocks.append(table)
        return blocks

    def results(self, ctx: Context, cells: Sequence[CellView]) -> Section:
        children = [Section("Results per cell", [results_table(cells)])]
        labels = {c.id: cell_label(c) for c in cells}
        # portrait: a landscape page of its own would leave each cell's heading alone on the page before
        drawn = [
            dataclasses.replace(s, figures=[dataclasses.replace(f, wide=False) for f in s.figures])
            for s in figures_vdi.sections(cells, wide=False)
            if s.figures
        ]
        children += sections_as_blocks(drawn, lambda t: f"Figures: {labels.get(t, t)}")
        children += vdi_waterfall.sections(cells, cell_label)  # each logon, phase by phase
        matrix = verdict_matrix(
            cells, lambda c: cell_label(c), "Criteria per cell: the judged value and its outcome", "cell"
        )
        if matrix is not None:
            children.append(Section("Criteria verdicts per cell", [matrix]))
        return Section(
            self.title,
            [
                Text(
                    "Boot, login, steady state and logoff of the desktop pool on one timeline; one cell each."
                )
            ],
            children,
        )

    def findings(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out = [s for c in cells for s in cell_findings(c)]
        out += criterion_findings(cells, lambda c: cell_label(c), "cells")
        return out

    def conclusion(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out = []
        for c in cells:
            n = desktops(c)
            head = index_headline(c.summary.response_index)
            if not passed(c):
                out.append(_not_passed(c))
                continue
            mean_ms, _ = _latency(c)
            sentence = f"{n} desktops ran the storm ({cell_label(c)})"
            if head is not None:
                sentence += f"; the response-time index was {head.text}"
            if mean_ms is not None:
                sentence += f"; array latency averaged at most {num(mean_ms, 2)} ms over a phase"
            marginal = sorted(
                {v.name for v in (c.verdict.criteria if c.verdict else []) if v.outcome is Outcome.MARGINAL}
            )
            if marginal:
                sentence += f"; marginal: {', '.join(marginal)}"
            out.append(sentence + ".")
        return out

    def sizing(self, ctx: Context, cells: Sequence[CellView]) -> list[Section]:
        good = [c for c in cells if passed(c)]
        if not good:
            return [
                Section(
                    "Desktops per array",
                    [
                        Text(
                            "No VDI cell passed, so nothing is sized from these runs: sizing reads passing cells only."
                        )
                    ],
                )
            ]
        run = ctx.inputs.run_of(good[0])
        try:
            measured = run_profile(run.path, {c.id for c in good if ctx.inputs.run_of(c) is run})
        except BadInputError as exc:
            return [Section("Desktops per array", [Text(f"Not sized from this run: {words(str(exc))}")])]
        n = max(desktops(c) for c in good)
        result = size_from_measurements(measured.profile, n)
        a = measured.array
        rows: list[list[str | Cell]] = [
            [
                f"{PHASE_WORDS.get(str(p), str(p))}: IOPS per desktop",
                f"{num(float(f.iops_per_desktop), 2)} at {num(float(f.write_share) * 100, 0)} % writes "
                f"({cell_label(next(c for c in good if c.id == f.cell)) if any(c.id == f.cell for c in good) else f.cell})",
            ]
            for p, f in measured.chosen.items()
        ]
        rows += [
            [
                "what one array carried within the latency criterion"
                + (" (a lower bound: it never left the pass band)" if measured.lower_bound else ""),
                f"{num(float(a.iops), 0)} IOPS at {num(float(a.write_share) * 100, 0)} % writes on {a.raid} ({a.detail})",
            ],
            [
                "desktops per array (the limiting phase: " + str(result.limiting.phase) + ")",
                Cell(str(result.desktops_per_array)),
            ],
            [f"arrays for the {n} desktops measured", Cell(str(result.arrays))],
        ]
        blocks: list[Block] = [
            Text(
                "Sized from the cells that passed (labctl size measured --run): each phase's IOPS per desktop, "
                "converted to back-end I/Os with the RAID write penalty at its write share, against what one "
                "array carried while its latency stayed inside the criterion. What must be provisioned rounds "
                "up; what fits rounds down."
                + (
                    " Cells that did not pass size nothing: "
                    + ", ".join(cell_label(c) for c in cells if not passed(c))
                    + "."
                    if len(good) < len(cells)
                    else ""
                )
            ),
            Table.of("Desktops per array: the answer", ("quantity", "value"), rows),
            Formula(tuple(result.lines()), "labctl size measured --run: the arithmetic"),
        ]
        if result.desktops_per_array < n:
            blocks.append(
                Text(
                    f"The arithmetic gives fewer desktops per array ({result.desktops_per_array}) than one array "
                    f"was seen to carry ({n}): it charges every desktop the heaviest phase measured at the same "
                    "instant. Rely on the measured count; the arithmetic is the figure for a denser storm.",
                    note=True,
                )
            )
        return [Section("Desktops per array", blocks)]


register(VdiStorm())
