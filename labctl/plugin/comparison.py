"""Standalone vs HA, side by side (2007 paper, "High Availability Observations").

A report over the run folder only: for every cell measured in both configurations, the mean and
worst boot time and retries of the clients that booted in it (the storm, or the rebooters), and
the write-cache disk queue (mean and peak over the cell's window, from the summary's metrics, for
each configuration's own write-cache disk). Written as ``ha_comparison.json`` and
``ha_comparison.csv`` in the run folder and attached to the Allure test case as a table.

Reads the typed cell summaries; belongs with the reports (``labctl/report``) once they read the
typed run record, and stays here until then.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from typing import Any

from labctl.recorder.atomic import write_json_atomic
from labctl.recorder.cell_files import read_cell_summaries
from labctl.records.run_record import CellSummary, Outcome

CONFIGS = ("standalone", "ha")
QUANTITIES = (
    "boot_time_mean_s",
    "boot_time_max_s",
    "retries_mean",
    "retries_max",
    "disk_queue_mean",
    "disk_queue_peak",
)


def cell_key(summary: CellSummary) -> str | None:
    """The cell without its configuration: ``boot storm 50`` or ``copy/reboot 50x50 share_to_share``."""
    p = summary.parameters
    if summary.scenario == "boot_storm" and p.get("group_size") is not None:
        return f"boot storm {p['group_size']}"
    if summary.scenario == "copy_reboot":
        return f"copy/reboot {p.get('copiers')}x{p.get('rebooters')} {p.get('copy_path')}"
    return None


def _figures(summary: CellSummary) -> dict[str, float | None]:
    role = "rebooter" if summary.scenario == "copy_reboot" else None
    boots = summary.values("boot_time_s", role)
    retries = summary.values("retries", role)
    disk = summary.entities.get("write_cache_disk")
    queue = summary.metric("typeperf", disk, "disk_queue_len") if disk else None
    return {
        "boot_time_mean_s": statistics.fmean(boots) if boots else None,
        "boot_time_max_s": max(boots) if boots else None,
        "retries_mean": statistics.fmean(retries) if retries else None,
        "retries_max": max(retries) if retries else None,
        "disk_queue_mean": queue.mean if queue else None,
        "disk_queue_peak": queue.peak if queue else None,
    }


@dataclass
class SideBySide:
    rows: list[dict[str, Any]] = field(default_factory=list)

    def csv(self) -> str:
        buf = io.StringIO()
        cols = ["cell", *(f"{q}_{c}" for q in QUANTITIES for c in CONFIGS)]
        w = csv.DictWriter(buf, cols, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow({"cell": r["cell"], **{f"{q}_{c}": r[c].get(q) for q in QUANTITIES for c in CONFIGS}})
        return buf.getvalue()


def side_by_side(run: Any) -> SideBySide:
    by_cell: dict[str, dict[str, dict[str, float | None]]] = {}
    for summary in read_cell_summaries(run).values():
        key, cfg = cell_key(summary), summary.configuration
        if key is None or cfg not in CONFIGS or summary.outcome in (Outcome.INTERRUPTED, Outcome.ERROR):
            continue
        by_cell.setdefault(key, {})[cfg] = _figures(summary)
    table = SideBySide([{"cell": k, **v} for k, v in sorted(by_cell.items()) if all(c in v for c in CONFIGS)])
    write_json_atomic(run.path / "ha_comparison.json", {"configurations": CONFIGS, "rows": table.rows})
    text = table.csv()
    (run.path / "ha_comparison.csv").write_text(text, encoding="utf-8")
    try:
        from labctl.report import allure_helpers as A  # allure-pytest: only in a plan session

        A.label_cell("ha_comparison", "side by side", "standalone vs ha")
        A.attach_text(text, "standalone vs HA (csv)")
        A.attach_json({"rows": table.rows}, "standalone vs HA")
    except Exception:  # Allure is a reporter here; the comparison files are already written
        pass
    return table
