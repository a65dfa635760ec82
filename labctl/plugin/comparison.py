"""Standalone vs HA, side by side (2007 paper, "High Availability Observations").

Reads the cell summaries of the run folder only: for every cell measured in both configurations,
the mean and worst boot time and retries of the clients, and the write-cache disk queue (mean and
peak over the window). Written as ``ha_comparison.json`` and ``ha_comparison.csv`` in the run folder
and attached to the Allure test case as a table.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from typing import Any

from labctl.plugin.plans import PlanParams
from labctl.recorder.cells import read_cell_summaries, write_json_atomic
from labctl.recorder.runfolder import RunFolder

CONFIGS = ("standalone", "ha")
QUANTITIES = (
    "boot_time_mean_s",
    "boot_time_max_s",
    "retries_mean",
    "retries_max",
    "disk_queue_mean",
    "disk_queue_peak",
)


def cell_key(summary: dict[str, Any]) -> str | None:
    """The cell without its configuration: ``boot storm 50`` or ``copy/reboot 50x50 share_to_share``."""
    if summary.get("scenario") == "boot_storm" and summary.get("group_size") is not None:
        return f"boot storm {summary['group_size']}"
    if summary.get("scenario") == "copy_reboot":
        return f"copy/reboot {summary.get('copiers')}x{summary.get('rebooters')} {summary.get('copy_path')}"
    return None


def _figures(summary: dict[str, Any]) -> dict[str, float | None]:
    clients = summary.get("clients") or {}
    judged = [c for c in clients.values() if c.get("role", "rebooter") == "rebooter"]
    boots = [float(c["boot_time_s"]) for c in judged if c.get("boot_time_s") is not None]
    retries = [float(c["retries"]) for c in judged if c.get("retries") is not None]
    disk = summary.get("write_cache_disk")
    queue: dict[str, Any] = (
        (summary.get("metrics") or {}).get(f"typeperf/{disk}/disk_queue_len", {}) if disk else {}
    )
    return {
        "boot_time_mean_s": statistics.fmean(boots) if boots else None,
        "boot_time_max_s": max(boots) if boots else None,
        "retries_mean": statistics.fmean(retries) if retries else None,
        "retries_max": max(retries) if retries else None,
        "disk_queue_mean": queue.get("mean"),
        "disk_queue_peak": queue.get("peak"),
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


def side_by_side(run: RunFolder, params: PlanParams | None = None) -> SideBySide:
    by_cell: dict[str, dict[str, dict[str, Any]]] = {}
    for summary in read_cell_summaries(run).values():
        key, cfg = cell_key(summary), summary.get("configuration")
        if key is None or cfg not in CONFIGS:
            continue
        by_cell.setdefault(key, {})[cfg] = _figures(summary)
    table = SideBySide([{"cell": k, **v} for k, v in sorted(by_cell.items()) if all(c in v for c in CONFIGS)])
    write_json_atomic(run.path / "ha_comparison.json", {"configurations": CONFIGS, "rows": table.rows})
    text = table.csv()
    (run.path / "ha_comparison.csv").write_text(text, encoding="utf-8")
    try:
        from labctl.report import allure_helpers as A

        A.label_cell("ha_comparison", "side by side", "standalone vs ha")
        A.attach_text(text, "standalone vs HA (csv)")
        A.attach_json({"rows": table.rows}, "standalone vs HA")
    except Exception:  # Allure is a reporter here; the comparison files are already written
        pass
    return table
