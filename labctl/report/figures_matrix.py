"""The copy/reboot matrix's figures (2007 paper, figures 9 to 14): for each copiers/rebooters
split, the four copy paths side by side: the rebooting clients' boot time and retries as grouped
bars, the copy durations as boxes, and each server's CPU, used memory, NIC and write-cache queue
over time with one line per copy path. One set per configuration.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from labctl.report import charts
from labctl.report.charts import Bars, Boxes
from labctl.report.counters import servers
from labctl.report.figures_storm import by_configuration
from labctl.report.run_view import CellView, copy_path_label, path_order
from labctl.report.timelines import Fig, Section, counter_figs, fig

# one colour per copy path, the same in every chart of the page
PATH_COLORS = {
    "local_to_local": "#1f77b4",
    "local_to_share": "#ff7f0e",
    "share_to_local": "#2ca02c",
    "share_to_share": "#d62728",
}
OTHER_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def path_color(path: str, i: int = 0) -> str:
    return PATH_COLORS.get(path, OTHER_COLORS[i % len(OTHER_COLORS)])


def matrix_cells(cells: Sequence[CellView]) -> list[CellView]:
    return [c for c in cells if c.is_matrix]


def _split_text(split: tuple[int, int]) -> str:
    return f"{split[0]} copy /\n{split[1]} reboot"


def _grid(
    cells: Sequence[CellView],
) -> tuple[list[tuple[int, int]], list[str], dict[tuple[tuple[int, int], str], CellView]]:
    splits = sorted({c.split for c in cells})
    paths = sorted({c.copy_path or "copy" for c in cells}, key=path_order)
    at = {(c.split, c.copy_path or "copy"): c for c in cells}
    return splits, paths, at


def _bars(cells: Sequence[CellView], field: str, role: str) -> tuple[list[str], list[Bars]]:
    splits, paths, at = _grid(cells)
    bars = []
    for i, path in enumerate(paths):
        means: list[float | None] = []
        lo: list[float | None] = []
        hi: list[float | None] = []
        partial = []
        for split in splits:
            c = at.get((split, path))
            vals = c.summary.values(field, role) if c is not None else []
            means.append(statistics.fmean(vals) if vals else None)
            lo.append(min(vals) if vals else None)
            hi.append(max(vals) if vals else None)
            partial.append(c is not None and not c.whole)
        bars.append(Bars(copy_path_label(path), means, lo, hi, path_color(path, i), partial))
    return [_split_text(s) for s in splits], bars


def _boxes(cells: Sequence[CellView]) -> tuple[list[str], list[Boxes]]:
    splits, paths, at = _grid(cells)
    boxes = []
    for i, path in enumerate(paths):
        data = []
        partial = []
        for split in splits:
            c = at.get((split, path))
            data.append(c.summary.values("copy_s", "copier") if c is not None else [])
            partial.append(c is not None and not c.whole)
        boxes.append(Boxes(copy_path_label(path), data, path_color(path, i), partial))
    return [_split_text(s) for s in splits], boxes


def experience_figs(cells: Sequence[CellView]) -> list[Fig]:
    """The client-experience charts of one configuration's matrix (boot time, retries, copy time)."""
    hatch = " Hatched: a cell that did not measure a whole window (see the table)."
    whisk = " Bars: the mean per client; whiskers from the fastest to the slowest client."
    out = []
    for field, role, title, ylabel, what in (
        ("boot_time_s", "rebooter", "Rebooting clients: boot time", "boot time (s)", "figure 9"),
        ("retries", "rebooter", "Rebooting clients: session retries", "retries per client", "figure 10"),
        ("retries", "copier", "Copying clients: session retries", "retries per client", ""),
    ):
        groups, bars = _bars(cells, field, role)
        if role == "copier" and not any(v for b in bars for v in b.values):
            continue  # copiers' retries not read in this run
        partial = any(p for b in bars for p in (b.partial or []))
        caption = (
            f"{title.split(':')[0]}, for each copiers/rebooters split the four copy paths side by side"
            + (f" ({what} of the 2007 paper)." if what else ".")
            + whisk
            + (hatch if partial else "")
        )
        out.append(
            fig(
                charts.grouped_bars(
                    title, groups, bars, xlabel="copiers / rebooters", ylabel=ylabel, legend_title="copy path"
                ),
                caption,
            )
        )
    groups, boxes = _boxes(cells)
    if any(len(d) for b in boxes for d in b.data):
        out.append(
            fig(
                charts.grouped_boxes(
                    "Copying clients: 512 MB copy time",
                    groups,
                    boxes,
                    xlabel="copiers / rebooters",
                    ylabel="copy time (s)",
                    legend_title="copy path",
                ),
                "Copy time of every copier, per split and copy path: the box spans the middle half of the "
                "copiers with the median inside, the whiskers reach to 1.5 x that span, dots beyond are single "
                "copiers.",
            )
        )
    return out


def sections(cells: Sequence[CellView]) -> list[Section]:
    matrix = matrix_cells(cells)
    if not matrix:
        return []
    by_cfg = by_configuration(matrix)
    several = len(by_cfg) > 1
    out = []
    for cfg, group in by_cfg.items():
        suffix = f" ({cfg})" if several or cfg != "lab" else ""
        out.append(
            Section(
                f"Copy/reboot matrix{suffix}: client experience",
                "All clients booted and the storm passed; then one group copies a 512 MB file along a copy "
                "path while the other group reboots.",
                experience_figs(group),
            )
        )
        by_split: dict[tuple[int, int], list[CellView]] = defaultdict(list)
        for c in group:
            by_split[c.split].append(c)
        for _, split_cells in sorted(by_split.items()):
            out += split_sections(split_cells, suffix)
    return out


def split_sections(split_cells: Sequence[CellView], suffix: str = "") -> list[Section]:
    """Each server's counters over time for the cells of one copiers/rebooters split, one line per
    copy path (``suffix`` names the configuration in the titles)."""
    cells = sorted(split_cells, key=lambda c: path_order(c.copy_path or ""))
    if not cells:
        return []
    split = cells[0].split
    labelled = [(copy_path_label(c.copy_path or "copy"), c) for c in cells]
    colors = [path_color(c.copy_path or "", i) for i, c in enumerate(cells)]
    return [
        Section(
            f"Copy/reboot {split[0]} copy / {split[1]} reboot{suffix}: {server.title}",
            "One line per copy path (figures 11 to 14); time zero is the start of the copies "
            "and reboots, and each line ends with its cell's window.",
            counter_figs(
                server.name,
                labelled,
                legend_title="copy path",
                xlabel="seconds since copies and reboots started",
                caption_tail=f"; {split[0]} copiers, {split[1]} rebooters.",
                colors=colors,
            ),
            level=3,
        )
        for server in servers(cells)
    ]
