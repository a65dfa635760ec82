"""The paper's figure set from a run folder, as one standalone HTML page (inline SVG, no external
references): ``results/<run>/report/figures.html``.

- A results table, one row per cell: its status with the one-line reason, the clients' results
  and the servers' numbers over the window the criteria used (:mod:`labctl.report.figures_table`).
- Boot storm (:mod:`labctl.report.figures_storm`): boot time and retries vs group size; each
  server's CPU / used memory / NIC / disk queue over time, one line per group size.
- Copy/reboot matrix (:mod:`labctl.report.figures_matrix`): per copiers/rebooters split, the copy
  paths side by side (boot time, retries, copy time) and the server counters over time with one
  line per copy path.
- Standalone vs HA (:mod:`labctl.report.ha_comparison`): retries, queue and boot time side by side.

Reads ``run.json``, ``cells/*/summary.json``, ``cells/*/verdicts.json`` and ``series.csv`` through
the typed readers (:mod:`labctl.report.run_view`). A run whose process was killed still gets a
page: its last cell is shown as it was left.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from labctl.recorder.series import run_path
from labctl.records.run_record import RunOutcome
from labctl.report import figures_matrix, figures_storm, figures_vdi_waterfall, ha_comparison
from labctl.report.figures_table import outcome_class, table
from labctl.report.run_view import RunView, load_run
from labctl.report.timelines import Section

FIGURES_FILE = "figures.html"

CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;margin:0;color:#1d2329;background:#f6f7f9}
header{background:#1f2d3d;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px 0;font-size:22px}
header p{margin:2px 0;color:#c9d3de;font-size:13px}
header p.alert{color:#fff;background:#8a4b00;display:inline-block;padding:4px 8px;border-radius:4px;margin-top:6px}
main{padding:8px 28px 40px 28px;max-width:1500px}
nav{font-size:12px;margin:10px 0 0 0;line-height:1.7}
nav a{color:#1f4e79;margin-right:14px;text-decoration:none;white-space:nowrap;display:inline-block}
h2{font-size:18px;margin:28px 0 4px 0;border-bottom:1px solid #d5dae0;padding-bottom:4px}
h3{font-size:15px;margin:20px 0 4px 0}
p.intro{margin:4px 0 12px 0;color:#4a5560;font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(620px,1fr));gap:14px}
figure{background:#fff;border:1px solid #dde2e7;border-radius:6px;margin:0;padding:8px 8px 6px 8px}
figure svg{width:100%;height:auto;display:block}
figure.wide{grid-column:1 / -1}
figcaption{font-size:12px;color:#4a5560;padding:4px 4px 0 4px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;background:#fff;font-size:12px;margin-top:8px}
th,td{border:1px solid #dde2e7;padding:3px 7px;text-align:left;white-space:nowrap;vertical-align:top}
th{background:#eef1f4;white-space:normal;vertical-align:bottom;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}
td.bad{color:#c62828;font-weight:bold}
td.prov{font-style:italic;color:#555}
td.status{white-space:normal;min-width:90px;max-width:420px}
.badge{font-weight:bold;padding:0 5px;border-radius:3px;display:inline-block}
.badge.ok{color:#2e7d32} .badge.warn{color:#fff;background:#ef6c00} .badge.bad{color:#fff;background:#c62828}
.badge.int{color:#fff;background:#6a1b9a}
tr.notwhole td{background:#fbf7ee}
tr.reason td{border-top:none;white-space:normal;color:#4a5560;font-size:11px;padding:0 7px 3px 24px}
tr.cell.reasoned td{border-bottom:none}
p.note{font-size:12px;color:#4a5560}
.empty{background:#fff;border:1px dashed #c5ccd3;padding:16px;color:#4a5560}
footer{color:#7a8590;font-size:11px;padding:0 28px 20px 28px}
"""


def _header(view: RunView) -> str:
    info = view.info
    plan = info.plan if info is not None else "labctl run"
    meta = [f"run {view.path.name}"]
    alert = ""
    if info is not None:
        meta.append(f"lab {info.lab}" + (f" ({info.configuration})" if info.configuration else ""))
        meta.append(f"started {info.started.wall_utc}")
        meta.append(f"outcome {info.outcome.value}")
        if info.outcome is RunOutcome.RUNNING:
            alert = (
                "No end recorded: the run was killed (or is still running). Every cell below shows what it "
                "measured; the last one may have stopped mid-window."
            )
        elif info.reason:
            alert = info.reason
    meta.append(f"{len(view.cells)} cells")
    parts = [
        f"<header><h1>{html.escape(plan)}: figures</h1><p>{html.escape(' · '.join(meta))}</p>",
        f"<p>Figures in the style of {_papers(view)}, from this run folder (cells/*/summary.json "
        "for every number, series.csv for the lines over time). The Allure report is index.html next to "
        "this file.</p>",
    ]
    if alert:
        cls = outcome_class(info.outcome.value if info is not None else "")
        parts.append(f'<p class="alert {cls}">{html.escape(alert)}</p>')
    parts.append("</header>")
    return "".join(parts)


