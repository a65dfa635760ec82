"""Trends across nights: a lab + plan's key figures night after night, per cell (``report/trends.html``).

    page = write_trends_page(run_dir, nights, current=run_id, baseline_runs=[...])

``nights`` are the runs of one lab + plan, oldest first, each as its key figures
(:class:`~labctl.records.figures.RunFigures`, what ``labctl compare`` and the store's
``cell_figures`` hold) with its ``run.json`` ``extra`` (where the nightly records its verdict);
the caller reads them from the results store (:func:`labctl.store.history.night_history`), so the
page shows the same trends on any machine.

One chart per figure (boot time, retries, machines that never booted, copy time, and the peak of
the streaming server's CPU, NIC and disk queue, the disk latency), one line per cell across the
nights; for server-side figures one per cell and entity (disk, NIC, server: colour by cell, line
style by entity), leaving out entities that stay idle. Marked on every chart:

- a night whose cell was a lab fault (``lab_fault``, ``no_data``, ``error``, ``interrupted``):
  no value (it measured the lab), a red ``x`` on the axis;
- a value the nightly flagged as a regression that night: a red ring;
- the baseline runs: a grey band; the night of this report: its label in bold.

Inline SVG only (no scripts, no external references): the page works offline and as a CI artifact.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.records.figures import CellFigures, RunFigures
from labctl.report import charts
from labctl.report.compare import FAULTS
from labctl.report.summary_text import NightVerdict

TRENDS_FILE = "trends.html"
_SKIP_ENTITIES = ("Loopback", "/_Total")  # the loopback NIC and typeperf's sums over instances
IDLE_SHARE = 0.05  # a server entity below this share of a chart's largest value is idle: not drawn


@dataclass(frozen=True)
class Trend:
    """One chart: a figure kind and statistic, per cell across nights."""

    title: str
    kind: str
    statistic: str
    unit: str
    why: str


TRENDS: tuple[Trend, ...] = (
    Trend("Boot time, mean per client", "boot_time_s", "mean", "s", "first network contact to agent up"),
    Trend("Boot time, slowest client", "boot_time_s", "max", "s", "the client the storm hit hardest"),
    Trend(
        "Retries, mean per client", "retries", "mean", "requests", "requests re-sent to the streaming server"
    ),
    Trend("Retries, worst client", "retries", "max", "requests", "the client that re-sent most"),
    Trend("Machines that never booted", "never_booted", "count", "machines", "booting role, no boot time"),
    Trend("Copy time, mean per copier", "copy_s", "mean", "s", "copy/reboot plans: 512 MB per copier"),
    Trend("Server CPU, peak", "cpu_pct", "peak", "%", "per server, over the criteria window"),
    Trend("NIC sent utilisation, peak", "nic_sent_util_pct", "peak", "%", "per NIC, over the window"),
    Trend("Disk queue, peak", "disk_queue_len", "peak", "requests", "per disk (the write cache in a storm)"),
    Trend("Disk latency, mean", "disk_latency_ms", "mean", "ms", "per disk, mean over the window"),
)


def _values(cell: CellFigures, t: Trend) -> dict[str, tuple[float, str]]:
    """The cell's values of a trend per entity ('' for per-machine figures): value and figure key."""
    return {
        f.entity: (f.value, f.key)
        for f in cell.figures.values()
        if f.kind == t.kind and f.statistic == t.statistic and not any(s in f.entity for s in _SKIP_ENTITIES)
    }


def _verdict(extra: Mapping[str, Any]) -> NightVerdict | None:
    data = extra.get("nightly")
    if not isinstance(data, dict):
        return None
    try:
        return NightVerdict.model_validate(data)
    except ValueError:  # written by another labctl version: the trend still shows the values
        return None


def _label(run: RunFigures) -> str:
    """A night's tick label: its UTC start, ``11-24 02:00``."""
    s = run.started_utc
    return f"{s[5:10]} {s[11:16]}" if len(s) >= 16 else run.run_id[:15]


@dataclass
class _Series:
    cell: str
    entity: str
    values: list[float]  # NaN: no value that night
    faults: list[int]  # nights the cell was a lab fault
    regressed: list[int]  # nights the value was flagged

    @property
    def peak(self) -> float:
        return max((x for x in self.values if not math.isnan(x)), default=0.0)


def _series(nights: Sequence[tuple[RunFigures, Mapping[str, Any]]], t: Trend) -> list[_Series]:
    """One series per cell (per entity for server figures); a server entity that stays below
    ``IDLE_SHARE`` of the chart's largest value is left out (an idle disk or NIC says nothing)."""
    faults: dict[str, list[int]] = {}
    found: dict[tuple[str, str], _Series] = {}
    for i, (run, extra) in enumerate(nights):
        v = _verdict(extra)
        for cell, c in run.cells.items():
            if c.outcome in FAULTS:  # it measured the lab, not the product: no value
                faults.setdefault(cell, []).append(i)
                continue
            for entity, (value, key) in _values(c, t).items():
                s = found.setdefault((cell, entity), _Series(cell, entity, [math.nan] * len(nights), [], []))
                s.values[i] = value
                if v is not None and key in v.regressed.get(cell, []):
                    s.regressed.append(i)
    top = max((s.peak for s in found.values()), default=0.0)
    out = []
    for (cell, entity), s in sorted(found.items()):
        if entity and s.peak < IDLE_SHARE * top:
            continue
        s.faults = faults.get(cell, [])
        out.append(s)
    return out


