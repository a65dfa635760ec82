"""Standalone vs HA, side by side (2007 paper, "High Availability Observations"), from the typed
cell summaries only.

For every cell measured in both configurations (the same scenario and parameters): the boot
time and session retries of the clients that booted in it (the storm, or the rebooters) and the
write-cache disk queue, mean and peak, from the summary's ``metrics`` (over the cell's window, for
each configuration's own write-cache volume: the streaming server's RAID 10 standalone, the
NAS's with HA). :func:`side_by_side` writes it as ``ha_comparison.json`` and
``ha_comparison.csv`` in the run folder; :func:`sections` draws it on the figures page.
"""

from __future__ import annotations

import csv
import io
import logging
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from labctl.recorder.atomic import write_json_atomic
from labctl.recorder.cell_files import read_cell_summaries
from labctl.recorder.series import run_path
from labctl.records.run_record import CellSummary, Outcome
from labctl.report import charts
from labctl.report.charts import Bars
from labctl.report.run_view import CellView, path_order
from labctl.report.timelines import Fig, Section, fig

log = logging.getLogger(__name__)

CONFIGS = ("standalone", "ha")
CONFIG_COLORS = {"standalone": "#1f4e79", "ha": "#c0504d"}
QUANTITIES = (
    "boot_time_mean_s",
    "boot_time_max_s",
    "retries_mean",
    "retries_max",
    "disk_queue_mean",
    "disk_queue_peak",
)
SKIPPED = (Outcome.INTERRUPTED, Outcome.ERROR)  # a cell that broke off is no fair side to compare


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)

    def __getitem__(self, name: str) -> Any:  # row["standalone"]["retries_mean"], as the dicts read
        return getattr(self, name)


class HaFigures(_Row):
    """One configuration's side of a cell."""

    cell: str  # the cell id it came from
    outcome: str
    boot_time_mean_s: float | None = None
    boot_time_min_s: float | None = None
    boot_time_max_s: float | None = None
    retries_mean: float | None = None
    retries_min: float | None = None
    retries_max: float | None = None
    write_cache_disk: str | None = None
    disk_queue_mean: float | None = None
    disk_queue_peak: float | None = None


class HaRow(_Row):
    cell: str  # the cell without its configuration: `boot storm 50`, `copy/reboot 50x50 share_to_share`
    standalone: HaFigures
    ha: HaFigures


def cell_key(summary: CellSummary) -> str | None:
    """The cell without its configuration: ``boot storm 50`` or ``copy/reboot 50x50 share_to_share``."""
    p = summary.parameters
    if summary.scenario == "boot_storm" and p.get("group_size") is not None:
        return f"boot storm {p['group_size']}"
    if summary.scenario == "copy_reboot" or p.get("copy_path"):
        return f"copy/reboot {p.get('copiers')}x{p.get('rebooters')} {p.get('copy_path')}"
    return None


def _order(row: HaRow) -> tuple[int, int, int, tuple[int, str]]:
    words = row.cell.split()
    if words[:2] == ["boot", "storm"]:
        return (0, int(words[2]) if words[2].isdigit() else 0, 0, (0, ""))
    c, _, r = words[1].partition("x")
    path = words[2] if len(words) > 2 else ""
    return (1, int(c) if c.isdigit() else 0, int(r) if r.isdigit() else 0, path_order(path))


def figures_of(summary: CellSummary) -> HaFigures:
    role = "rebooter" if summary.scenario == "copy_reboot" else None
    boots = summary.values("boot_time_s", role)
    retries = summary.values("retries", role)
    disk = summary.entities.get("write_cache_disk")
    queue = next(
        (m for m in summary.metrics.values() if disk and m.entity == disk and m.metric == "disk_queue_len"),
        None,
    )
    return HaFigures(
        cell=summary.cell,
        outcome=summary.outcome.value,
        boot_time_mean_s=statistics.fmean(boots) if boots else None,
        boot_time_min_s=min(boots) if boots else None,
        boot_time_max_s=max(boots) if boots else None,
        retries_mean=statistics.fmean(retries) if retries else None,
        retries_min=min(retries) if retries else None,
        retries_max=max(retries) if retries else None,
        write_cache_disk=disk,
        disk_queue_mean=queue.mean if queue else None,
        disk_queue_peak=queue.peak if queue else None,
    )


