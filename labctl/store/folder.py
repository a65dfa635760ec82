"""Reading a run folder through the typed run record, for the store's importer and ``labctl compare``.

    folder = read_run_folder(Path("results/20261121-020000-boot_storm-a1b2"))
    folder.info            # RunInfo (run.json)
    folder.records         # {cell: CellRecord} (cells/<id>/summary.json + verdicts.json), run order
    folder.series()        # every series of series.csv

A cell folder whose summary is missing (a run killed mid-cell) or does not validate (an older,
untyped layout) is skipped and named in ``folder.skipped``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from labctl.errors import BadInputError
from labctl.recorder.series import read_series
from labctl.records.figures import RunFigures, run_figures
from labctl.records.run_record import CellRecord, CellSummary, CellVerdict, RunInfo
from labctl.records.series import Series

RUN_FILE = "run.json"
CELLS_DIR = "cells"


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e.get("loc", ()))
    return f"{where}: {e.get('msg', 'invalid')}" if where else str(e.get("msg", "invalid"))


@dataclass
class RunFolderData:
    path: Path
    info: RunInfo
    records: dict[str, CellRecord] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # cell -> why it was not read

    def series(self) -> list[Series]:
        return read_series(self.path)

    def figures(self) -> RunFigures:
        return run_figures(self.info, {c: (r.summary, r.verdict) for c, r in self.records.items()})


def read_run_info(path: Path) -> RunInfo:
    """``run.json`` of ``path`` as a :class:`RunInfo`; BadInputError naming the file otherwise."""
    f = Path(path) / RUN_FILE
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"{path}: not a run folder (no {RUN_FILE})") from None
    except (OSError, ValueError) as exc:
        raise BadInputError(f"{f}: unreadable: {exc}") from None
    try:
        return RunInfo.model_validate(data)
    except ValidationError as exc:
        raise BadInputError(
            f"{f}: not the typed run record (format {data.get('format', '?') if isinstance(data, dict) else '?'}): "
            f"{_first_error(exc)} (re-run with this labctl, or import runs written by it)"
        ) from None


def _read_model(f: Path, model: type[CellSummary] | type[CellVerdict]) -> CellSummary | CellVerdict:
    return model.model_validate(json.loads(f.read_text(encoding="utf-8")))


def read_run_folder(path: Path) -> RunFolderData:
    """A run folder's run.json and cell records (see the module docstring)."""
    path = Path(path)
    info = read_run_info(path)
    data = RunFolderData(path, info)
    root = path / CELLS_DIR
    found = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    order = [c for c in info.cells if c in found] + [c for c in found if c not in info.cells]
    for cell in order:
        try:
            summary = _read_model(root / cell / "summary.json", CellSummary)
        except FileNotFoundError:
            data.skipped[cell] = "no summary.json (the run stopped inside the cell)"
            continue
        except ValueError as exc:  # JSON or validation
            why = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
            data.skipped[cell] = f"summary.json: {why}"
            continue
        verdict = None
        try:
            verdict = _read_model(root / cell / "verdicts.json", CellVerdict)
        except FileNotFoundError:
            pass
        except ValueError as exc:
            why = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
            data.skipped[cell] = f"verdicts.json: {why}"
            continue
        assert isinstance(summary, CellSummary)
        data.records[cell] = CellRecord(
            summary=summary, verdict=verdict if isinstance(verdict, CellVerdict) else None
        )
    return data
