"""The paper's figure set from a run folder, as one standalone HTML page (inline SVG, no external
references): ``results/<run>/report/figures.html``.

- Boot storm: boot time vs group size, retries vs group size, and CPU / used memory / NIC
  utilisation / disk queue over time with one line per group size (time zero = the cell's storm
  start). With more than one configuration (standalone vs HA) the "vs group size" charts get one
  line per configuration and the over-time charts one set per configuration.
- Copy/reboot matrix: per copy path, the rebooting group's boot time and retries and the
  copiers' copy time per copiers/rebooters combination, and the same counters over time with one
  line per combination.
- A results table with one row per cell.

Reads ``run.json``, ``cells/*/summary.json`` and ``series.csv`` only (see ``results/README.md``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.recorder.cells import CELLS_DIR, VERDICTS_FILE, read_cell_summaries
from labctl.recorder.series import read_series, run_path
from labctl.records.series import Series
from labctl.report import charts
from labctl.report.charts import Line

FIGURES_FILE = "figures.html"
PRE_STORM_S = 30.0  # how much of the baseline before the storm start the time charts show


@dataclass(frozen=True)
class Counter:
    key: str
    title: str
    metrics: tuple[str, ...]  # first one recorded wins
    ylabel: str
    server_level: bool = False  # an entity of the server itself ("pvs-01"), not "pvs-01/D:"
    entity_hint: str | None = None  # a summary field naming the entity to plot
    ymax: float | None = None
    scale: dict[str, tuple[float, str]] | None = None  # metric -> (factor, ylabel)


COUNTERS = (
    Counter("cpu", "CPU utilisation", ("cpu_pct",), "%", server_level=True, ymax=105),
    Counter("memory", "Used memory", ("memory_used_mb",), "MB", server_level=True),
    Counter(
        "nic",
        "NIC utilisation (outbound)",
        ("nic_sent_util_pct", "nic_sent_bytes_per_s"),
        "%",
        ymax=105,
        scale={"nic_sent_bytes_per_s": (1 / 1e6, "MB/s")},
    ),
    Counter(
        "disk", "Average disk queue length", ("disk_queue_len",), "requests", entity_hint="write_cache_disk"
    ),
)


# --- the data of a run ---------------------------------------------------------------------


@dataclass
class Cell:
    id: str
    summary: dict[str, Any]
    verdicts: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # verdicts.json criteria
    verdict: str = ""  # the verdict's outcome, when the cell has a verdicts.json

    @property
    def outcome(self) -> str:
        """The criteria verdict when there is one (the truth), else what the summary says."""
        return self.verdict or str(self.get("outcome", "") or "")

    def get(self, key: str, default: Any = None) -> Any:
        return self.summary.get(key, default)

    @property
    def configuration(self) -> str:
        return str(self.get("configuration") or "")

    @property
    def copy_path(self) -> str | None:
        cp = self.get("copy_path")
        return str(cp) if cp else None

    @property
    def is_matrix(self) -> bool:
        return self.copy_path is not None or self.get("copiers") is not None

    @property
    def combination(self) -> str:
        return f"{self.get('copiers', '?')}/{self.get('rebooters', '?')}"

    def clients(self, role: str | None = None) -> dict[str, dict[str, Any]]:
        cl = self.get("clients") or {}
        if not isinstance(cl, dict):
            return {}
        return {
            k: v for k, v in cl.items() if isinstance(v, dict) and (role is None or v.get("role") == role)
        }

    def values(self, field: str, role: str | None = None) -> list[float]:
        out = []
        for c in self.clients(role).values():
            v = c.get(field)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                out.append(float(v))
        return out

    def start_ts(self, series: Sequence[Series]) -> float | None:
        t = self.get("storm_start_ts_s")
        if isinstance(t, int | float):
            return float(t)
        firsts = [s.ts[0] for s in series if len(s)]
        return min(firsts) if firsts else None


def _clients(n: int) -> str:
    return "1 client" if n == 1 else f"{n} clients"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _stats(vals: Sequence[float]) -> tuple[float, float, float] | None:
    if not vals:
        return None
    return statistics.fmean(vals), min(vals), max(vals)


# --- choosing what to plot -------------------------------------------------------------------


@dataclass
class Picked:
    metric: str
    entity: str
    note: str
    factor: float
    ylabel: str


def _pick(counter: Counter, cells: Sequence[Cell], by_cell: dict[str, list[Series]]) -> Picked | None:
    """Which entity and metric to plot for a group of cells: the one the summaries name, else
    the busiest (highest peak) so that "the NIC" is the loaded one of two, like the paper's."""
    for metric in counter.metrics:
        cands: dict[str, float] = defaultdict(lambda: -math.inf)
        for c in cells:
            for s in by_cell.get(c.id, []):
                if s.metric != metric or not len(s):
                    continue
                if counter.server_level and "/" in s.entity:
                    continue
                cands[s.entity] = max(cands[s.entity], max(s.values))
        if not cands:
            continue
        hinted = [c.get(counter.entity_hint) for c in cells] if counter.entity_hint else []
        hinted += [c.get("server") for c in cells] if counter.server_level else []
        chosen = next((h for h in hinted if isinstance(h, str) and h in cands), None)
        note = ""
        if chosen is None:
            chosen = max(cands, key=lambda e: cands[e])
            if len(cands) > 1:
                note = f"{chosen}, the busiest of {len(cands)} ({', '.join(sorted(cands))})"
        if not note:
            note = chosen
        factor, ylabel = (1.0, counter.ylabel)
        if counter.scale and metric in counter.scale:
            factor, ylabel = counter.scale[metric]
        return Picked(metric, chosen, note, factor, ylabel)
    return None


