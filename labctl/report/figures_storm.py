"""The boot storm's figures (2007 paper, figures 3 to 8): boot time and retries against the group
size, and each server's CPU, used memory, NIC and disk queue over time, one line per group size.
With more than one configuration (standalone and HA) the "against group size" charts get a line
per configuration and each configuration's servers get their own over-time charts.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from labctl.report import charts
from labctl.report.charts import Line
from labctl.report.counters import servers
from labctl.report.run_view import CellView
from labctl.report.timelines import Section, counter_figs, fig

CONFIG_COLORS = ("#1f4e79", "#c0504d", "#4f8a3c", "#8064a2")


def _clients(n: int) -> str:
    return "1 client" if n == 1 else f"{n} clients"


def storm_cells(cells: Sequence[CellView]) -> list[CellView]:
    return [c for c in cells if not c.is_matrix and c.group_size is not None]


def by_configuration(cells: Sequence[CellView]) -> dict[str, list[CellView]]:
    out: dict[str, list[CellView]] = defaultdict(list)
    for c in cells:
        out[c.configuration or "lab"].append(c)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != "standalone", kv[0])))


def _versus(by_cfg: dict[str, list[CellView]], field: str) -> list[Line]:
    lines = []
    for i, (cfg, cells) in enumerate(by_cfg.items()):
        pts = []
        for c in sorted(cells, key=lambda c: c.group_size or 0):
            vals = c.summary.values(field, c.judged_role)
            if vals:
                pts.append((c.group_size, statistics.fmean(vals), min(vals), max(vals), not c.whole))
        if pts:
            lines.append(
                Line(
                    cfg if len(by_cfg) > 1 else "",
                    [p[0] for p in pts],  # type: ignore[misc]
                    [p[1] for p in pts],
                    CONFIG_COLORS[i % len(CONFIG_COLORS)],
                    lo=[p[2] for p in pts],
                    hi=[p[3] for p in pts],
                    hollow=[p[4] for p in pts],
                )
            )
    return lines


def sections(cells: Sequence[CellView]) -> list[Section]:
    storm = storm_cells(cells)
    if not storm:
        return []
    by_cfg = by_configuration(storm)
    several = len(by_cfg) > 1
    figs = []
    for field, title, ylabel, what in (
        ("boot_time_s", "Client boot time", "boot time (s)", "boot time"),
        ("retries", "Client session retries", "retries per client", "retries"),
    ):
        caption = (
            f"Mean {what} per client (as the streaming server reports it) against the number of clients "
            "woken at once; the shaded band runs from the fastest to the slowest client."
        )
        if several:
            caption += " One line per configuration."
        lines = _versus(by_cfg, field)
        if any(ln.hollow and any(ln.hollow) for ln in lines):
            caption += " A hollow point is a cell that did not measure a whole window (see the table)."
        figure = charts.versus(title, lines, xlabel="clients woken at once", ylabel=ylabel, categorical=True)
        figs.append(fig(figure, caption))
    out = [
        Section(
            "Boot storm: client experience",
            "Boot time and session retries of every client of the group (2007 paper, figures 3 and 4).",
            figs,
        )
    ]
    for cfg, group in by_cfg.items():
        group.sort(key=lambda c: c.group_size or 0)
        labelled = [(_clients(c.group_size or 0), c) for c in group]
        for server in servers(group):
            out.append(
                Section(
                    f"Boot storm: {server.title}" + (f", {cfg}" if several or cfg != "lab" else ""),
                    "CPU, used memory, outbound NIC and disk queue over time, one line per group size "
                    "(figures 5 to 8); time zero is the wake, and the lines start 30 s before it to show "
                    "the idle baseline and end with each cell's window.",
                    counter_figs(
                        server.name,
                        labelled,
                        legend_title="group size",
                        xlabel="seconds since the group was woken",
                        caption_tail=".",
                    ),
                )
            )
    return out
