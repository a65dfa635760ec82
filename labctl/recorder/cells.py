"""The cell files' former, untyped entry points, kept for the code that still calls them (the
pytest plugin's ``plan_cell``, the figures page, ``labctl compare`` and the HA comparison).

New code uses :mod:`labctl.recorder.cell_files` (typed readers) and the run-folder sink (the one
writer of the cell files). Remove this module once nothing imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labctl.recorder.atomic import write_json_atomic
from labctl.recorder.cell_files import (
    CELLS_DIR,
    SUMMARY_FILE,
    VERDICTS_FILE,
    cell_dir,
    cell_id,
)
from labctl.recorder.cell_files import read_cell_summaries as read_typed_summaries
from labctl.recorder.legacy import summary_to_v1

__all__ = [
    "CELLS_DIR",
    "SUMMARY_FILE",
    "VERDICTS_FILE",
    "cell_dir",
    "cell_id",
    "read_cell_summaries",
    "write_cell_summary",
    "write_json_atomic",
]


def write_cell_summary(run: Any, cell: str, summary: dict[str, Any]) -> Path:
    """Write a format-1 ``cells/<cell>/summary.json`` (a plain dict; models in it are dumped)."""
    return write_json_atomic(cell_dir(run, cell) / SUMMARY_FILE, {"cell": cell, **summary})


def read_cell_summaries(run: Any) -> dict[str, dict[str, Any]]:
    """Every cell summary of a run as a format-1 dict (format-2 files flattened), by cell id."""
    return {c: summary_to_v1(s) for c, s in read_typed_summaries(run).items()}
