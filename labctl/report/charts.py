"""Charts in the style of the papers, drawn with matplotlib (Agg: no display needed).

Used by the figures page and by the Allure helpers (a failed criterion's evidence chart).
Every function returns a :class:`matplotlib.figure.Figure`; :func:`svg` / :func:`png` turn one
into bytes with no external references (no fonts or images fetched, no metadata dates).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from labctl.criteria.evaluate import CriterionResult
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
    """The figure as an inline SVG element (no XML prolog, no metadata)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


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
    ax = fig.add_subplot()
    for ln in lines:
        ax.plot(ln.x, ln.y, label=ln.label, color=ln.color, linewidth=1.4)
    for value, label in limits:
        ax.axhline(value, color=BAD, linestyle="--", linewidth=1, label=label)
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ymin is not None or ymax is not None:
        ax.set_ylim(bottom=ymin, top=ymax)
    if lines:
        # outside the axes: a storm's plateau fills the upper right where a legend would sit
        ax.legend(
            title=legend_title,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            ncols=1 if len(lines) + len(limits) <= 12 else 2,
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
    for ln in lines:
        xs: Sequence[float] | list[int] = [cats.index(x) for x in ln.x] if categorical else ln.x
        ax.plot(xs, ln.y, marker="o", label=ln.label or None, color=ln.color, linewidth=1.6)
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
    if any(ln.label for ln in lines):
        ax.legend(loc="upper left")
    if not lines:
        _no_data(ax)
    _note(ax, note)
    return fig


def _short(v: float) -> str:
    if v == int(v):
        return str(int(v))
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


VALUE_STATISTICS = ("peak", "max", "min", "mean", "last")


def _limits(ax: object, result: CriterionResult) -> None:
    for band, color, name in ((result.pass_band, OK, "pass"), (result.marginal_band, MARGINAL, "marginal")):
        if band is None:
            continue
        for lim, which in ((band.max, "max"), (band.min, "min")):
            if lim is not None:
                ax.axhline(  # type: ignore[attr-defined]
                    lim, color=color, linestyle="--", linewidth=1, label=f"{name} {which} {_short(lim)}"
                )


def evidence(result: CriterionResult, series: Sequence[Series], *, max_lines: int = 6) -> Figure:
    """A criterion's evidence: its series over the window with the pass and marginal limits and
    where it first crossed; per-entity values (one boot time per client) as bars instead.
    Many entities are cut to the ``max_lines`` worst (bars show them all)."""
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
    start = result.window[0]
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
