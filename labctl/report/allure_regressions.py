"""A regression in the Allure report: the nightly's comparison written onto the cells' Allure results.

A cell that passed its criteria but moved beyond the run-to-run noise in its bad direction is a
*regression*: the Allure sink wrote it as passed (the comparison comes after the run), so the
nightly marks it before the report is built:

- status ``failed`` (Allure's history then shows the night red, as the store's history does for
  past nights, see :func:`labctl.store.history.allure_history_from_store`);
- message: ``regression against baseline <set>: <the responsible figures>`` and, on its second
  line, ``outcome: regression (Regression)``;
- a ``regression`` tag, and a step "comparison with the baseline" with one failed step per
  regressed figure (baseline -> tonight, the noise band).

A cell that failed or broke keeps its status; it gets the tag and the step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from labctl.report.compare import CellComparison, CellStatus, Comparison
from labctl.report.summary_text import FIGURES_PER_CELL, change_line

REGRESSION_TAG = "regression"


def _story(result: dict[str, Any]) -> str | None:
    return next((lb.get("value") for lb in result.get("labels", []) if lb.get("name") == "story"), None)


def _mark(result: dict[str, Any], c: CellComparison, baseline: str) -> dict[str, Any]:
    changes = [change_line(f) for f in c.regressed] or [c.reason or "verdict"]
    now = int(time.time() * 1000)
    step = {
        "name": f"comparison with the baseline {baseline}: {len(c.regressed)} figure(s) regressed",
        "status": "failed",
        "stage": "finished",
        "start": now,
        "stop": now,
        "steps": [
            {"name": text, "status": "failed", "stage": "finished", "start": now, "stop": now}
            for text in changes
        ],
    }
    out = dict(result)
    out["steps"] = [*result.get("steps", []), step]
    out["labels"] = [*result.get("labels", []), {"name": "tag", "value": REGRESSION_TAG}]
    if result.get("status") == "passed":
        out["status"] = "failed"
        out["statusDetails"] = {
            "message": f"regression against baseline {baseline}: "
            + "; ".join(changes[:FIGURES_PER_CELL])
            + "\noutcome: regression (Regression)",
            "trace": "\n".join(changes),
        }
    return out


def mark_regressions(results_dir: Path, comparison: Comparison) -> list[str]:
    """Mark the Allure results in ``results_dir`` of the cells ``comparison`` found regressed (see
    the module docstring). Returns the cells marked."""
    regressed = {c.cell: c for c in comparison.of(CellStatus.REGRESSED)}
    baseline = comparison.baseline_set or ", ".join(comparison.baseline_runs)
    marked = []
    for path in sorted(Path(results_dir).glob("*-result.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not ours to judge: Allure reports what it cannot read
        cell = _story(result)
        if cell not in regressed or REGRESSION_TAG in {
            lb.get("value") for lb in result.get("labels", []) if lb.get("name") == "tag"
        }:
            continue
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(_mark(result, regressed[cell], baseline)), encoding="utf-8")
        tmp.replace(path)
        marked.append(cell)
    return marked