def _limits(cells: Sequence[Cell], picked: Picked | None) -> list[tuple[float, str, str]]:
    """Pass limits of the criteria that judged the plotted series (from the cells' verdicts.json),
    so the chart shows the band the cell was held to (e.g. 2 x spindles for the disk queue)."""
    if picked is None or picked.factor != 1.0:
        return []
    found: dict[float, tuple[str, str]] = {}
    for c in cells:
        for r in c.verdicts:
            refs = r.get("series") or []
            if r.get("statistic") not in ("peak", "max", "mean", "last") and not str(
                r.get("statistic", "")
            ).startswith("p"):
                continue
            if not any(x.get("metric") == picked.metric and x.get("entity") == picked.entity for x in refs):
                continue
            band = r.get("pass_band") or {}
            lim = band.get("max")
            if isinstance(lim, int | float):
                expr = f" = {band['max_expr']}" if band.get("max_expr") else ""
                text = f"{r.get('name')!s}: {r.get('statistic')} <= {lim:g}{expr}"
                found.setdefault(float(lim), (f"pass <= {lim:g}", text))
    return [(v, short, long) for v, (short, long) in sorted(found.items())[:3]]


def _limit_caption(limits: Sequence[tuple[float, str, str]]) -> str:
    if not limits:
        return ""
    return " Dashed: the pass limit of " + "; ".join(long for _, _, long in limits) + "."


def _time_lines(
    counter: Counter,
    groups: Sequence[tuple[str, Cell]],
    by_cell: dict[str, list[Series]],
) -> tuple[list[Line], Picked | None]:
    cells = [c for _, c in groups]
    picked = _pick(counter, cells, by_cell)
    if picked is None:
        return [], None
    lines = []
    palette = charts.colors(len(groups))
    for (label, cell), color in zip(groups, palette, strict=True):
        found = [
            s for s in by_cell.get(cell.id, []) if s.metric == picked.metric and s.entity == picked.entity
        ]
        if not found:
            continue
        s = found[0]
        t0 = cell.start_ts(by_cell.get(cell.id, []))
        if t0 is None:
            continue
        pts = [
            (t - t0, v * picked.factor) for t, v in zip(s.ts, s.values, strict=True) if t - t0 >= -PRE_STORM_S
        ]
        if pts:
            lines.append(Line(label, [p[0] for p in pts], [p[1] for p in pts], color))
    return lines, picked


# --- the page ------------------------------------------------------------------------------


@dataclass
class Fig:
    svg: str
    caption: str


@dataclass
class Section:
    title: str
    intro: str
    figures: list[Fig]


def _fig(figure: Any, caption: str) -> Fig:
    return Fig(charts.svg(figure), caption)


