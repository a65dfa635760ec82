"""Charts in the style of the papers, drawn with matplotlib (Agg: no display needed).

Used by the figures page and by the Allure helpers (a failed criterion's evidence chart).
Every function returns a :class:`matplotlib.figure.Figure`; :func:`svg` / :func:`png` turn one
into bytes with no external references (no fonts or images fetched, no metadata dates).
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure
from matplotlib.patches import Patch, PathPatch

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from labctl.records.run_record import CriterionVerdict
    from labctl.records.series import Series

WIDTH_IN = 6.4
HEIGHT_IN = 3.4
DPI = 110

OK = "#2e7d32"
MARGINAL = "#ef6c00"
BAD = "#c62828"

matplotlib.rcParams.update(
    {
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.titleweight": "bold",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "legend.fontsize": 8,
        "legend.frameon": False,
        "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
        "svg.hashsalt": "labctl",  # stable ids: the same data gives the same file
    }
)


def new_figure(width: float = WIDTH_IN, height: float = HEIGHT_IN) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def svg(fig: Figure) -> str:
    """The figure as an inline SVG element (no XML prolog, no metadata), its ids its own: many
    charts share one page, and matplotlib's ids (clip paths, hatch patterns) repeat across
    figures, so a chart could take another's hatch or clip."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    token = "f" + hashlib.sha256(text.encode()).hexdigest()[:8]  # the same figure, the same ids
    text = re.sub(r'\bid="([^"]+)"', rf'id="{token}-\1"', text)
    return re.sub(r"(url\(#|href=\"#)([^)\"]+)", rf"\g<1>{token}-\2", text)


