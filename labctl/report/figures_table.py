"""The results table of the figures page: one row per cell, its status with the one-line reason
first, the clients' results from the summary's per-machine outcomes, and the server's numbers
from the summary's ``metrics`` (over the window the criteria used, for the entity the summary
names). Nothing here is recomputed from ``series.csv``.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from labctl.records.run_record import Outcome, PhaseFigures, SeriesSummary
from labctl.report.counters import NIC, pick
from labctl.report.headline import index_headline
from labctl.report.run_view import VDI_HOST_SOURCES, CellView, copy_path_label

MIN_COVERAGE = 0.9  # the criteria's default: below it a criterion is no_data
TIME_STATISTICS = ("time_above", "storm_duration")
PROVISIONAL = (
    "over everything this cell recorded: it never ended (the run was killed), so it has no "
    "summary over a window"
)


@dataclass(frozen=True)
class Td:
    text: str
    cls: str = ""
    title: str = ""
    raw: bool = False  # text is HTML already

    def html(self) -> str:
        body = self.text if self.raw else html.escape(self.text)
        title = f' title="{html.escape(self.title)}"' if self.title else ""
        return f'<td class="{self.cls}"{title}>{body}</td>'


def outcome_class(outcome: Outcome | str) -> str:
    o = str(outcome)
    if o in ("pass", "passed"):
        return "ok"
    if o == "marginal":
        return "warn"
    if o in ("interrupted", "running", "error"):
        return "int"
    return "bad" if o else ""


def _mean_max(vals: Sequence[float], digits: int = 1) -> str:
    if not vals:
        return "-"
    return f"{statistics.fmean(vals):.{digits}f} / {max(vals):.{digits if digits else 0}f}"


def _stat(m: SeriesSummary | None, *names: str, fmt: str = "{:.0f}") -> str:
    if m is None:
        return "-"
    vals = [getattr(m, n) for n in names]
    if all(v is None for v in vals):
        return "-"
    return " / ".join(fmt.format(v) if v is not None else "-" for v in vals)


def _coverage(shown: Sequence[SeriesSummary]) -> Td:
    judged = [m for m in shown if m.coverage is not None]
    if not judged:
        return Td("-", "num")
    low = min(judged, key=lambda m: m.coverage or 0.0)
    text = f"{(low.coverage or 0.0) * 100:.0f} %"
    if low.gaps:
        text += f", gap {max(g.duration_s for g in low.gaps):.0f} s"
    cls = "num bad" if (low.coverage or 0.0) < MIN_COVERAGE else "num"
    gaps = "; ".join(f"{g.duration_s:.0f} s" for g in low.gaps)
    return Td(text, cls, title=f"lowest: {low.key}" + (f"; gaps {gaps}" if gaps else ""))


def _time_above(c: CellView) -> str:
    if c.verdict is None:
        return "-"
    parts = [
        f"{v.name}: {v.observed:.0f} s above {v.threshold:g}"
        for v in c.verdict.criteria
        if v.statistic in TIME_STATISTICS and v.observed is not None and v.threshold is not None
    ]
    return "; ".join(parts) or "-"


def _status(c: CellView) -> Td:
    word = c.outcome.value.replace("_", " ")
    if c.provisional:
        word += " (killed)"
    return Td(
        f'<span class="badge {outcome_class(c.outcome)}">{html.escape(word)}</span>', "status", raw=True
    )


def row(c: CellView) -> list[Td]:
    role = c.judged_role
    clients = c.summary.by_role(role)
    boots = c.summary.values("boot_time_s", role)
    copies = c.summary.values("copy_s", "copier")
    server = c.entity("streaming_server") or ""
    cpu = c.metric(server, "cpu_pct") if server else None
    mem = c.metric(server, "memory_used_mb") if server else None
    nic_pick = pick(NIC, server, [c]) if server else None
    nic = c.metric(nic_pick.entity, nic_pick.metric) if nic_pick and nic_pick.factor == 1.0 else None
    wc = c.entity("write_cache_disk")
    queue = c.metric(wc, "disk_queue_len") if wc else None
    num = "num prov" if c.provisional else "num"
    tip = PROVISIONAL if c.provisional else ""
    return [
        Td(c.id),
        Td(c.configuration or "-"),
        Td(c.split_label if c.is_matrix else str(c.group_size or "-"), "num"),
        Td(copy_path_label(c.copy_path) if c.copy_path else "-"),
        _status(c),
        Td(
            f"{len(boots)} of {len(clients)}" if clients else "-",
            "num bad" if len(boots) < len(clients) else "num",
        ),
        Td(_mean_max(boots), "num"),
        Td(_mean_max(c.summary.values("retries", role)), "num"),
        Td(_mean_max(copies, 0), "num"),
        Td(_stat(cpu, "peak", "mean"), num, tip),
        Td(_stat(nic, "peak"), num, tip or (nic_pick.entity if nic_pick else "")),
        Td(_stat(queue, "mean", "peak", fmt="{:.1f}"), num, tip or (wc or "")),
        _coverage([m for m in (cpu, mem, nic, queue) if m is not None]),
        Td(_time_above(c), "num"),
    ]


HEAD = (
    ("cell", ""),
    ("config&shy;uration", ""),
    ("clients", "num"),
    ("copy path", ""),
    ("status", ""),
    ("clients booted", "num"),
    ("boot time s<br>mean / max", "num"),
    ("retries<br>mean / max", "num"),
    ("copy time s<br>mean / max", "num"),
    ("CPU %<br>peak / mean", "num"),
    ("NIC out %<br>peak", "num"),
    ("write-cache queue<br>mean / peak", "num"),
    ("coverage<br>(lowest)", "num"),
    ("time above band", "num"),
)


def _phase(c: CellView, phase: str) -> PhaseFigures | None:
    return next((f for f in c.summary.phase_figures if f.phase == phase and not f.array), None)


def _f(v: float | None, digits: int = 1) -> str:
    return f"{v:,.{digits}f}" if v is not None else "-"


def vdi_row(c: CellView) -> list[Td]:
    """A VDI cell: desktops (never the arrays the summary also lists), logons, the arrays' figures
    per phase, the hosts' CPU and the response-time index's headline."""
    desktops = c.summary.by_role("desktop")
    logons = sorted(d.login_s for d in desktops if d.login_s is not None)
    boot, login, steady = _phase(c, "boot"), _phase(c, "login"), _phase(c, "steady")
    peaks = [f.iops_peak for f in c.summary.phase_figures if not f.array and f.iops_peak is not None]
    lat = [
        f.latency_peak_ms for f in c.summary.phase_figures if not f.array and f.latency_peak_ms is not None
    ]
    cpu = [
        m.peak
        for m in c.metrics.values()
        if m.source in VDI_HOST_SOURCES
        and m.metric in ("cpu_pct", "cpu.usage.average")
        and m.peak is not None
    ]
    head = index_headline(c.summary.response_index)
    num = "num prov" if c.provisional else "num"
    return [
        Td(c.id),
        Td(c.configuration or "-"),
        _status(c),
        Td(
            f"{len(logons)} of {len(desktops)}" if desktops else "-",
            "num bad" if len(logons) < len(desktops) else "num",
        ),
        Td(f"{statistics.median(logons):.0f} / {logons[-1]:.0f}" if logons else "-", "num"),
        Td(
            " / ".join(_f(f.iops_per_desktop if f else None) for f in (boot, login, steady))
            if any((boot, login, steady))
            else "-",
            num,
        ),
        Td(_f(max(peaks), 0) if peaks else "-", num),
        Td(_f(max(lat), 2) if lat else "-", num),
        Td(_f(max(cpu), 0) if cpu else "-", num),
        Td(head.short if head is not None else "-", "num", head.text if head is not None else ""),
    ]


VDI_HEAD = (
    ("cell", ""),
    ("config&shy;uration", ""),
    ("status", ""),
    ("desktops logged on", "num"),
    ("logon s<br>median / longest", "num"),
    ("IOPS per desktop<br>boot / login / steady", "num"),
    ("array IOPS<br>peak", "num"),
    ("array latency ms<br>peak", "num"),
    ("host CPU %<br>peak", "num"),
    ("response-time index", "num"),
)


def _table(
    cells: Sequence[CellView],
    head: Sequence[tuple[str, str]],
    make: Callable[[CellView], list[Td]],
    fixed: Sequence[int],
) -> str:
    rows = [make(c) for c in cells]
    # a column with nothing in it (copy path in a boot-storm-only run) only takes room
    keep = [i for i in range(len(head)) if i in fixed or any(r[i].text != "-" for r in rows)]
    out = ['<div class="scroll"><table class="cells"><thead><tr>']
    out += [f'<th class="{head[i][1]}">{head[i][0]}</th>' for i in keep]
    out.append("</tr></thead><tbody>")
    for c, r in zip(cells, rows, strict=True):
        whole = "" if c.whole else " notwhole"
        reason = c.reason
        reasoned = " reasoned" if reason else ""
        out.append(f'<tr class="cell{whole}{reasoned}">' + "".join(r[i].html() for i in keep) + "</tr>")
        if reason:  # the one-line reason under its cell, across the row (before any detail)
            out.append(
                f'<tr class="reason{whole}"><td colspan="{len(keep)}">&#8627; {html.escape(reason)}</td></tr>'
            )
    out.append("</tbody></table></div>")
    return "".join(out)


def table(cells: Sequence[CellView]) -> str:
    """The results table: the 2007 storms' columns for their cells, the VDI storms' for theirs
    (a run of both kinds gets both tables)."""
    streaming = [c for c in cells if not c.is_vdi]
    vdi = [c for c in cells if c.is_vdi]
    out = []
    if streaming:
        out.append(_table(streaming, HEAD, row, range(5)))
    if vdi:
        out.append(_table(vdi, VDI_HEAD, vdi_row, (0, 2)))  # a configuration only when there is one
    if any(c.provisional for c in cells):
        out.append(f'<p class="note"><i>Italic</i> numbers: {html.escape(PROVISIONAL)}.</p>')
    return "".join(out)