def _versus_lines(
    groups: dict[str, list[Cell]], x_of: Callable[[Cell], Any], field: str, role: str | None = None
) -> list[Line]:
    lines = []
    palette = ["#1f4e79", "#c0504d", "#4f8a3c", "#8064a2"]
    for i, (label, cells) in enumerate(sorted(groups.items())):
        pts = []
        for c in cells:
            st = _stats(c.values(field, role))
            x = x_of(c)
            if st is not None and x is not None:
                pts.append((x, st))
        pts.sort(key=lambda p: p[0])
        if pts:
            lines.append(
                Line(
                    label,
                    [p[0] for p in pts],
                    [p[1][0] for p in pts],
                    palette[i % len(palette)],
                    lo=[p[1][1] for p in pts],
                    hi=[p[1][2] for p in pts],
                )
            )
    return lines


def _counter_figs(
    labelled: Sequence[tuple[str, Cell]],
    by_cell: dict[str, list[Series]],
    *,
    legend_title: str,
    xlabel: str,
    caption_tail: str,
) -> list[Fig]:
    """One over-time chart per server counter, one line per labelled cell, with the pass limits
    the cells were judged by."""
    cells = [c for _, c in labelled]
    figs = []
    for counter in COUNTERS:
        lines, picked = _time_lines(counter, labelled, by_cell)
        limits = _limits(cells, picked)
        fig = charts.over_time(
            counter.title,
            lines,
            ylabel=picked.ylabel if picked else counter.ylabel,
            legend_title=legend_title,
            xlabel=xlabel,
            ymax=counter.ymax if picked is None or picked.factor == 1.0 else None,
            limits=[(v, short) for v, short, _ in limits],
        )
        cap = f"{counter.title} of {picked.note}" if picked else f"{counter.title}: not recorded in this run"
        figs.append(_fig(fig, cap + caption_tail + _limit_caption(limits)))
    return figs


def _boot_storm_section(cells: list[Cell], by_cell: dict[str, list[Series]]) -> list[Section]:
    storm = [c for c in cells if not c.is_matrix and _num(c.get("group_size")) is not None]
    if not storm:
        return []
    by_cfg: dict[str, list[Cell]] = defaultdict(list)
    for c in storm:
        by_cfg[c.configuration or "lab"].append(c)
    several = len(by_cfg) > 1
    figs = []
    for field, title, ylabel, what in (
        ("boot_time_s", "Client boot time", "seconds", "boot time"),
        ("retries", "Client session retries", "retries per client", "retries"),
    ):
        lines = _versus_lines(by_cfg if several else {"": storm}, lambda c: _num(c.get("group_size")), field)
        caption = (
            f"Mean {what} per client against the number of clients booted at once; the shaded band is the "
            f"range from the fastest to the slowest client."
        )
        if several:
            caption += " One line per configuration."
        figs.append(
            _fig(
                charts.versus(title, lines, xlabel="clients booted at once", ylabel=ylabel, categorical=True),
                caption,
            )
        )
    sections = [
        Section(
            "Boot storm: client experience",
            "Boot time and retries as the streaming server reports them for every client of the group.",
            figs,
        )
    ]
    for cfg, group in sorted(by_cfg.items()):
        group.sort(key=lambda c: _num(c.get("group_size")) or 0)
        labelled = [(_clients(int(_num(c.get("group_size")) or 0)), c) for c in group]
        tfigs = _counter_figs(
            labelled,
            by_cell,
            legend_title="group size",
            xlabel="seconds since storm start",
            caption_tail=". Time zero is the moment the group was woken.",
        )
        suffix = f" ({cfg})" if several else ""
        sections.append(
            Section(
                f"Boot storm: server utilisation{suffix}",
                "One line per group size; the lines start up to 30 s before the wake to show the idle baseline.",
                tfigs,
            )
        )
    return sections