@dataclass
class SideBySide:
    rows: list[HaRow] = field(default_factory=list)

    def csv(self) -> str:
        buf = io.StringIO()
        cols = ["cell", *(f"{q}_{c}" for q in QUANTITIES for c in CONFIGS)]
        w = csv.DictWriter(buf, cols, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow({"cell": r.cell, **{f"{q}_{c}": r[c][q] for q in QUANTITIES for c in CONFIGS}})
        return buf.getvalue()

    def as_json(self) -> dict[str, Any]:
        return {"configurations": list(CONFIGS), "rows": [r.model_dump(mode="json") for r in self.rows]}


def comparison(summaries: Iterable[CellSummary]) -> SideBySide:
    """Every cell measured in both configurations (a cell that broke off is left out)."""
    sides: dict[str, dict[str, HaFigures]] = {}
    for s in summaries:
        key, cfg = cell_key(s), s.configuration
        if key is None or cfg not in CONFIGS or s.outcome in SKIPPED:
            continue
        sides.setdefault(key, {})[cfg] = figures_of(s)
    rows = [HaRow(cell=k, **v) for k, v in sides.items() if all(c in v for c in CONFIGS)]
    return SideBySide(sorted(rows, key=_order))


def side_by_side(run: Any, params: Any = None) -> SideBySide:
    """The comparison of a run folder, written as ``ha_comparison.json`` and ``.csv`` beside its
    cells, and attached to the Allure test that asks for it (inside a plan session)."""
    path = run_path(run)
    table = comparison(read_cell_summaries(path).values())
    write_json_atomic(path / "ha_comparison.json", table.as_json())
    text = table.csv()
    (path / "ha_comparison.csv").write_text(text, encoding="utf-8")
    try:
        from labctl.report import allure_helpers as A  # allure-pytest: only inside a plan session

        A.attach_text(text, "standalone vs HA (csv)")
        A.attach_json(table.as_json(), "standalone vs HA")
    except Exception as exc:  # Allure is a reporter here; the comparison files are written already
        log.debug("standalone vs HA not attached to Allure: %s", exc)
    return table


# --- the figures page ------------------------------------------------------------------------------


def _label(key: str) -> str:
    words = key.split()
    if words[:2] == ["boot", "storm"]:
        return words[2]  # the axis says "clients woken at once"
    c, _, r = words[1].partition("x")
    a, _, b = (words[2] if len(words) > 2 else "").partition("_to_")
    return f"{c}/{r}\n{a} →\n{b}"


def _bars(rows: Sequence[HaRow], mean: str, lo: str | None, hi: str | None) -> list[Bars]:
    out = []
    for cfg in CONFIGS:
        sides = [r[cfg] for r in rows]
        out.append(
            Bars(
                "HA" if cfg == "ha" else cfg,
                [s[mean] for s in sides],
                [s[lo] for s in sides] if lo else None,
                [s[hi] for s in sides] if hi else None,
                CONFIG_COLORS[cfg],
                [s.outcome in ("no_data", "lab_fault") for s in sides],
            )
        )
    return out


CHARTS = (
    # title, y label, bar, whisker from, whisker to, caption
    (
        "session retries",
        "retries per client",
        "retries_mean",
        "retries_min",
        "retries_max",
        "Mean session retries per client ({who}); whiskers from the fewest to the most.",
    ),
    (
        "write-cache disk queue, mean",
        "requests",
        "disk_queue_mean",
        None,
        None,
        "Average disk queue of each configuration's own write-cache volume over the cell's window ({disks}).",
    ),
    (
        "write-cache disk queue, peak",
        "requests",
        "disk_queue_peak",
        None,
        None,
        "Highest disk queue sample of each configuration's write-cache volume in the cell's window.",
    ),
    (
        "client boot time",
        "boot time (s)",
        "boot_time_mean_s",
        "boot_time_min_s",
        "boot_time_max_s",
        "Mean boot time per client ({who}); whiskers from the fastest to the slowest client.",
    ),
)


def _figs(rows: Sequence[HaRow], what: str, xlabel: str, who: str) -> list[Fig]:
    groups = [_label(r.cell) for r in rows]
    disks = "; ".join(
        sorted(
            {f"{cfg}: {r[cfg].write_cache_disk}" for r in rows for cfg in CONFIGS if r[cfg].write_cache_disk}
        )
    )
    wide = len(groups) > 8  # the whole matrix side by side: across the page
    out = []
    for title, ylabel, mean, lo, hi, caption in CHARTS:
        figure = charts.grouped_bars(
            f"{what}: {title}",
            groups,
            _bars(rows, mean, lo, hi),
            xlabel=xlabel,
            ylabel=ylabel,
            legend_title="configuration",
            width_in=2 * charts.WIDTH_IN if wide else charts.WIDTH_IN,
        )
        text = caption.format(who=who, disks=disks or "not named") + " Cells that broke off are left out."
        out.append(fig(figure, text, wide=wide))
    return out


def sections(cells: Sequence[CellView]) -> list[Section]:
    table = comparison(c.summary for c in cells)
    storms = [r for r in table.rows if r.cell.startswith("boot storm")]
    copies = [r for r in table.rows if not r.cell.startswith("boot storm")]
    figs: list[Fig] = []
    if storms:
        figs += _figs(storms, "Boot storm", "clients woken at once", "every client of the group")
    if copies:
        figs += _figs(copies, "Copy/reboot", "copiers / rebooters, copy path", "the rebooters")
    if not figs:
        return []
    return [
        Section(
            "Standalone vs HA",
            "Every cell measured in both configurations, side by side: the HA configuration moves the vDisks "
            "and write caches to the NAS's 8-disk RAID 10 and adds a second streaming server. The numbers "
            "are in ha_comparison.csv in the run folder.",
            figs,
        )
    ]
