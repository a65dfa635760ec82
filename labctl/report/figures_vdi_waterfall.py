"""The logon waterfall's figures (issue 24), for the figures page and the certificate: each phase's
p50 and p95 against concurrency, the logons on the storm's timeline under the arrays' IOPS and the
hosts' CPU, and the table of phases with the ones the mechanism cannot measure said in words.

The numbers are :mod:`labctl.report.waterfall`'s; this module draws them. :func:`sections` is the
figures page's VDI sections (:mod:`labctl.report.figures_vdi`) with each cell's waterfall added.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from labctl.report import charts, figures_vdi
from labctl.report.figures_vdi import HOST_CPU, HOSTS_SHOWN, WIDE_IN
from labctl.report.run_view import VDI_HOST_SOURCES, CellView
from labctl.report.timelines import Fig, Section, fig
from labctl.report.waterfall import TOTAL, UNACCOUNTED, Waterfall, over_time, waterfall, words

MAX_POINTS = 300  # logons drawn one by one on the timeline; more are drawn as medians per span
TOTAL_COLOR = "#1d2329"
P95_COLOR = "#c62828"
# one colour per phase, the same in every cell and chart (tab10, red kept for the total's p95)
PHASE_COLORS = {
    "brokering": "#8c564b",
    "machine_ready": "#bcbd22",
    "protocol_connect": "#1f77b4",
    "authentication": "#ff7f0e",
    "profile_load": "#2ca02c",
    "group_policy": "#9467bd",
    "shell_ready": "#17becf",
    "logon": "#1f77b4",
    "first_operation": "#e377c2",
    UNACCOUNTED: "#bdbdbd",
}


def of(c: CellView) -> Waterfall | None:
    return waterfall(c.summary.extra, c.series)


def phase_colors(w: Waterfall) -> dict[str, str]:
    """The measured phases' colours; a phase of another name gets one of the rest."""
    spare = iter(charts.colors(max(1, len(w.measured))))
    return {p: PHASE_COLORS.get(p) or next(spare) for p in w.measured}


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}" if v < 100 else f"{v:,.0f}"


def table(c: CellView, w: Waterfall) -> Fig:
    """The phases in order: n, p50, p95, max; an unmeasured phase says by whom and why."""
    head = "<tr><th>phase</th><th>logons</th><th>p50 s</th><th>p95 s</th><th>max s</th></tr>"
    rows = []
    for p in w.phases:
        name = html.escape(words(p.name))
        if p.name == TOTAL:
            name = f"<b>{name}</b>"
        if p.measured:
            rows.append(
                f"<tr><td>{name}</td><td class=num>{p.n}</td><td class=num>{_secs(p.p50_s)}</td>"
                f"<td class=num>{_secs(p.p95_s)}</td><td class=num>{_secs(p.max_s)}</td></tr>"
            )
        else:
            rows.append(
                f'<tr class="unmeasured"><td>{name}</td><td class=prov colspan=4 style="white-space:normal">'
                f"{html.escape(p.unmeasured)}</td></tr>"
            )
    total = w.phase(TOTAL)
    n = total.n if total is not None else 0
    return Fig(
        f'<div class="scroll"><table>{head}{"".join(rows)}</table></div>',
        f"{c.id}: the logon waterfall over {n} logons, phase by phase (percentiles linear between ranks, as "
        "the cell summary's). Unaccounted: the time no measured phase covers. A phase the mechanism cannot "
        "time is named with the launchers' reason, never shown as zero.",
        f"{c.id}: logon waterfall",
        False,
    )


def by_concurrency(c: CellView, w: Waterfall, wide: bool = True) -> Fig | None:
    """Left: the phases' p50 stacked per concurrency bin, the median total as a dot; right: each
    phase's p95 (and the total's) per bin."""
    bins = w.bins()
    if not bins:
        return None
    colors = phase_colors(w)
    f = charts.new_figure(
        width=WIDE_IN if wide else charts.WIDTH_IN, height=charts.HEIGHT_IN * (1 if wide else 1.7)
    )
    left, right = f.subplots(1, 2) if wide else f.subplots(2, 1)
    xs = list(range(len(bins)))
    labels = [b.label for b in bins]
    bottom = [0.0] * len(bins)
    for name in w.measured:
        heights = [b.p50_s.get(name, 0.0) for b in bins]
        left.bar(xs, heights, bottom=bottom, color=colors.get(name), label=words(name), width=0.7)
        bottom = [a + h for a, h in zip(bottom, heights, strict=True)]
    totals = [(x, b.p50_s[TOTAL]) for x, b in zip(xs, bins, strict=True) if TOTAL in b.p50_s]
    if totals:
        left.plot(*zip(*totals, strict=True), "o", color=TOTAL_COLOR, ms=4, label="total (median)")
    left.set_title(f"{c.id}: logon phases, p50", loc="left", fontsize=10, pad=12)
    right.set_title("p95", loc="left", fontsize=10, pad=12)
    for name in [*w.measured, TOTAL]:
        pts = [(x, b.p95_s[name]) for x, b in zip(xs, bins, strict=True) if name in b.p95_s]
        if not pts:
            continue
        style: dict[str, Any] = (
            {"color": P95_COLOR, "lw": 2.0, "label": "total"}
            if name == TOTAL
            else {"color": colors.get(name), "lw": 1.2, "label": words(name)}
        )
        right.plot(*zip(*pts, strict=True), "o-", ms=3, **style)
    for ax in (left, right):
        ax.set_xticks(xs, labels)
        ax.set_xlabel("sessions logged on when the logon started")
        ax.set_ylabel("s")
        ax.set_ylim(bottom=0)
    left.legend(fontsize=6, ncol=2)
    right.legend(fontsize=6, ncol=2)
    counts = ", ".join(f"{b.label}: {b.n}" for b in bins)
    return fig(
        f,
        f"Each measured phase's median (stacked: the sum of the phases' medians, the dot the median logon) "
        f"and 95th percentile against the sessions already logged on when the logon started. Logons per "
        f"bin: {counts}.",
        wide=wide,
    )


