"""The VDI storms' logon waterfall in the certification (issue 24): per cell, the phases of a logon
with their count, p50, p95 and longest, the phases the mechanism cannot measure in words ("not
measured by rdp: ..."), and the figures page's two waterfall charts (against concurrency, on the
storm's timeline). The numbers are :mod:`labctl.report.waterfall`'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from labctl.report import figures_vdi_waterfall as charts
from labctl.report.certify.common import num
from labctl.report.certify.figures import figure
from labctl.report.certify.model import Block, Cell, Section, Table, Text
from labctl.report.run_view import CellView
from labctl.report.waterfall import TOTAL, Waterfall, sentence, words


def phase_table(label: str, w: Waterfall) -> Table:
    rows: list[list[str | Cell]] = []
    for p in w.phases:
        name = words(p.name)
        if p.measured:
            figures = [Cell(num(v, 2), num=True) for v in (p.p50_s, p.p95_s, p.max_s)]
            rows.append([name, Cell(str(p.n), num=True), *figures, ""])
        else:  # said in words, never a blank or a zero
            rows.append([name, *(Cell("-", num=True) for _ in range(4)), p.unmeasured])
    return Table.of(
        f"Logon waterfall of {label}",
        ("phase", "logons", "p50, s", "p95, s", "longest, s", "not measured: by whom and why"),
        rows,
        note="Each session's logon from its launch to its first workload operation, phase by phase, as its "
        "launcher timed it; unaccounted is the time no measured phase covers. A phase the mechanism cannot "
        "time is named with the launchers' reason instead of a figure.",
    )


def sections(cells: Sequence[CellView], label: Callable[[CellView], str]) -> list[Section]:
    """One section per cell whose launchers timed its logons (none for the others)."""
    out = []
    for c in cells:
        w = charts.of(c)
        if w is None:
            continue
        blocks: list[Block] = []
        said = sentence(label(c), w)
        if said:
            blocks.append(Text(said))
        blocks.append(phase_table(label(c), w))
        total = w.phase(TOTAL)
        if total is not None and total.measured:
            blocks += [
                figure(f)
                for f in (charts.by_concurrency(c, w, wide=False), charts.on_timeline(c, w, wide=False))
                if f is not None
            ]
        out.append(Section(f"Logon waterfall: {label(c)}", blocks))
    return out
