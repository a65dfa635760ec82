"""The certification document assembled from run folders, and :func:`certify`, which writes it.

Order, as the reference papers read: the first page carries the title, the verdict and the executive
summary (a failed or interrupted run says so there); then the contents, an introduction, the
configuration under test, the test method, the results with the paper-style figures, findings in
plain sentences, sizing, and the appendices (criteria that did not pass with their evidence,
traceability, glossary). Every part is computed from the runs; the date is the only thing that
differs when the same runs are certified twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labctl.records.run_record import Outcome
from labctl.report.certify import appendix, configuration, method
from labctl.report.certify.common import OUTCOME_WORD
from labctl.report.certify.inputs import Inputs, load_runs
from labctl.report.certify.kinds import other
from labctl.report.certify.model import Block, Bullets, Callout, Document, Section, Status, Table, Text
from labctl.report.certify.pdf import write_pdf
from labctl.report.certify.registry import Context, Kind, kinds
from labctl.report.certify.render_html import render
from labctl.report.certify.verdict import verdict
from labctl.report.run_view import CellView

HTML_FILE = "certification.html"
PDF_FILE = "certification.pdf"
SHOWN_REASONS = 8  # on the first page; every one is in appendix A


def _parts(inputs: Inputs) -> tuple[list[tuple[Kind, list[CellView]]], list[CellView]]:
    parts = [(k, cells) for k in kinds() if (cells := k.select(inputs.cells))]
    owned = {id(c) for c in inputs.cells for k, _ in parts if k.owns(c)}
    return parts, [c for c in inputs.cells if id(c) not in owned]


def _counts(cells: Sequence[CellView]) -> str:
    by: dict[Outcome, int] = {}
    for c in cells:
        by[c.outcome] = by.get(c.outcome, 0) + 1
    return ", ".join(f"{n} {OUTCOME_WORD[o]}" for o, n in sorted(by.items(), key=lambda kv: kv[0].severity))


def _summary(ctx: Context, parts: Sequence[tuple[Kind, list[CellView]]], findings: list[str]) -> list[Block]:
    v = ctx.verdict
    inputs = ctx.inputs
    title = v.status.value.upper()
    if inputs.simulated:
        title += " (simulated lab)"
    blocks: list[Block] = [Callout(title, v.headline, v.status.tone)]
    if v.status is Status.NOT_CERTIFIED:
        shown = list(v.reasons[:SHOWN_REASONS])
        if len(v.reasons) > SHOWN_REASONS:
            shown.append(f"... and {len(v.reasons) - SHOWN_REASONS} more (appendix A lists every criterion).")
        blocks += [Text("Why it is not certified:"), Bullets(tuple(shown))]
    conclusions = [s for k, cells in parts for s in k.conclusion(ctx, cells)]
    if conclusions:
        lead = (
            "What the measurements support" if v.status is not Status.NOT_CERTIFIED else "What was measured"
        )
        blocks += [Text(f"{lead}:"), Bullets(tuple(conclusions))]
    if v.observations:
        shown = list(v.observations[:6])
        if len(v.observations) > 6:
            shown.append(f"... and {len(v.observations) - 6} more (appendix A).")
        blocks += [
            Text(
                "Observations (marginal results: outside the pass band, inside the marginal band; and criteria "
                "judged when measured that had nothing to judge):"
                if any("(judged when measured)" in o for o in v.observations)
                else "Observations (marginal results: outside the pass band, inside the marginal band):"
            ),
            Bullets(tuple(shown)),
        ]
    if findings:
        blocks += [Text("Key findings:"), Bullets(tuple(findings[:5]))]
    rows = [
        [
            r.run_id,
            r.info.plan if r.info else "-",
            r.info.outcome.value if r.info else "-",
            _counts(r.view.cells) or "none",
        ]
        for r in inputs.runs
    ]
    blocks.append(Table.of("Runs certified", ("run", "plans", "run outcome", "cells"), rows))
    return blocks


def _intro(inputs: Inputs, customer: str | None) -> Section:
    lab = inputs.lab()
    name = lab.data.get("name") if lab is not None else "the lab"
    who = f" for {customer}" if customer else ""
    return Section(
        "Introduction",
        [
            Text(
                f"This document{who} states what the configuration of {name} supports, from measurements made "
                "by labctl, and shows how that was established. It reads like the reference characterisation "
                "papers: the configuration under test (section 2), the test method and its acceptance criteria "
                "(section 3), the results with their figures (section 4), findings in plain sentences (section "
                "5) and the sizing that follows from the measurements (section 6)."
            ),
            Text(
                "Appendix A lists every criterion that did not pass with its evidence, appendix B the run "
                "folders and the SHA-256 of every file the numbers come from, appendix C the terms used. Times "
                "are lab seconds: on a simulated lab the clock runs faster than the wall clock, and every "
                "duration is given as the lab measured it."
            ),
        ],
    )


def build(inputs: Inputs, *, customer: str | None = None, date: str | None = None) -> Document:
    """The document for ``inputs`` (``date``: ISO date; default today, UTC)."""
    when = date or dt.datetime.now(dt.UTC).date().isoformat()
    v = verdict(inputs)
    ctx = Context(inputs, v)
    parts, unowned = _parts(inputs)
    results = [s for k, cells in parts if (s := k.results(ctx, cells)) is not None]
    if unowned:
        results.append(other.results(unowned))
    findings_by_kind = [(k, k.findings(ctx, cells)) for k, cells in parts]
    findings = [f for _, fs in findings_by_kind for f in fs]
    sizing = [s for k, cells in parts for s in k.sizing(ctx, cells)]
    lab = inputs.lab()
    name = str(lab.data.get("name")) if lab is not None else "lab"
    plans = [k.title for k, _ in parts] + (["other scenarios"] if unowned else [])
    sections = [
        _intro(inputs, customer),
        configuration.section(inputs),
        method.section(ctx, parts, unowned),
        Section(
            "Results", [Text("One section per kind of test; each ends with its criteria verdicts.")], results
        ),
        Section(
            "Findings",
            [
                Text(
                    "Generated from the results: each sentence states a measured number and where it was measured."
                    if findings
                    else "None generated: no kind of test in these runs states findings of its own; section 4 "
                    "lists what was recorded and how each criterion was judged."
                )
            ],
            [Section(k.title, [Bullets(tuple(fs))]) for k, fs in findings_by_kind if fs],
        ),
        Section(
            "Sizing",
            [
                Text(
                    "The reference papers' sizing arithmetic (labctl size), applied to the measured figures of the "
                    "cells that passed. Each calculation shows its formula and then the numbers. What must be "
                    "provisioned rounds up; what must fit rounds down."
                )
            ]
            if sizing
            else [Text("No kind of test in these runs gives figures to size from.")],
            sizing,
        ),
    ]
    return Document(
        title=f"Performance certification: {name}",
        subtitle=", ".join(plans) if plans else "no test measured",
        date=when,
        customer=customer,
        verdict=v,
        summary=_summary(ctx, parts, findings),
        sections=sections,
        appendices=[
            appendix.verdicts_section(inputs),
            appendix.traceability_section(inputs),
            appendix.glossary_section(
                vdi=any(c.is_vdi for c in inputs.cells), streaming=any(not c.is_vdi for c in inputs.cells)
            ),
        ],
        simulated=inputs.simulated,
        runs=tuple(r.run_id for r in inputs.runs),
    )


@dataclass(frozen=True)
class Written:
    html: Path
    pdf: Path | None
    status: Status
    headline: str


def certify(
    runs: Sequence[Path], out: Path, *, customer: str | None = None, date: str | None = None, pdf: bool = True
) -> Written:
    """Write ``certification.html`` (and ``certification.pdf``) for ``runs`` into ``out``."""
    doc = build(load_runs(runs), customer=customer, date=date)
    text = render(doc)
    out.mkdir(parents=True, exist_ok=True)
    html_path = out / HTML_FILE
    tmp = html_path.with_name(html_path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(html_path)
    pdf_path = None
    if pdf:
        pdf_path = write_pdf(text, out / PDF_FILE)
    return Written(html_path, pdf_path, doc.verdict.status, doc.verdict.headline)