def _papers(view: RunView) -> str:
    """Which papers the run's figures follow: the 2007 streaming paper's storms, the 2012 VDI paper's."""
    vdi = any(c.is_vdi for c in view.cells)
    streaming = any(not c.is_vdi for c in view.cells) or not view.cells
    if vdi and streaming:
        return "the 2007 streaming paper and the 2012 VDI paper"
    return "the 2012 VDI paper" if vdi else "the 2007 streaming paper"


def _anchor(i: int) -> str:
    return f"s{i}"


def _sections(view: RunView) -> list[Section]:
    cells = view.cells
    return [
        *figures_storm.sections(cells),
        *figures_matrix.sections(cells),
        *ha_comparison.sections(cells),
        *figures_vdi_waterfall.sections(cells),  # the VDI storms', each with its logon waterfall
    ]


def figures_html(run: Any) -> str:
    """The figures page of a run folder as an HTML string."""
    view = load_run(run)
    sections = _sections(view)
    body = [_header(view), "<main>"]
    if sections:
        links = "".join(
            f'<a href="#{_anchor(i)}">{html.escape(s.title)}</a>'
            for i, s in enumerate(sections)
            if s.level == 2
        )
        body.append(f'<nav><a href="#cells">Results by cell</a>{links}</nav>')
    if view.cells:
        body.append('<h2 id="cells">Results by cell</h2>')
        if any(not c.is_vdi for c in view.cells):
            body.append(
                '<p class="intro">Status first, with the one-line reason. Boot time and retries per client as '
                "the streaming server reports them (the rebooters of a copy/reboot cell); the server's numbers "
                "are those of the cell's summary, over the window its criteria were judged on, for the "
                "streaming server and write-cache volume the cell names. Coverage: the lowest share of the "
                "window with samples among those series.</p>"
            )
        if any(c.is_vdi for c in view.cells):
            body.append(
                '<p class="intro">VDI storms: status first, with the one-line reason. Desktops that logged on '
                "and their logon durations; the arrays' IOPS per desktop in each phase (the 2012 paper's "
                "table 7: peak over desktops for boot and login, mean for steady state), their highest IOPS "
                "and latency; the ESXi hosts' highest CPU; and the response-time index as VSImax is read "
                "(saturated at N sessions, or not up to N, with the share of good desktops).</p>"
            )
        body.append(table(view.cells))
    if not sections:
        body.append(
            '<div class="empty">No figures: this run has no cell summaries with a group size or a copy '
            "path (cells/&lt;cell&gt;/summary.json). Was it stopped before its first cell began?</div>"
        )
    for i, sec in enumerate(sections):
        tag = f"h{sec.level}"
        body.append(
            f'<{tag} id="{_anchor(i)}">{html.escape(sec.title)}</{tag}><p class="intro">{html.escape(sec.intro)}</p>'
        )
        body.append('<div class="grid">')
        for f in sec.figures:
            cls = ' class="wide"' if f.wide else ""
            body.append(f"<figure{cls}>{f.svg}<figcaption>{html.escape(f.caption)}</figcaption></figure>")
        body.append("</div>")
    body.append("</main>")
    body.append(
        f"<footer>Generated by labctl {html.escape(_version(view))} from run {html.escape(view.path.name)}. Lab times are UTC; the files carry "
        "them as ISO 8601 and as Unix epoch seconds (see results/README.md).</footer>"
    )
    title = f"{view.info.plan if view.info else 'labctl run'}: figures"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} - {html.escape(view.path.name)}</title>"
        f"<style>{CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def _version(view: RunView) -> str:
    return view.info.labctl_version if view.info is not None and view.info.labctl_version else "?"


def write_figures_page(run: Any, out: Path | None = None) -> Path:
    path = run_path(run)
    target = out or path / "report" / FIGURES_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(figures_html(path), encoding="utf-8")
    tmp.replace(target)
    return target