def _launch_min(c: CellView, ts: float) -> float:
    return (ts - figures_vdi._t0(c)) / 60


def on_timeline(c: CellView, w: Waterfall, wide: bool = True) -> Fig | None:
    """The arrays' IOPS, the hosts' CPU and each logon's phases at its launch, one x axis."""
    if not w.logons:
        return None
    arrays = figures_vdi.arrays(c)
    hosts = figures_vdi.hosts(c)
    panels = ["arrays"] * bool(arrays) + ["hosts"] * bool(hosts) + ["logons"]
    f = charts.new_figure(
        width=WIDE_IN if wide else charts.WIDTH_IN, height=charts.HEIGHT_IN * (0.55 + 0.55 * len(panels))
    )
    axes = f.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    by = dict(zip(panels, axes, strict=True))
    for ax in axes:
        figures_vdi._shade(ax, c)
    if "arrays" in by:
        ax = by["arrays"]
        for a, color in zip(arrays, charts.colors(len(arrays)), strict=False):
            figures_vdi._plot(ax, c, figures_vdi._find(c, a, "write_iops"), f"{a} write", color=color)
            figures_vdi._plot(ax, c, figures_vdi._find(c, a, "read_iops"), f"{a} read", color=color, ls="--")
        ax.set_ylabel("array IO/s")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6, ncol=2)
    if "hosts" in by:
        ax = by["hosts"]
        shown = hosts[:HOSTS_SHOWN]
        for h, color in zip(shown, charts.colors(len(shown)), strict=False):
            s = next(
                (s for m in HOST_CPU if (s := figures_vdi._find(c, h, m, VDI_HOST_SOURCES)) is not None), None
            )
            figures_vdi._plot(ax, c, s, h, color=color)
        ax.set_ylabel("host CPU %")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=6, ncol=2)
    ax = by["logons"]
    colors = phase_colors(w)
    drawn = [*w.measured, TOTAL]
    if len(w.logons) <= MAX_POINTS:
        how = "a point per phase, at the session's launch"
        for name in drawn:
            pts = [
                (_launch_min(c, lg.launch_ts), lg.phases_s[name]) for lg in w.logons if name in lg.phases_s
            ]
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            if name == TOTAL:
                ax.plot(xs, ys, "_", color=TOTAL_COLOR, ms=9, mew=1.5, label="total", ls="none")
            else:
                ax.plot(xs, ys, ".", color=colors.get(name), ms=4, label=words(name), ls="none")
    else:  # thousands of logons: each phase's median per span of launches, the total's p95 too
        spans = over_time(w.logons, drawn)
        how = f"each phase's median over the logons launched in each of {len(spans)} spans, the total's p95 dashed"
        mids = [_launch_min(c, (b.start_ts + b.end_ts) / 2) for b in spans]
        for name in drawn:
            pts = [(x, b.p50_s[name]) for x, b in zip(mids, spans, strict=True) if name in b.p50_s]
            if pts:
                color = TOTAL_COLOR if name == TOTAL else colors.get(name, TOTAL_COLOR)
                ax.plot(
                    *zip(*pts, strict=True),
                    "-",
                    color=color,
                    lw=1.2,
                    label=words(name) if name != TOTAL else "total",
                )
        top = [(x, b.p95_s[TOTAL]) for x, b in zip(mids, spans, strict=True) if TOTAL in b.p95_s]
        if top:
            ax.plot(*zip(*top, strict=True), "--", color=P95_COLOR, lw=1.2, label="total p95")
    ax.set_ylabel("logon phase, s")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("minutes since the storm began")
    ax.legend(fontsize=6, ncol=3)
    axes[0].set_title(f"{c.id}: logons on the storm's timeline", loc="left", fontsize=10, pad=12)
    missing = [what for what, have in (("no array", arrays), ("no host", hosts)) if not have]
    note = f" This cell recorded {' and '.join(missing)} series." if missing else ""
    return fig(
        f,
        f"Each logon's phases ({how}) under the arrays' IOPS and the hosts' CPU, on one time axis; the "
        f"storm's phases shaded.{note}",
        wide=wide,
    )


def figures(c: CellView, wide: bool = True) -> list[Fig]:
    """The cell's waterfall figures: the table, against concurrency, on the timeline ([] without one)."""
    w = of(c)
    if w is None:
        return []
    return [table(c, w), *(f for f in (by_concurrency(c, w, wide), on_timeline(c, w, wide)) if f is not None)]


def sections(cells: Sequence[CellView], *, wide: bool = True) -> list[Section]:
    """The figures page's VDI sections, each cell's with its logon waterfall after its other figures."""
    by_id = {c.id: c for c in figures_vdi.vdi_cells(cells)}
    out = figures_vdi.sections(cells, wide=wide)
    for s in out:
        c = by_id.get(s.title)
        if c is not None:
            s.figures += figures(c, wide)
    return out
