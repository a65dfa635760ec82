"""Nights for the nightly's unit tests: synthetic boot-storm run folders (tests/store/runs.py, the
typed run record without the simulator), read back as the comparison and the trends see them."""

from __future__ import annotations

from pathlib import Path

from labctl.records.figures import RunFigures
from labctl.report.compare import Comparison, compare
from labctl.store.folder import read_run_folder
from tests.store.runs import cell_id, make_run

__all__ = ["cell_id", "compared", "figures", "make_run"]


def figures(path: Path) -> RunFigures:
    return read_run_folder(path).figures()


def compared(run: Path, *baselines: Path) -> Comparison:
    return compare(figures(run), [figures(b) for b in baselines], baseline_set="set-1")