def _matrix_sections(cells: list[Cell], by_cell: dict[str, list[Series]]) -> list[Section]:
    matrix = [c for c in cells if c.is_matrix]
    if not matrix:
        return []
    sections = []
    by_path: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for c in matrix:
        by_path[(c.copy_path or "copy", c.configuration)].append(c)
    configs = {cfg for _, cfg in by_path}
    for (path, cfg), group in sorted(by_path.items()):
        group.sort(key=lambda c: (_num(c.get("copiers")) or 0, _num(c.get("rebooters")) or 0))
        combos = [c.combination for c in group]
        figs = []
        for field, role, title, ylabel in (
            ("boot_time_s", "rebooter", "Rebooting clients: boot time", "seconds"),
            ("retries", "rebooter", "Rebooting clients: retries", "retries per client"),
            ("copy_s", "copier", "Copying clients: copy time", "seconds"),
        ):
            pts = [(_stats(c.values(field, role)), combo) for c, combo in zip(group, combos, strict=True)]
            if not any(p[0] for p in pts):
                continue
            line = Line(
                "",
                combos,  # type: ignore[arg-type]
                [p[0][0] if p[0] else math.nan for p in pts],
                "#1f4e79",
                lo=[p[0][1] if p[0] else math.nan for p in pts],
                hi=[p[0][2] if p[0] else math.nan for p in pts],
            )
            figs.append(
                _fig(
                    charts.versus(
                        title, [line], xlabel="copiers / rebooters", ylabel=ylabel, categorical=True
                    ),
                    f"Mean per client, shaded from the fastest to the slowest; copy path {path}.",
                )
            )
        labelled = [(f"{c.combination} copy/reboot", c) for c in group]
        figs += _counter_figs(
            labelled,
            by_cell,
            legend_title="copiers / rebooters",
            xlabel="seconds since copies and reboots started",
            caption_tail=f"; copy path {path}.",
        )
        suffix = f" ({cfg})" if len(configs) > 1 and cfg else ""
        sections.append(
            Section(
                f"Copy/reboot matrix: {path}{suffix}",
                "All clients booted and the storm passed; then one group copies while the other reboots.",
                figs,
            )
        )
    return sections


def _peak(series: Iterable[Series], metric: str, entity_filter: Callable[[str], bool]) -> float | None:
    vals = [max(s.values) for s in series if s.metric == metric and len(s) and entity_filter(s.entity)]
    return max(vals) if vals else None


def _table(cells: list[Cell], by_cell: dict[str, list[Series]]) -> str:
    head = [
        ("cell", ""),
        ("config&shy;uration", ""),
        ("clients", "num"),
        ("copy path", ""),
        ("clients booted", "num"),
        ("boot time s<br>mean / max", "num"),
        ("retries<br>mean / max", "num"),
        ("CPU peak<br>%", "num"),
        ("NIC peak<br>%", "num"),
        ("disk queue<br>peak", "num"),
        ("outcome", ""),
    ]
    rows: list[list[tuple[str, str]]] = []
    for c in cells:
        ss = by_cell.get(c.id, [])
        role = "rebooter" if c.is_matrix else None
        boots = c.values("boot_time_s", role)
        retries = c.values("retries", role)
        expected = len(c.clients(role))
        bt = _stats(boots)
        rt = _stats(retries)
        cpu = _peak(ss, "cpu_pct", lambda e: "/" not in e)
        nic = _peak(ss, "nic_sent_util_pct", lambda e: True)
        dq = _peak(ss, "disk_queue_len", lambda e: True)
        outcome = c.outcome
        row = [
            (c.id, ""),
            (c.configuration or "-", ""),
            (f"{c.combination} copy/reboot" if c.is_matrix else str(c.get("group_size", "")), "num"),
            (c.copy_path or "-", ""),
            (
                f"{len(boots)} of {expected}" if expected else "-",
                "num bad" if len(boots) < expected else "num",
            ),
            (f"{bt[0]:.1f} / {bt[2]:.1f}" if bt else "-", "num"),
            (f"{rt[0]:.1f} / {rt[2]:.0f}" if rt else "-", "num"),
            (f"{cpu:.0f}" if cpu is not None else "-", "num"),
            (f"{nic:.0f}" if nic is not None else "-", "num"),
            (f"{dq:.1f}" if dq is not None else "-", "num"),
            (outcome or "-", _outcome_class(outcome)),
        ]
        rows.append(row)
    # a column with nothing in it (copy path in a boot-storm-only run) only takes room
    keep = [i for i in range(len(head)) if head[i][0] == "cell" or any(r[i][0] != "-" for r in rows)]
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="{head[i][1]}">{head[i][0]}</th>' for i in keep]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(
            "<tr>" + "".join(f'<td class="{row[i][1]}">{html.escape(row[i][0])}</td>' for i in keep) + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def _outcome_class(outcome: str) -> str:
    o = outcome.lower()
    if o in ("pass", "passed"):
        return "ok"
    if o in ("marginal",):
        return "warn"
    if o:
        return "bad"
    return ""


CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;margin:0;color:#1d2329;background:#f6f7f9}
header{background:#1f2d3d;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px 0;font-size:22px}
header p{margin:2px 0;color:#c9d3de;font-size:13px}
main{padding:8px 28px 40px 28px;max-width:1500px}
h2{font-size:18px;margin:28px 0 4px 0;border-bottom:1px solid #d5dae0;padding-bottom:4px}
p.intro{margin:4px 0 12px 0;color:#4a5560;font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(620px,1fr));gap:14px}
figure{background:#fff;border:1px solid #dde2e7;border-radius:6px;margin:0;padding:8px 8px 6px 8px}
figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#4a5560;padding:4px 4px 0 4px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;background:#fff;font-size:12px;margin-top:8px}
th,td{border:1px solid #dde2e7;padding:3px 7px;text-align:left;white-space:nowrap}
th{background:#eef1f4;white-space:normal;vertical-align:bottom;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}
td.ok{color:#2e7d32;font-weight:bold} td.warn{color:#ef6c00;font-weight:bold} td.bad{color:#c62828;font-weight:bold}
.empty{background:#fff;border:1px dashed #c5ccd3;padding:16px;color:#4a5560}
footer{color:#7a8590;font-size:11px;padding:0 28px 20px 28px}
"""


def _read_verdicts(run: Path, cell: str) -> tuple[list[dict[str, Any]], str]:
    try:
        data = json.loads((run / CELLS_DIR / cell / VERDICTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], ""
    if not isinstance(data, dict):
        return [], ""
    crit = data.get("criteria")
    found = [c for c in crit if isinstance(c, dict)] if isinstance(crit, list) else []
    return found, str(data.get("outcome") or "")


def figures_html(run: Any) -> str:
    """The figures page of a run folder as an HTML string."""
    path = run_path(run)
    info: dict[str, Any] = {}
    try:
        info = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = {}
    summaries = read_cell_summaries(path)
    cells = [Cell(cid, s, *_read_verdicts(path, cid)) for cid, s in summaries.items()]
    by_cell: dict[str, list[Series]] = defaultdict(list)
    for s in read_series(path):
        by_cell[s.cell].append(s)
    sections = [*_boot_storm_section(cells, by_cell), *_matrix_sections(cells, by_cell)]
    plan = info.get("plan") or "labctl run"
    lab = info.get("lab") or ""
    started = (info.get("started") or {}).get("wall_utc", "") if isinstance(info.get("started"), dict) else ""
    cfg = info.get("configuration") or ""
    outcome = info.get("outcome") or ""
    title = f"{plan}: figures"
    meta = [f"run {path.name}"]
    if lab:
        meta.append(f"lab {lab}" + (f" ({cfg})" if cfg else ""))
    if started:
        meta.append(f"started {started}")
    if outcome:
        meta.append(f"outcome {outcome}")
    meta.append(f"{len(cells)} cells")
    body = [
        f"<header><h1>{html.escape(title)}</h1><p>{html.escape(' · '.join(meta))}</p>"
        "<p>Figures in the style of the 2007 streaming paper, drawn from this run folder "
        "(series.csv and cells/*/summary.json). The Allure report is index.html next to this file.</p></header>",
        "<main>",
    ]
    if cells:
        body.append("<h2>Results by cell</h2>")
        body.append(
            '<p class="intro">Boot time and retries per client as the streaming server reports them; '
            "peaks of the server's counters over the cell's window.</p>"
        )
        body.append(_table(cells, by_cell))
    if not sections:
        body.append(
            '<div class="empty">No figures: this run has no cell summaries with a group size or a copy '
            "path (cells/&lt;cell&gt;/summary.json). Was it interrupted before the first cell ended?</div>"
        )
    for sec in sections:
        body.append(f'<h2>{html.escape(sec.title)}</h2><p class="intro">{html.escape(sec.intro)}</p>')
        body.append('<div class="grid">')
        for f in sec.figures:
            body.append(f"<figure>{f.svg}<figcaption>{html.escape(f.caption)}</figcaption></figure>")
        body.append("</div>")
    body.append("</main>")
    body.append(
        f"<footer>Generated by labctl from {html.escape(str(path))}. Lab times are UTC; the files carry "
        "them as ISO 8601 and as Unix epoch seconds (see results/README.md).</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} - {html.escape(path.name)}</title>"
        f"<style>{CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def write_figures_page(run: Any, out: Path | None = None) -> Path:
    path = run_path(run)
    target = out or path / "report" / FIGURES_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(figures_html(path), encoding="utf-8")
    tmp.replace(target)
    return target