def _common_prefix(names: Sequence[str], sep: str) -> str:
    """The longest prefix all ``names`` share that ends with ``sep`` ('' for fewer than two)."""
    if len(set(names)) < 2:
        return ""
    head = names[0]
    for n in names[1:]:
        while not n.startswith(head):
            head = head[:-1]
    return head[: head.rfind(sep) + 1] if sep in head else ""


def _short(text: str, width: int = 26) -> str:
    """A legend label cut in the middle (the end tells NICs apart: ``... [NDIS VBD Client] _2``)."""
    return text if len(text) <= width else f"{text[: width // 2 - 1]}…{text[-(width // 2) :]}"


def _labels(lines: Sequence[_Series]) -> list[str]:
    """Legend labels without what every line shares (the plan and configuration of the cell ids,
    the server of the entities)."""
    cells = [s.cell for s in lines]
    entities = [s.entity for s in lines if s.entity]
    cut_cell, cut_entity = _common_prefix(cells, "-"), _common_prefix(entities, "/")
    out = []
    for s in lines:
        cell = s.cell[len(cut_cell) :] or s.cell
        entity = _short(s.entity[len(cut_entity) :] or s.entity) if s.entity else ""
        out.append(f"{cell} {entity}".strip())
    return out


def trend_chart(
    t: Trend, nights: Sequence[tuple[RunFigures, Mapping[str, Any]]], baseline_runs: Sequence[str] = ()
) -> str | None:
    """The SVG of one trend, or None when no night has the figure."""
    lines = _series(nights, t)
    if not any(not math.isnan(x) for s in lines for x in s.values):
        return None
    fig = charts.new_figure()
    ax = fig.add_subplot()
    xs = list(range(len(nights)))
    for i, (run, _) in enumerate(nights):
        if run.run_id in baseline_runs:
            ax.axvspan(i - 0.4, i + 0.4, color="#9e9e9e", alpha=0.18, linewidth=0)
    cells = list(dict.fromkeys(s.cell for s in lines))
    palette = dict(zip(cells, charts.colors(len(cells)), strict=True))
    styles: dict[str, str] = {}
    for s, label in zip(lines, _labels(lines), strict=True):  # colour: the cell; style: the entity
        style = styles.setdefault(s.entity, ("-", "--", ":", "-.")[len(styles) % 4])
        ax.plot(
            xs, s.values, style, marker="o", markersize=4, linewidth=1.5, color=palette[s.cell], label=label
        )
        if s.regressed:
            ax.plot(
                s.regressed,
                [s.values[i] for i in s.regressed],
                "o",
                markersize=11,
                markerfacecolor="none",
                markeredgecolor=charts.BAD,
                markeredgewidth=2,
            )
        if s.faults:
            ax.plot(s.faults, [0.0] * len(s.faults), "x", color=charts.BAD, markersize=9, markeredgewidth=2,
                    clip_on=False)  # fmt: skip
    if any(s.regressed for s in lines):
        ax.plot([], [], "o", markerfacecolor="none", markeredgecolor=charts.BAD, markeredgewidth=2,
                label="flagged as a regression")  # fmt: skip
    if any(s.faults for s in lines):
        ax.plot([], [], "x", color=charts.BAD, markeredgewidth=2, label="lab fault (no value)")
    step = max(1, math.ceil(len(nights) / 14))
    ticks = xs[::step] if xs[-1] in xs[::step] else [*xs[::step], xs[-1]]
    ax.set_xticks(ticks, [_label(nights[i][0]) for i in ticks], rotation=30, ha="right", fontsize=7)
    ax.get_xticklabels()[-1].set_fontweight("bold")  # the latest night: this report's
    ax.set_xlim(-0.5, len(nights) - 0.5)
    ax.set_ylim(bottom=0)
    ax.set_title(t.title, loc="left")
    ax.set_ylabel(t.unit)
    prefix = _common_prefix([s.cell for s in lines], "-")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title=f"{prefix}…" if prefix else "cell")
    return charts.svg(fig)


CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;margin:0;color:#1d2329;background:#f5f6f8}
header{background:#24313f;color:#fff;padding:16px 26px}
header h1{margin:0 0 4px 0;font-size:21px} header p{margin:2px 0;color:#cfd8e2;font-size:13px}
header a{color:#fff}
main{padding:6px 26px 36px 26px;max-width:1500px}
h2{font-size:17px;margin:24px 0 4px 0;border-bottom:1px solid #d6dbe1;padding-bottom:3px}
.note{color:#4a5560;font-size:13px;margin:4px 0 10px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:12px}
figure{background:#fff;border:1px solid #dde2e7;border-radius:6px;margin:0;padding:6px}
figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#4a5560;padding:3px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;background:#fff;font-size:12px}
th,td{border:1px solid #dde2e7;padding:3px 7px;text-align:left;white-space:nowrap}
th{background:#eef1f4} tr.current td{font-weight:bold}
.ok{color:#2e7d32} .warn{color:#ef6c00} .bad{color:#c62828;font-weight:bold}
"""


def _cls(outcome: str) -> str:
    o = outcome.lower()
    if o in ("pass", "passed"):
        return "ok"
    return "warn" if o in ("marginal", "running") else "bad" if o else ""


def _nights_table(
    nights: Sequence[tuple[RunFigures, Mapping[str, Any]]], current: str | None, baseline_runs: Sequence[str]
) -> str:
    cells = sorted({c for run, _ in nights for c in run.cells})
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cells)
    rows = [f"<tr><th>night (UTC)</th><th>run</th><th>run outcome</th><th>nightly verdict</th>{head}</tr>"]
    for run, extra in reversed(nights):  # newest first
        v = _verdict(extra)
        verdict = f"{v.verdict.value} (exit {v.exit_code})" if v is not None else "-"
        tags = " (baseline)" if run.run_id in baseline_runs else ""
        tds = []
        for c in cells:
            cf = run.cells.get(c)
            text = cf.outcome.value if cf is not None else ""
            if v is not None and c in v.regressed:
                text += ", regressed"
            tds.append(f'<td class="{_cls(text.split(",")[0])}">{html.escape(text)}</td>')
        rows.append(
            f'<tr class="{"current" if run.run_id == current else ""}"><td>{html.escape(_label(run))}</td>'
            f"<td>{html.escape(run.run_id)}{tags}</td>"
            f'<td class="{_cls(run.outcome)}">{html.escape(run.outcome)}</td>'
            f'<td class="{_cls(v.verdict.value if v else "")}">{html.escape(verdict)}</td>{"".join(tds)}</tr>'
        )
    return '<div class="scroll"><table>' + "".join(rows) + "</table></div>"


def store_name(url: str) -> str:
    """The results store as a reader may see it: a URL without its credentials, a local store by its
    file name (never the controller's absolute path)."""
    scheme, sep, rest = url.partition("://")
    if sep:
        rest = rest.split("@", 1)[-1]  # user:password@host
        return f"{scheme}://{rest.split('?', 1)[0]}"
    return Path(url).name or url


def trends_html(
    nights: Sequence[tuple[RunFigures, Mapping[str, Any]]],
    *,
    current: str | None = None,
    baseline_runs: Sequence[str] = (),
    source: str = "",
) -> str:
    """The trends page of one lab + plan (``nights`` oldest first; ``current``: this report's run)."""
    lab = nights[-1][0].lab if nights else ""
    plan = nights[-1][0].plan if nights else ""
    title = f"{plan} on {lab}: trends across nights" if nights else "trends across nights"
    meta = [f"{len(nights)} night(s)"]
    if nights:
        meta.append(f"{_label(nights[0][0])} to {_label(nights[-1][0])} UTC")
    if source:
        meta.append(f"from the results store {store_name(source)}")
    body = [
        f"<header><h1>{html.escape(title)}</h1><p>{html.escape(' · '.join(meta))}</p>"
        '<p><a href="index.html">Allure report</a> · <a href="figures.html">figures of this run</a> · '
        '<a href="../nightly.md">nightly summary</a></p></header><main>'
    ]
    if not nights:
        body.append('<p class="note">No finished run of this lab and plan in the store yet.</p>')
    else:
        body.append("<h2>Nights</h2>")
        body.append(
            '<p class="note">Newest first: each cell\'s outcome, and what the nightly concluded against '
            "the baseline (regressed: a figure outside the run-to-run noise in its bad direction).</p>"
        )
        body.append(_nights_table(nights, current, baseline_runs))
        body.append("<h2>Key figures per cell, night after night</h2>")
        body.append(
            '<p class="note">One line per cell. A red x: that night the cell was a lab fault and has no '
            "value; a red ring: the nightly flagged the value as a regression; grey bands: the baseline "
            "runs. Server figures per entity (line style), over the criteria window; idle entities are left out.</p>"
        )
        body.append('<div class="grid">')
        for t in TRENDS:
            svg = trend_chart(t, nights, baseline_runs)
            if svg is not None:
                caption = f"{t.kind} {t.statistic}: {t.why}"
                body.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
        body.append("</div>")
    body.append("</main>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def write_trends_page(
    run_dir: Path,
    nights: Sequence[tuple[RunFigures, Mapping[str, Any]]],
    *,
    current: str | None = None,
    baseline_runs: Sequence[str] = (),
    source: str = "",
) -> Path:
    """``<run>/report/trends.html`` (written atomically); returns its path."""
    target = Path(run_dir) / "report" / TRENDS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(
        trends_html(nights, current=current, baseline_runs=baseline_runs, source=source), encoding="utf-8"
    )
    tmp.replace(target)
    return target
