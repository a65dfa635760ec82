"""Server counters over time, one line per cell (per group size, per copy path), from
``series.csv``: time zero at each cell's storm start, up to the end of the window its numbers
were taken over. A line never bridges a gap (no sample for more than twice the interval the
source promised); the gap is shaded. A cell that did not measure a whole window is dashed and
says so in the legend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from labctl.records.run_record import Outcome
from labctl.records.stats import GAP_FACTOR, silences
from labctl.report import charts
from labctl.report.charts import Line
from labctl.report.counters import COUNTERS, Counter, Picked, pick
from labctl.report.run_view import CellView, kept_interval

PRE_STORM_S = 30.0  # how much of the idle baseline before time zero the charts show
MARK = {
    Outcome.INTERRUPTED: "interrupted",
    Outcome.ERROR: "broke off",
    Outcome.NO_DATA: "no data",
    Outcome.LAB_FAULT: "lab fault",
}


@dataclass
class Fig:
    svg: str
    caption: str
    title: str = ""
    wide: bool = False  # across the page (many groups side by side)


@dataclass
class Section:
    title: str
    intro: str
    figures: list[Fig]
    level: int = 2  # h2 or h3


def fig(figure: object, caption: str, *, wide: bool = False) -> Fig:
    title = ""
    axes = getattr(figure, "axes", [])
    if axes:
        title = axes[0].get_title(loc="left")
    return Fig(charts.svg(figure), caption, title, wide)  # type: ignore[arg-type]


def mark(cell: CellView) -> str:
    """`` (interrupted)`` for a cell whose lines or bars are not a whole window, else ``""``."""
    if cell.provisional:
        return " (killed)"
    word = MARK.get(cell.outcome)
    return f" ({word})" if word else ""


def _gap_spans(
    cell: CellView, picked: Picked, lo: float, hi: float
) -> tuple[float | None, list[tuple[float, float]]]:
    """The longest step a line may take and the gaps of the series inside the plotted span."""
    s = cell.find(picked.entity, picked.metric)
    if s is None:
        return None, []
    m = cell.metric(picked.entity, picked.metric)
    interval = m.expected_interval_s if m is not None and m.expected_interval_s else None
    if interval is None:
        interval = kept_interval(s)  # no promise recorded (format 1, a killed cell)
    if interval is None:
        return None, []
    first = next((t for t in s.ts if t >= lo), None)
    if first is None:
        return GAP_FACTOR * interval, []
    # from the window's start when the series began late in it (a leading gap), else its first sample
    window = cell.summary.window
    start = first if window is None else min(first, window.start_ts_s)
    gaps = [(g.start_ts, g.end_ts) for g in silences(s, interval, (start, hi))]
    return GAP_FACTOR * interval, gaps


def lines_for(
    picked: Picked, labelled: Sequence[tuple[str, CellView]], colors: Sequence[str]
) -> tuple[list[Line], list[str]]:
    """One line per labelled cell, and a caption note per gap."""
    lines: list[Line] = []
    notes: list[str] = []
    for (label, cell), color in zip(labelled, colors, strict=True):
        s = cell.find(picked.entity, picked.metric)
        t0 = cell.t0
        if s is None or t0 is None:
            continue
        lo = t0 - PRE_STORM_S
        hi = cell.window_end if cell.window_end is not None else s.ts[-1]
        pts = [(t - t0, v * picked.factor) for t, v in zip(s.ts, s.values, strict=True) if lo <= t <= hi]
        if not pts:
            continue
        step, gaps = _gap_spans(cell, picked, lo, hi)
        rel = [(a - t0, b - t0) for a, b in gaps]
        if rel:
            a, b = max(rel, key=lambda g: g[1] - g[0])
            many = (
                f"{len(rel)} gaps, {sum(y - x for x, y in rel):.0f} s in all, the longest"
                if len(rel) > 1
                else ""
            )
            notes.append(f"{label}: {many or 'one gap'} from {a:.0f} to {b:.0f} s")
        lines.append(
            Line(
                label + mark(cell),
                [p[0] for p in pts],
                [p[1] for p in pts],
                color,
                dashed=cell.interrupted,
                max_step=step,
                gaps=rel,
            )
        )
    return lines, notes


# Statistics a sample can be held to: every sample (peak, max) or nearly every one (a percentile).
# A limit on the window's mean (or last sample) is not a limit on each sample: drawn across the
# samples it would mark a healthy storm's peaks as violations, so it is said in the caption instead.
PER_SAMPLE = ("peak", "max")


def _per_sample(statistic: str) -> bool:
    return statistic in PER_SAMPLE or (statistic.startswith("p") and statistic[1:].isdigit())


def limits(cells: Sequence[CellView], picked: Picked | None) -> list[tuple[float, str, str]]:
    """Pass limits of the criteria that judged the plotted series (from the cells' verdicts) and
    hold each sample (peak, a percentile), so the chart shows the band the cells were held to
    (e.g. 2 x spindles for the disk queue). Limits on a mean are in :func:`mean_limits`."""
    if picked is None or picked.factor != 1.0:
        return []
    found: dict[float, tuple[str, str]] = {}
    for c in cells:
        for r in c.verdict.criteria if c.verdict is not None else []:
            if not _per_sample(r.statistic):
                continue
            if not any(x.metric == picked.metric and x.entity == picked.entity for x in r.series):
                continue
            band = r.pass_band
            if band is not None and band.max is not None:
                expr = f" = {band.max_expr}" if band.max_expr else ""
                text = f"{r.name}: {r.statistic} <= {band.max:g}{expr}"
                found.setdefault(float(band.max), (f"pass <= {band.max:g} ({r.statistic})", text))
    return [(v, short, long) for v, (short, long) in sorted(found.items())[:3]]


def mean_limits(cells: Sequence[CellView], picked: Picked | None) -> list[str]:
    """The criteria on the plotted series that judge a whole-window statistic (mean, last), in
    words with the values judged: ``write-cache disk queue: the window's mean <= 8 (1.2 to 7.9)``."""
    if picked is None or picked.factor != 1.0:
        return []
    found: dict[str, tuple[str, list[float]]] = {}
    for c in cells:
        for r in c.verdict.criteria if c.verdict is not None else []:
            if _per_sample(r.statistic) or r.pass_band is None or r.pass_band.max is None:
                continue
            if not any(x.metric == picked.metric and x.entity == picked.entity for x in r.series):
                continue
            expr = f" = {r.pass_band.max_expr}" if r.pass_band.max_expr else ""
            key = f"{r.name}: the window's {r.statistic} <= {r.pass_band.max:g}{expr}"
            found.setdefault(key, (key, []))[1].extend([r.observed] if r.observed is not None else [])
    out = []
    for key, (_, values) in found.items():
        if values:
            lo, hi = min(values), max(values)
            span = f"{lo:.2g}" if lo == hi else f"{lo:.2g} to {hi:.2g}"
            key += f" ({'judged' if lo == hi else 'the cells judged'} {span})"
        out.append(key)
    return out[:3]


def counter_fig(
    counter: Counter,
    server: str,
    labelled: Sequence[tuple[str, CellView]],
    *,
    legend_title: str,
    xlabel: str,
    caption_tail: str = "",
    colors: Sequence[str] | None = None,
    title_prefix: str = "",
) -> Fig:
    """One chart of ``counter`` on ``server``, one line per labelled cell."""
    cells = [c for _, c in labelled]
    picked = pick(counter, server, cells)
    palette = list(colors) if colors is not None else charts.colors(len(labelled))
    lines, gap_notes = lines_for(picked, labelled, palette) if picked is not None else ([], [])
    lim = limits(cells, picked)
    unit = picked.unit if picked is not None else counter.unit
    figure = charts.over_time(
        f"{title_prefix}{counter.title}",
        lines,
        ylabel=unit,
        legend_title=legend_title,
        xlabel=xlabel,
        ymax=picked.ymax if picked is not None else counter.ymax,
        limits=[(v, short) for v, short, _ in lim],
    )
    if picked is None:
        return fig(figure, f"{counter.title} of {server}: not recorded in this run.")
    caption = f"{counter.title} of {picked.note}, {unit}{caption_tail}"
    if lim:
        caption += " Dotted: the pass limit of " + "; ".join(long for _, _, long in lim) + "."
    on_mean = mean_limits(cells, picked)
    if on_mean:
        caption += (
            " Not drawn, as it holds the window's average and not each sample: " + "; ".join(on_mean) + "."
        )
    if any(ln.dashed for ln in lines):
        caption += " Dashed: a cell that did not finish its window (it shows what was measured)."
    if gap_notes:
        shown = "; ".join(gap_notes)
        where = "bars under the chart" if sum(1 for ln in lines if ln.gaps) > 1 else "shaded"
        caption += f" Gaps ({where}): no sample for more than {GAP_FACTOR:g} x the sample interval: {shown}."
    return fig(figure, caption)


def counter_figs(server: str, labelled: Sequence[tuple[str, CellView]], **options: Any) -> list[Fig]:
    """The four server counters (CPU, used memory, NIC, disk queue) over time: :func:`counter_fig`
    of each, with the same ``options``."""
    return [counter_fig(c, server, labelled, **options) for c in COUNTERS]
