"""The per-cell files of a run folder: ``cells/<cell-id>/summary.json`` (a
:class:`~labctl.records.run_record.CellSummary`) and ``verdicts.json`` (a
:class:`~labctl.records.run_record.CellVerdict`).

A *cell* is one point of a plan's matrix (one group size of the boot storm, one copiers /
rebooters / copy-path combination of the copy/reboot matrix). Its id labels its rows in
``series.csv`` and ``events.jsonl`` and names its folder.

Written once per cell, atomically, by :class:`~labctl.recorder.sinks.RunFolderSink` only (through
:func:`write_cell_files`); read back through the models by everything downstream. The readers are
tolerant: a cell folder without its files (a run killed mid-cell), a file that does not parse or
does not validate is skipped with a warning, and format-1 files of older runs are upgraded.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from labctl.inventory.userfile import UserFileError, load_user_json
from labctl.recorder.atomic import write_json_atomic
from labctl.recorder.legacy import summary_from_v1, verdict_from_v1
from labctl.recorder.series import run_path
from labctl.records.run_record import FORMAT_VERSION, CellRecord, CellSummary, CellVerdict, Outcome

log = logging.getLogger(__name__)

CELLS_DIR = "cells"
SUMMARY_FILE = "summary.json"
VERDICTS_FILE = "verdicts.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cell_id(*parts: object) -> str:
    """A folder-safe cell id from its parts: ``cell_id("boot_storm", "standalone", 50)`` ->
    ``boot_storm-standalone-050`` (numbers zero-padded so ids sort the way a person expects, and
    ``-k boot_storm-standalone-050`` selects exactly one cell)."""
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
    """``<run>/cells/<cell>``; refuses an id that is not folder-safe."""
    if cell != cell_id(cell) or cell in (".", ".."):
        raise ValueError(f"cell id {cell!r} is not folder-safe (build it with cell_id(...))")
    return run_path(run) / CELLS_DIR / cell


def write_cell_files(run: Any, record: CellRecord) -> list[Path]:
    """``summary.json`` and (when the cell was judged) ``verdicts.json`` of one cell. Only the
    run-folder sink calls this: one writer per file."""
    folder = cell_dir(run, record.cell)
    written = [write_json_atomic(folder / SUMMARY_FILE, record.summary)]
    if record.verdict is not None:
        written.append(write_json_atomic(folder / VERDICTS_FILE, record.verdict))
    return written


# --- reading ---------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    try:  # a user's file: regular (no symlink to elsewhere), bounded, shallow (inventory.userfile)
        data = load_user_json(path, what=path.name, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except (OSError, UserFileError) as exc:
        log.warning("%s: unreadable, skipped (%s)", path, exc)
        return None
    if not isinstance(data, dict):
        log.warning("%s: not a JSON object, skipped", path)
        return None
    return data


def _cell_dirs(run: Any) -> list[Path]:
    root = run_path(run) / CELLS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def read_cell_verdict(run: Any, cell: str) -> CellVerdict | None:
    """One cell's verdicts (None when it has none or they do not read)."""
    path = cell_dir(run, cell) / VERDICTS_FILE
    data = _load(path)
    if data is None:
        return None
    try:
        if data.get("format", 1) >= FORMAT_VERSION:
            return CellVerdict.model_validate(data)
        return verdict_from_v1(data, cell)
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        log.warning("%s: does not match the verdict model, skipped (%s)", path, _first_line(exc))
        return None


def read_cell_summary(run: Any, cell: str) -> CellSummary | None:
    """One cell's summary (None when it has none or it does not read)."""
    path = cell_dir(run, cell) / SUMMARY_FILE
    data = _load(path)
    if data is None:
        return None
    try:
        if data.get("format", 1) >= FORMAT_VERSION:
            return CellSummary.model_validate(data)
        verdict = read_cell_verdict(run, cell)
        return summary_from_v1(data, cell, verdict.outcome if verdict is not None else None)
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        log.warning("%s: does not match the summary model, skipped (%s)", path, _first_line(exc))
        return None


def read_cell_summaries(run: Any) -> dict[str, CellSummary]:
    """Every readable cell summary of a run, by cell id, in id order."""
    out: dict[str, CellSummary] = {}
    for d in _cell_dirs(run):
        s = read_cell_summary(run, d.name)
        if s is not None:
            out[d.name] = s
    return out


def read_cell_verdicts(run: Any) -> dict[str, CellVerdict]:
    """Every readable cell verdict of a run, by cell id, in id order."""
    out: dict[str, CellVerdict] = {}
    for d in _cell_dirs(run):
        v = read_cell_verdict(run, d.name)
        if v is not None:
            out[d.name] = v
    return out


def read_cell_records(run: Any) -> dict[str, CellRecord]:
    """Every cell with a readable summary, with its verdict when it has one."""
    verdicts = read_cell_verdicts(run)
    return {c: CellRecord(summary=s, verdict=verdicts.get(c)) for c, s in read_cell_summaries(run).items()}


def cell_outcomes(run: Any) -> list[Outcome]:
    """The outcome of every cell with a readable summary (for the run's own outcome)."""
    return [s.outcome for s in read_cell_summaries(run).values()]


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "-"
        more = f" and {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
        return f"{where}: {err['msg']}{more}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
