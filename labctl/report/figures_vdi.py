"""The VDI storms' figures (plans vdi_storm, scale_out, write_cache_modes), for the figures page.

Per cell: the arrays' read and write IOPS over time with the phases shaded, latency over time, the
per-desktop IOPS per phase table (the 2012 paper's table 7, measured), the logon durations, the
response-time index with its baseline, limit and saturation point, and the hosts' CPU and memory.
Across the scale-out cells: one array against two, side by side.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from labctl.records.run_record import PhaseFigures
from labctl.records.series import Series
from labctl.report import charts
from labctl.report.headline import index_headline
from labctl.report.run_view import ARRAY_SOURCES, VDI_HOST_SOURCES, VDI_SCENARIOS, CellView
from labctl.report.timelines import Fig, Section, fig

LABEL_MIN_SHARE = 0.06  # a phase shorter than this share of the storm is not named on the chart
WIDE_IN = 12.8  # the across-the-page chart: twice as wide, as high as the others
HOSTS_SHOWN = 8  # hosts drawn per chart; the caption names how many there were
HOST_CPU = ("cpu_pct", "cpu.usage.average")  # the vCenter simulator's name, then vCenter's counter
HOST_MEM = ("mem_usage_pct", "mem.usage.average")
PHASE_COLORS = {
    "boot": "#fde0c5",
    "idle": "#eeeeee",
    "login": "#d6e9f8",
    "steady": "#dff2df",
    "logoff": "#f3dcef",
}


def vdi_cells(cells: Sequence[CellView]) -> list[CellView]:
    return [c for c in cells if c.summary.scenario in VDI_SCENARIOS]


def _t0(c: CellView) -> float:
    w = c.summary.window
    return w.start_ts_s if w is not None else 0.0


def _shade(ax: Any, c: CellView) -> None:
    """The phases as coloured spans, each named at its middle; a phase too short to hold its name
    (under :data:`LABEL_MIN_SHARE` of the storm) stays unnamed, its colour says it."""
    t0 = _t0(c)
    spans = [p for p in c.summary.phases if p.name in PHASE_COLORS and p.end_ts_s is not None]
    total = sum((p.end_ts_s or p.start_ts_s) - p.start_ts_s for p in spans) or 1.0
    for p in spans:
        a, b = (p.start_ts_s - t0) / 60, ((p.end_ts_s or p.start_ts_s) - t0) / 60
        ax.axvspan(a, b, color=PHASE_COLORS[p.name], alpha=0.6, lw=0)
        if (b - a) * 60 / total >= LABEL_MIN_SHARE:
            ax.text(
                (a + b) / 2,
                1.0,
                p.name,
                transform=ax.get_xaxis_transform(),
                fontsize=7,
                ha="center",
                va="bottom",
            )


def arrays(c: CellView) -> list[str]:
    """The arrays of the cell: those its summary names, else every array entity (not a volume,
    controller or tier: no ``/``) with IOPS in its series."""
    named = sorted(v for k, v in c.summary.entities.items() if k.startswith("array_"))
    if named:
        return named
    return sorted(
        {
            s.entity
            for s in c.series
            if s.source in ARRAY_SOURCES and "/" not in s.entity and s.metric in ("read_iops", "write_iops")
        }
    )


def hosts(c: CellView) -> list[str]:
    """The ESXi hosts of the cell: vCenter entities with a CPU series (datastores have none)."""
    return sorted(
        {s.entity for s in c.series if s.source in VDI_HOST_SOURCES and s.metric in HOST_CPU and len(s)}
    )


def _find(c: CellView, entity: str, metric: str, sources: Sequence[str] = ARRAY_SOURCES) -> Series | None:
    for s in c.series:
        if s.source in sources and s.entity == entity and s.metric == metric and len(s):
            return s
    return None


def _plot(ax: Any, c: CellView, s: Series | None, label: str, **kw: Any) -> None:
    if s is None:
        return
    t0 = _t0(c)
    ax.plot([(t - t0) / 60 for t in s.ts], s.values, label=label, lw=1.2, **kw)


def iops_over_time(c: CellView, wide: bool = True) -> Fig:
    f = charts.new_figure(width=WIDE_IN) if wide else charts.new_figure()
    ax = f.add_subplot()
    _shade(ax, c)
    for a, color in zip(arrays(c), charts.colors(max(1, len(arrays(c)))), strict=False):
        _plot(ax, c, _find(c, a, "write_iops"), f"{a} write", color=color)
        _plot(ax, c, _find(c, a, "read_iops"), f"{a} read", color=color, ls="--")
    ax.set_title(f"{c.id}: array IOPS", loc="left", fontsize=10)
    ax.set_xlabel("minutes since the storm began")
    ax.set_ylabel("IO/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig(f, "Front-end read and write IOPS of each array; the phases shaded.", wide=wide)


def latency_over_time(c: CellView) -> Fig:
    f = charts.new_figure()
    ax = f.add_subplot()
    _shade(ax, c)
    for a in arrays(c):
        _plot(ax, c, _find(c, a, "latency_ms"), a)
    ax.axhline(20, color="#c62828", lw=0.8, ls=":", label="20 ms (2012 criterion)")
    ax.set_title(f"{c.id}: array latency", loc="left", fontsize=10)
    ax.set_xlabel("minutes since the storm began")
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig(f, "I/O-weighted latency of each array as the array measures it.")


def _host_chart(c: CellView, metrics: Sequence[str], what: str, limit: float | None) -> Fig:
    f = charts.new_figure()
    ax = f.add_subplot()
    _shade(ax, c)
    all_hosts = hosts(c)
    shown = all_hosts[:HOSTS_SHOWN]
    for h, color in zip(shown, charts.colors(max(1, len(shown))), strict=False):
        s = next((s for m in metrics if (s := _find(c, h, m, VDI_HOST_SOURCES)) is not None), None)
        _plot(ax, c, s, h, color=color)
    if limit is not None:
        ax.axhline(limit, color="#c62828", lw=0.8, ls=":", label=f"{limit:g} %")
    ax.set_title(f"{c.id}: host {what}", loc="left", fontsize=10)
    ax.set_xlabel("minutes since the storm began")
    ax.set_ylabel("%")
    ax.set_ylim(0, 105)
    if shown:
        ax.legend(fontsize=6, ncol=2)
    more = f" (the first {len(shown)} of {len(all_hosts)} hosts)" if len(all_hosts) > len(shown) else ""
    return fig(
        f, f"{what[0].upper()}{what[1:]} of each ESXi host as vCenter reports it (20 s samples){more}."
    )


def hosts_over_time(c: CellView) -> list[Fig]:
    return [
        _host_chart(c, HOST_CPU, "CPU", 95.0),
        _host_chart(c, HOST_MEM, "memory", None),
    ]


def index_chart(c: CellView) -> Fig | None:
    ri = c.summary.response_index
    if ri is None or not ri.points:
        return None
    f = charts.new_figure()
    ax = f.add_subplot()
    ax.plot([p.sessions for p in ri.points], [p.value_s for p in ri.points], "o-", ms=3, lw=1, label="index")
    if ri.baseline_s is not None:
        ax.axhline(ri.baseline_s, color="#2e7d32", lw=1, label=f"baseline {ri.baseline_s:.2f} s")
        ax.axhline(
            ri.baseline_s + ri.threshold_s, color="#c62828", lw=1, ls="--", label="baseline + threshold"
        )
    if ri.saturation_sessions is not None:
        ax.axvline(
            ri.saturation_sessions,
            color="#c62828",
            lw=1.5,
            label=f"saturation: {ri.saturation_sessions} sessions",
        )
    ax.set_title(f"{c.id}: response-time index", loc="left", fontsize=10)
    ax.set_xlabel("sessions active")
    ax.set_ylabel("typical operation, s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    head = index_headline(ri)
    words = head.text[0].upper() + head.text[1:] if head is not None else ""
    return fig(
        f,
        f"{words}. Good {ri.good}, fair {ri.fair}, poor {ri.poor} desktops (docs/response-time-index.md).",
    )


def logon_chart(c: CellView) -> Fig | None:
    times = sorted(d.login_s for d in c.summary.by_role("desktop") if d.login_s is not None)
    if not times:
        return None
    f = charts.new_figure()
    ax = f.add_subplot()
    ax.hist(times, bins=min(30, max(5, len(times) // 5)), color="#4c78a8")
    ax.set_title(f"{c.id}: logon durations", loc="left", fontsize=10)
    ax.set_xlabel("request to desktop ready, s")
    ax.set_ylabel("users")
    return fig(f, f"{len(times)} logons; median {times[len(times) // 2]:.0f} s, longest {times[-1]:.0f} s.")


def _n(v: float | None, fmt: str = "{:,.1f}") -> str:
    return fmt.format(v) if v is not None else "-"


def phase_table(c: CellView) -> Fig:
    # one array: its rows are the cell's ("all"), shown once
    several = len({f.array for f in c.summary.phase_figures if f.array}) > 1
    rows = [f for f in c.summary.phase_figures if several or not f.array]
    head = (
        "<tr><th>phase</th><th>array</th><th>desktops</th><th>IOPS mean</th><th>IOPS peak</th>"
        "<th>IOPS per desktop</th><th>read %</th><th>read KB</th><th>write KB</th><th>latency ms</th>"
        "<th>storm s</th></tr>"
    )
    body = "".join(
        f"<tr><td>{html.escape(f.phase)}</td><td>{html.escape(f.array or 'all')}</td><td class=num>{f.desktops}</td>"
        f"<td class=num>{_n(f.iops_mean)}</td><td class=num>{_n(f.iops_peak)}</td>"
        f"<td class=num>{_n(f.iops_per_desktop, '{:.2f}')}</td><td class=num>{_n(f.read_share_pct)}</td>"
        f"<td class=num>{_n(f.read_kb)}</td><td class=num>{_n(f.write_kb)}</td>"
        f"<td class=num>{_n(f.latency_mean_ms, '{:.2f}')}</td><td class=num>{_n(f.storm_duration_s, '{:.0f}')}</td></tr>"
        for f in rows
    )
    table = f'<div class="scroll"><table>{head}{body}</table></div>'
    return Fig(
        table,
        "Per phase (2012 paper, table 7): per desktop = peak / desktops for boot and login, mean / desktops "
        "in steady state (from 15 minutes after the last logon); paper: boot 16-18, login 11-13, steady 7-8.",
        "",
        True,
    )


def _steady(c: CellView) -> PhaseFigures | None:
    return next((f for f in c.summary.phase_figures if f.phase == "steady" and not f.array), None)


def scale_out_chart(cells: Sequence[CellView]) -> Fig | None:
    rows: list[tuple[CellView, PhaseFigures]] = []
    for c in cells:
        s = _steady(c) if c.summary.scenario == "scale_out" else None
        if s is not None and s.iops_mean:
            rows.append((c, s))
    if len(rows) < 2:
        return None
    f = charts.new_figure()
    ax = f.add_subplot()
    labels = [
        f"{c.summary.parameters.get('array_count', '?')} array(s)\n{s.desktops} desktops" for c, s in rows
    ]
    ax.bar(labels, [s.iops_mean or 0.0 for _, s in rows], color="#4c78a8", label="steady IOPS")
    base = rows[0][1]
    per = (base.iops_mean or 0.0) / base.desktops if base.desktops else 0.0
    ax.plot(labels, [per * s.desktops for _, s in rows], "r--o", label="linear from the first")
    ax.set_title("Scale-out: one array against two", loc="left", fontsize=10)
    ax.set_ylabel("IO/s")
    ax.legend(fontsize=7)
    return fig(
        f, "Steady-state IOPS of each scale-out cell beside linear growth from the smallest (table 5)."
    )


def sections(cells: Sequence[CellView], *, wide: bool = True) -> list[Section]:
    """The VDI sections of the figures page; ``wide=False``: every figure a page's width (the
    certificate's portrait pages)."""
    vdi = vdi_cells(cells)
    if not vdi:
        return []
    out = [
        Section(
            "VDI storms",
            "Boot, login, steady state and logoff on one timeline, per cell; arrays, hosts and sessions.",
            [f for f in [scale_out_chart(vdi)] if f is not None],
        )
    ]
    for c in vdi:
        # a cell that recorded no array (a session storm measured from its hosts) draws no empty frames
        storage = [iops_over_time(c, wide), phase_table(c), latency_over_time(c)] if arrays(c) else []
        figs = [*storage, *hosts_over_time(c)]
        figs += [f for f in (index_chart(c), logon_chart(c)) if f is not None]
        head = index_headline(c.summary.response_index)
        intro = "; ".join(x for x in (f"Response-time index: {head.text}" if head else "", c.reason) if x)
        out.append(Section(c.id, intro, figs, level=3))
    return out
