"""Standalone vs HA in the certification (the 2007 paper's "High Availability Observations"): every
cell measured in both configurations side by side, from :mod:`labctl.report.ha_comparison` (its
table and its figures). It owns no cell: the boot-storm and copy/reboot sections show each cell;
this one compares them.
"""

from __future__ import annotations

from collections.abc import Sequence

from labctl.report import ha_comparison
from labctl.report.certify.common import num
from labctl.report.certify.figures import figure
from labctl.report.certify.model import Block, Cell, Section, Table, Text
from labctl.report.certify.registry import Context, Kind, register
from labctl.report.run_view import CellView, copy_path_label

PAIRS = (
    ("retries_mean", "session retries per client, mean"),
    ("disk_queue_mean", "write-cache queue, requests, mean"),
    ("boot_time_mean_s", "boot time, s, mean"),
)


def row_label(key: str) -> str:
    """``boot storm 50`` -> ``Boot storm, 50 clients``; ``copy/reboot 50x50 local_to_share`` ->
    ``Copy/reboot 50/50 local → share``."""
    words = key.split()
    if words[:2] == ["boot", "storm"] and len(words) > 2:
        return f"Boot storm, {words[2]} clients"
    if words and words[0] == "copy/reboot" and len(words) > 2:
        return f"Copy/reboot {words[1].replace('x', '/')} {copy_path_label(words[2])}"
    return key[:1].upper() + key[1:]


def _pair(row: ha_comparison.HaRow, field: str) -> tuple[str, str]:
    return num(row.standalone[field]), num(row.ha[field])


class HaComparison(Kind):
    key = "ha_comparison"
    title = "Standalone vs HA"

    def select(self, cells: Sequence[CellView]) -> list[CellView]:
        table = ha_comparison.comparison(c.summary for c in cells)
        compared = {side.cell for r in table.rows for side in (r.standalone, r.ha)}
        return [c for c in cells if c.id in compared]

    def owns(self, c: CellView) -> bool:
        return False

    def results(self, ctx: Context, cells: Sequence[CellView]) -> Section | None:
        table = ha_comparison.comparison(c.summary for c in cells)
        if not table.rows:
            return None
        head = ["cell"] + [f"{what}: {cfg}" for _, what in PAIRS for cfg in ("standalone", "HA")]
        rows: list[list[str | Cell]] = []
        for r in table.rows:
            row: list[str | Cell] = [row_label(r.cell)]
            for field, _ in PAIRS:
                a, b = _pair(r, field)
                row += [Cell(a, num=True), Cell(b, num=True)]
            rows.append(row)
        blocks: list[Block] = [
            Text(
                "The HA configuration moves the vDisks and the write caches from the streaming server's own "
                "4-disk RAID 10 to the NAS's 8-disk RAID 10 and adds a second streaming server. Every cell "
                "measured in both configurations, side by side; cells that broke off are left out."
            ),
            Table.of("Standalone vs HA, cell by cell", head, rows),
        ]
        for s in ha_comparison.sections(cells):
            blocks += [figure(f) for f in s.figures]
        return Section(self.title, blocks)

    def findings(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out = []
        for r in ha_comparison.comparison(c.summary for c in cells).rows:
            parts = []
            for field, what in PAIRS[:2]:
                a, b = r.standalone[field], r.ha[field]
                if a is None or b is None:
                    continue
                name = what.split(",")[0]
                if num(a) == num(b) or abs(a - b) < 0.05 * max(abs(a), abs(b)):
                    parts.append(f"{name} about the same ({num(a)} and {num(b)})")
                else:
                    parts.append(
                        f"{name} {'lower' if b < a else 'higher'} with HA ({num(b)} against {num(a)})"
                    )
            if parts:
                out.append(f"{row_label(r.cell)}: " + "; ".join(parts) + ".")
        return out


register(HaComparison())
