"""Per-cell files of a run folder: ``cells/<cell-id>/summary.json`` and ``verdicts.json``.

A *cell* is one point of a plan's matrix (one group size of the boot storm, one copiers/rebooters
/copy-path combination of the copy/reboot matrix). Its id labels its rows in ``series.csv`` and
``events.jsonl`` and names its folder. The summary's fields are documented in
``results/README.md``; the figures page reads them.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from labctl.recorder.series import run_path

CELLS_DIR = "cells"
SUMMARY_FILE = "summary.json"
VERDICTS_FILE = "verdicts.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cell_id(*parts: object) -> str:
    """A folder-safe cell id from its parts: ``cell_id("boot_storm", "standalone", 50)`` ->
    ``boot_storm-standalone-050`` (numbers zero-padded so ids sort the way a person expects)."""
    out = []
    for p in parts:
        if p is None or p == "":
            continue
        text = f"{p:03d}" if isinstance(p, int) and not isinstance(p, bool) and p >= 0 else str(p)
        out.append(_UNSAFE.sub("_", text).strip("._") or "_")
    if not out:
        raise ValueError("a cell id needs at least one part")
    return "-".join(out)


def cell_dir(run: Any, cell: str) -> Path:
    if cell != cell_id(cell) or cell in (".", ".."):
        raise ValueError(f"cell id {cell!r} is not folder-safe (build it with cell_id(...))")
    return run_path(run) / CELLS_DIR / cell


def _jsonable(x: Any) -> Any:
    """JSON without NaN/Infinity (not JSON; pandas and browsers choke): they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


def write_json_atomic(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps(_jsonable(data), indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)
    return path


def write_cell_summary(run: Any, cell: str, summary: dict[str, Any]) -> Path:
    """Write ``cells/<cell>/summary.json`` (atomically: a reader never sees half a file)."""
    data = {"cell": cell, **summary}
    return write_json_atomic(cell_dir(run, cell) / SUMMARY_FILE, data)


def read_cell_summaries(run: Any) -> dict[str, dict[str, Any]]:
    """Every cell summary of a run, by cell id, in id order. Unreadable files are skipped."""
    root = run_path(run) / CELLS_DIR
    out: dict[str, dict[str, Any]] = {}
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        f = d / SUMMARY_FILE
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            data.setdefault("cell", d.name)
            out[d.name] = data
    return out