def png(fig: Figure, dpi: int = DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def colors(n: int) -> list[str]:
    """``n`` colours in order of a sequential map (small groups light, big groups dark)."""
    cmap = matplotlib.colormaps["viridis"]
    if n <= 1:
        return [matplotlib.colors.to_hex(cmap(0.35))]
    # 0.8 .. 0.05: the light end of viridis (yellow) is hard to see on white
    return [matplotlib.colors.to_hex(cmap(0.8 - 0.75 * i / (n - 1))) for i in range(n)]


@dataclass(frozen=True)
class Line:
    label: str
    x: Sequence[float]
    y: Sequence[float]
    color: str | None = None
    lo: Sequence[float] | None = None  # optional range (min..max) around y
    hi: Sequence[float] | None = None
    dashed: bool = False  # a cell that did not measure a whole window (interrupted, killed)
    max_step: float | None = None  # over time: no line between samples further apart than this
    gaps: Sequence[tuple[float, float]] = ()  # over time: spans without samples, shaded
    hollow: Sequence[bool] | None = None  # versus: points of cells not fully measured


GAP_COLOR = "#9e9e9e"


def _segments(
    x: Sequence[float], y: Sequence[float], max_step: float | None
) -> list[tuple[list[float], list[float]]]:
    """The runs of samples no further apart than ``max_step``: a line never bridges a gap."""
    out: list[tuple[list[float], list[float]]] = []
    xs: list[float] = []
    ys: list[float] = []
    for xi, yi in zip(x, y, strict=True):
        if xs and max_step is not None and xi - xs[-1] > max_step:
            out.append((xs, ys))
            xs, ys = [], []
        xs.append(xi)
        ys.append(yi)
    if xs:
        out.append((xs, ys))
    return out


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data recorded", ha="center", va="center", transform=ax.transAxes, color="#777")


def _note(ax: Axes, note: str) -> None:
    """A small note in the lower left corner of the figure (where the data came from)."""
    if note:
        ax.annotate(
            note,
            (0, 0),
            xycoords="figure fraction",
            xytext=(4, 2),
            textcoords="offset points",
            fontsize=7,
            color="#666",
            va="bottom",
        )


def hatched(color: str, alpha: float = 0.3) -> tuple[Patch, Patch]:
    """A legend key for a hatched area: its tint and its hatch as two patches, drawn one over the
    other (in SVG a hatch drawn with a translucent face takes the face's opacity and vanishes)."""
    return (
        Patch(facecolor=matplotlib.colors.to_rgba(color, alpha), linewidth=0),
        Patch(facecolor="none", edgecolor=color, hatch="////", linewidth=0),
    )


def _idle_scale(ax: Axes, least: float = 1.0) -> None:
    """An axis of values that all stay near zero (an idle disk queue, no retries) runs to at least
    ``least``: autoscaled to 0.05 it would make noise look like load."""
    bottom, top = ax.get_ylim()
    if bottom >= 0 and top < least:
        ax.set_ylim(bottom=bottom, top=least)


def over_time(
    title: str,
    lines: Sequence[Line],
    *,
    ylabel: str,
    xlabel: str = "seconds since storm start",
    legend_title: str | None = None,
    ymin: float | None = 0.0,
    ymax: float | None = None,
    note: str = "",
    limits: Sequence[tuple[float, str]] = (),
) -> Figure:
    """Several series on one time axis (one line per group size, per copiers/rebooters ...).
    ``limits``: horizontal reference lines (value, label), e.g. a criterion's pass limit."""
    fig = new_figure()
    gapped = [ln for ln in lines if ln.gaps]
    strip: Axes | None = None
    if len(gapped) > 1:
        # several lines with gaps: one lane per line under the chart (shading them all over the
        # chart would hide the data under overlapping bands)
        grid = fig.add_gridspec(2, 1, height_ratios=[1.0, 0.06 + 0.05 * len(gapped)])
        ax = fig.add_subplot(grid[0])
        strip = fig.add_subplot(grid[1], sharex=ax)
    else:
        ax = fig.add_subplot()
    for ln in lines:
        # one artist per line: the segments joined by NaN, which matplotlib leaves undrawn
        xs: list[float] = []
        ys: list[float] = []
        lone_x: list[float] = []
        lone_y: list[float] = []
        for sx, sy in _segments(ln.x, ln.y, ln.max_step):
            if xs:
                xs.append(math.nan)
                ys.append(math.nan)
            xs += sx
            ys += sy
            if len(sx) == 1:  # a lone sample between two gaps stays visible
                lone_x += sx
                lone_y += sy
        (drawn,) = ax.plot(
            xs, ys, label=ln.label, color=ln.color, linewidth=1.4, linestyle=(0, (4, 2)) if ln.dashed else "-"
        )
        if lone_x:
            ax.plot(lone_x, lone_y, ".", color=drawn.get_color(), markersize=4)
    for value, label in limits:
        ax.axhline(value, color=BAD, linestyle=":", linewidth=1.2, label=label)
    handles: list[Any] = list(ax.get_legend_handles_labels()[0])
    labels = [str(h.get_label()) for h in handles]
    if strip is not None:
        for k, ln in enumerate(gapped):
            lane = len(gapped) - 1 - k  # first line on top, as in the legend
            strip.broken_barh(
                [(a, b - a) for a, b in ln.gaps], (lane + 0.15, 0.7), color=ln.color or GAP_COLOR
            )
        strip.set_ylim(0, len(gapped))
        strip.set_yticks([])
        strip.grid(False)
        strip.spines[["left"]].set_visible(False)
        strip.set_ylabel("gaps", rotation=0, ha="right", va="center", fontsize=7, color="#555")
        strip.set_xlabel(xlabel)
        ax.tick_params(labelbottom=False)
        handles.append(Patch(color=GAP_COLOR))
        labels.append("no samples: bars under the chart")
    elif gapped:
        ln = gapped[0]
        color = ln.color or GAP_COLOR
        face = matplotlib.colors.to_rgba(color, 0.12)
        hatch_color = matplotlib.colors.to_rgba(color, 0.55)  # the hatch: visible for light colours too
        for a, b in ln.gaps:
            # the tint and the hatch apart: in SVG a hatched fill takes the face's opacity whole
            ax.axvspan(a, b, facecolor=face, linewidth=0, zorder=0)
            ax.axvspan(a, b, facecolor="none", edgecolor=hatch_color, hatch="//", linewidth=0, zorder=0)
        handles.append(
            (
                Patch(facecolor=face, linewidth=0),
                Patch(facecolor="none", edgecolor=hatch_color, hatch="//", linewidth=0),
            )
        )
        labels.append("no samples (gap)")
    ax.set_title(title, loc="left")
    if strip is None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ymin is not None or ymax is not None:
        ax.set_ylim(bottom=ymin, top=ymax)
    _idle_scale(ax)
    if lines:
        # outside the axes: a storm's plateau fills the upper right where a legend would sit
        ax.legend(
            handles,
            labels,
            title=legend_title,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            ncols=1 if len(handles) <= 12 else 2,
        )
    else:
        _no_data(ax)
    _note(ax, note)
    return fig


def versus(
    title: str,
    lines: Sequence[Line],
    *,
    xlabel: str,
    ylabel: str,
    categorical: bool = False,
    ymin: float | None = 0.0,
    note: str = "",
) -> Figure:
    """A value against group size (boot time vs group size), with min..max as a shaded range."""
    fig = new_figure()
    ax = fig.add_subplot()
    cats: list[object] = []
    if categorical:
        for ln in lines:
            for x in ln.x:
                if x not in cats:
                    cats.append(x)
        if all(isinstance(c, int | float) for c in cats):
            cats.sort(key=lambda c: float(c))  # type: ignore[arg-type]
    any_hollow = False
    for ln in lines:
        xs: Sequence[float] | list[int] = [cats.index(x) for x in ln.x] if categorical else ln.x
        ax.plot(xs, ln.y, marker="o", label=ln.label or None, color=ln.color, linewidth=1.6)
        if ln.hollow is not None and any(ln.hollow):
            hx = [x for x, h in zip(xs, ln.hollow, strict=True) if h]
            hy = [y for y, h in zip(ln.y, ln.hollow, strict=True) if h]
            ax.plot(hx, hy, "o", color=ln.color, markerfacecolor="white", markersize=7, zorder=3)
            any_hollow = True
        if ln.lo is not None and ln.hi is not None:
            ax.fill_between(xs, ln.lo, ln.hi, color=ln.color, alpha=0.15, linewidth=0)
        for x, y in zip(xs, ln.y, strict=True):
            if len(lines) == 1 and y is not None and math.isfinite(y):  # several lines: labels collide
                ax.annotate(
                    _short(y), (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
                )
    if categorical:
        ax.set_xticks(range(len(cats)), [_short(c) if isinstance(c, int | float) else str(c) for c in cats])
        ax.set_xlim(-0.5, len(cats) - 0.5)
    elif lines:
        ticks = sorted({float(x) for ln in lines for x in ln.x})
        ax.set_xticks(ticks, [_short(t) for t in ticks])
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ymin is not None:
        ax.set_ylim(bottom=ymin)
    _idle_scale(ax)
    if any_hollow:
        ax.plot([], [], "o", color="#555", markerfacecolor="white", label="cell not fully measured")
    if any(ln.label for ln in lines) or any_hollow:
        ax.legend(loc="upper left")
    if not lines:
        _no_data(ax)
    _note(ax, note)
    return fig


@dataclass(frozen=True)
class Bars:
    """One bar per group (a copy path across the splits; a configuration across the cells)."""

    label: str
    values: Sequence[float | None]  # None: not measured
    lo: Sequence[float | None] | None = None  # whisker from .. to (e.g. fastest .. slowest client)
    hi: Sequence[float | None] | None = None
    color: str | None = None
    partial: Sequence[bool] | None = None  # hatched: from a cell not fully measured


def _value_text(v: float) -> str:
    if v == int(v) or abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}"


def grouped_bars(
    title: str,
    groups: Sequence[str],
    bars: Sequence[Bars],
    *,
    xlabel: str,
    ylabel: str,
    legend_title: str | None = None,
    note: str = "",
    labels: bool = True,
    width_in: float = WIDTH_IN,
) -> Figure:
    """Bars side by side in each group (the paper's figures 9 and 10), min..max as whiskers,
    each bar's value above it; a bar from a cell not fully measured is hatched. ``width_in``:
    a wider figure for many groups."""
    fig = new_figure(width=width_in)
    ax = fig.add_subplot()
    n = max(len(bars), 1)
    width = 0.8 / n if len(groups) > 2 else min(0.8 / n, 0.22)  # one group's two bars stay bars, not slabs
    crowded = n * len(groups) / (width_in / WIDTH_IN) > 16  # value labels stand up
    any_partial = False
    top = 0.0
    for i, b in enumerate(bars):
        pos = [g + width * (i - (n - 1) / 2) for g in range(len(groups))]
        for j, v in enumerate(b.values):
            if v is None or not math.isfinite(v):
                ax.text(pos[j], 0, "n/a", ha="center", va="bottom", fontsize=6, color="#999", rotation=90)
                continue
            part = bool(b.partial and b.partial[j])
            any_partial |= part
            color = b.color or "#888"
            ax.bar(
                pos[j],
                v,
                width=width * 0.92,
                facecolor=matplotlib.colors.to_rgba(color, 0.3 if part else 1.0),
                edgecolor=color if part else "white",
                linewidth=0.8 if part else 0.5,
                label=b.label if j == next(k for k, x in enumerate(b.values) if x is not None) else None,
            )
            if part:  # the hatch over the tint (see hatched())
                ax.bar(
                    pos[j],
                    v,
                    width=width * 0.92,
                    facecolor="none",
                    edgecolor=color,
                    hatch="////",
                    linewidth=0,
                )
            lo = b.lo[j] if b.lo is not None else None
            hi = b.hi[j] if b.hi is not None else None
            peak = v
            if lo is not None and hi is not None:
                ax.plot([pos[j], pos[j]], [lo, hi], color="#333", linewidth=0.9)
                ax.plot([pos[j] - width * 0.2, pos[j] + width * 0.2], [hi, hi], color="#333", linewidth=0.9)
                peak = max(v, hi)
            top = max(top, peak)
            if labels:
                ax.annotate(
                    _value_text(v),
                    (pos[j], peak),
                    textcoords="offset points",
                    xytext=(0, 2),
                    ha="center",
                    va="bottom",
                    fontsize=5.5 if crowded else 6,
                    rotation=90 if crowded else 0,
                )
    ax.set_xticks(range(len(groups)), list(groups), fontsize=7 if len(groups) > 8 else None)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylim(bottom=0, top=top * (1.25 if crowded else 1.15) if top > 0 else 1)
    ax.grid(axis="x", visible=False)
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    handles: list[Any] = list(ax.get_legend_handles_labels()[0])
    names = [str(h.get_label()) for h in handles]
    if any_partial:
        handles.append(hatched("#666"))
        names.append("cell not fully measured")
    if bars and any(v is not None for b in bars for v in b.values):
        ax.legend(handles, names, title=legend_title, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        _no_data(ax)
    _note(ax, note)
    return fig


@dataclass(frozen=True)
class Boxes:
    """One box per group: the spread of a per-machine value (copy time of each copier)."""

    label: str
    data: Sequence[Sequence[float]]  # per group; empty: not measured
    color: str | None = None
    partial: Sequence[bool] | None = None


def grouped_boxes(
    title: str,
    groups: Sequence[str],
    boxes: Sequence[Boxes],
    *,
    xlabel: str,
    ylabel: str,
    legend_title: str | None = None,
    note: str = "",
) -> Figure:
    """Box plots side by side in each group (median, quartiles, whiskers to 1.5 IQR, outliers)."""
    fig = new_figure()
    ax = fig.add_subplot()
    n = max(len(boxes), 1)
    width = min(0.8 / n, 0.22)
    handles: list[Any] = []
    names: list[str] = []
    for i, bx in enumerate(boxes):
        pos = [g + width * (i - (n - 1) / 2) for g in range(len(groups))]
        have = [(p, list(d), j) for j, (p, d) in enumerate(zip(pos, bx.data, strict=True)) if len(d)]
        if not have:
            continue
        art = ax.boxplot(
            [d for _, d, _ in have],
            positions=[p for p, _, _ in have],
            widths=width * 0.8,
            patch_artist=True,
            manage_ticks=False,
            medianprops={"color": "#222", "linewidth": 1.2},
            flierprops={"marker": ".", "markersize": 3, "markeredgecolor": bx.color},
            whiskerprops={"color": "#555"},
            capprops={"color": "#555"},
        )
        for patch, (_, _, j) in zip(art["boxes"], have, strict=True):
            part = bool(bx.partial and bx.partial[j])
            color = bx.color or "#888"
            patch.set_facecolor(matplotlib.colors.to_rgba(color, 0.3 if part else 0.9))
            if part:  # the hatch over the tint (see hatched())
                ax.add_patch(
                    PathPatch(
                        patch.get_path(),
                        transform=patch.get_transform(),
                        facecolor="none",
                        edgecolor=color,
                        hatch="////",
                        linewidth=0,
                    )
                )
        handles.append(Patch(facecolor=bx.color or "#888"))
        names.append(bx.label)
    if any(p for bx in boxes for p in (bx.partial or [])):
        handles.append(hatched("#666"))
        names.append("cell not fully measured")
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylim(bottom=0)
    ax.grid(axis="x", visible=False)
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if handles:
        ax.legend(handles, names, title=legend_title, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        _no_data(ax)
    _note(ax, note)
    return fig


def _short(v: float) -> str:
    if v == int(v):
        return str(int(v))
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


VALUE_STATISTICS = ("peak", "max", "min", "mean", "last")


def _limits(ax: object, result: CriterionVerdict) -> None:
    for band, color, name in ((result.pass_band, OK, "pass"), (result.marginal_band, MARGINAL, "marginal")):
        if band is None:
            continue
        for lim, which in ((band.max, "max"), (band.min, "min")):
            if lim is not None:
                ax.axhline(  # type: ignore[attr-defined]
                    lim, color=color, linestyle="--", linewidth=1, label=f"{name} {which} {_short(lim)}"
                )


def evidence(result: CriterionVerdict | Any, series: Sequence[Series], *, max_lines: int = 6) -> Figure:
    """A criterion's evidence: its series over the window with the pass and marginal limits and
    where it first crossed; per-entity values (one boot time per client) as bars instead.
    Many entities are cut to the ``max_lines`` worst (bars show them all). ``result``: a
    :class:`CriterionVerdict` (or the former verdict wrapper, which holds one)."""
    result = getattr(result, "verdict", result)  # criteria.legacy's wrapper
    fig = new_figure()
    ax = fig.add_subplot()
    color = {"pass": OK, "marginal": MARGINAL}.get(str(result.outcome), BAD)
    observed = (
        f"{result.statistic} {_short(result.observed)} {result.unit}".strip()
        if result.observed is not None
        else ""
    )
    where = f" on {result.entity}" if result.entity and len(result.entities) > 1 else ""
    fig.suptitle(
        f"{result.name}: {result.outcome}", x=0.01, ha="left", color=color, fontweight="bold", fontsize=10
    )
    ax.set_title(
        f"{result.selector}   {observed}{where}", loc="left", fontsize=8, fontweight="normal", color="#444"
    )
    value_like = result.statistic in VALUE_STATISTICS or re.fullmatch(r"p[\d.]+", result.statistic)
    metric = series[0].metric if series else result.statistic
    if series and max(len(s) for s in series) <= 1 and (result.entities or result.missing):
        # one value per entity (a boot time per client): bars; clients without a value as red x
        values = {e.entity: e for e in result.entities}
        names = sorted({*values, *result.missing})
        xs = list(range(len(names)))
        ax.bar(
            xs,
            [values[n].value if n in values else 0.0 for n in names],
            color=[
                {"pass": OK, "marginal": MARGINAL}.get(str(values[n].outcome), BAD) if n in values else BAD
                for n in names
            ],
            width=0.8,
        )
        missing = [i for i, n in enumerate(names) if n not in values]
        if missing:
            shown = ", ".join(result.missing[:4]) + (" ..." if len(result.missing) > 4 else "")
            ax.plot(
                missing,
                [0.0] * len(missing),
                "x",
                color=BAD,
                markersize=8,
                markeredgewidth=2,
                label=f"no value: {shown}",
                clip_on=False,
            )
        step = max(1, len(names) // 12)
        ticks = sorted(set(xs[::step]) | set(missing))
        ax.set_xticks(ticks, [names[i] for i in ticks], rotation=30, ha="right", fontsize=7)
        for i in missing:
            ax.get_xticklabels()[ticks.index(i)].set_color(BAD)
        ax.set_ylabel(f"{metric} ({result.unit})" if result.unit else metric)
        _limits(ax, result)
        ax.legend(loc="lower right", framealpha=0.9, frameon=True)
        return fig
    start = result.window.start_ts_s if result.window is not None else None
    if start is None:
        start = min((s.ts[0] for s in series if len(s)), default=0.0)
    worst_first = sorted(series, key=lambda s: -max(s.values, default=-math.inf))[:max_lines]
    many = len(worst_first) > 1
    for s in worst_first:
        xs2 = [t - start for t in s.ts]
        ax.plot(
            xs2, s.values, label=s.entity if many else None, linewidth=1.3, marker="o" if len(s) < 3 else None
        )
    if value_like:
        _limits(ax, result)
    if result.threshold is not None:
        ax.axhline(
            result.threshold,
            color="#555",
            linestyle=":",
            linewidth=1,
            label=f"threshold {_short(result.threshold)}",
        )
    if result.first_crossing_ts is not None:
        ax.axvline(
            result.first_crossing_ts - start,
            color=BAD,
            linewidth=1,
            alpha=0.7,
            label=f"first crossed at +{_short(result.first_crossing_ts - start)} s",
        )
    ax.set_xlabel("seconds since window start")
    ax.set_ylabel(series[0].unit if series and series[0].unit else (result.unit or "value"))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    return fig


def evidence_png(criterion: CriterionVerdict, series: Sequence[Series]) -> bytes:
    """:func:`evidence` as PNG bytes: the ``chart`` the cell runner hands the Allure sink."""
    return png(evidence(criterion, series))
