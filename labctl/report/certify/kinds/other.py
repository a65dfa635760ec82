"""Cells no kind owns (a scenario this version of the document has no section for): listed with
their outcome, reason and criteria, so that nothing measured is left out of the document, and
judged in the verdict like every other cell."""

from __future__ import annotations

from collections.abc import Sequence

from labctl.report.certify.common import OUTCOME_WORD, criteria_table, outcome_cell, verdict_matrix, words
from labctl.report.certify.model import Block, Cell, Section, Table, Text
from labctl.report.run_view import CellView


def _params(c: CellView) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.summary.parameters.items())) or "-"


def method(cells: Sequence[CellView]) -> list[Block]:
    scenarios = sorted({c.summary.scenario for c in cells})
    blocks: list[Block] = [
        Text(
            f"Cells of {'scenarios' if len(scenarios) > 1 else 'scenario'} {', '.join(scenarios)}: this "
            "document has no section of its own for them; their results, criteria and verdicts are listed as "
            "recorded."
        )
    ]
    for scenario in scenarios:
        table = criteria_table(
            [c for c in cells if c.summary.scenario == scenario], f"Acceptance criteria of {scenario}"
        )
        if table is not None:
            blocks.append(table)
    return blocks


def results(cells: Sequence[CellView]) -> Section:
    rows: list[list[str | Cell]] = [
        [
            c.id,
            c.summary.scenario,
            c.configuration or "-",
            _params(c),
            outcome_cell(c.outcome, OUTCOME_WORD[c.outcome] + (" (killed)" if c.provisional else "")),
            words(c.reason or "-"),
        ]
        for c in cells
    ]
    blocks: list[Block] = [
        Table.of(
            "Cells of other scenarios",
            ("cell", "scenario", "configuration", "parameters", "outcome", "reason"),
            rows,
        )
    ]
    matrix = verdict_matrix(
        cells, lambda c: c.id, "Criteria per cell: the judged value and its outcome", "cell"
    )
    if matrix is not None:
        blocks.append(matrix)
    return Section("Other cells", blocks)
