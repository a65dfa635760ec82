"""Reading a run folder through the typed run record, for the store's importer and ``labctl compare``.

    folder = read_run_folder(Path("results/20261121-020000-boot_storm-a1b2"))
    folder.info            # RunInfo (run.json)
    folder.records         # {cell: CellRecord} (cells/<id>/summary.json + verdicts.json), run order
    folder.series()        # every series of series.csv

A cell folder whose summary is missing (a run killed mid-cell) or does not validate (an older,
untyped layout) is skipped and named in ``folder.skipped``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from labctl.errors import BadInputError
from labctl.recorder.cell_files import CELLS_DIR, read_cell_records
from labctl.recorder.runfolder import RUN_FILE, read_run_info
from labctl.recorder.series import read_series
from labctl.records.figures import RunFigures, run_figures
from labctl.records.run_record import CellRecord, RunInfo
from labctl.records.series import Series


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


def read_run_folder(path: Path) -> RunFolderData:
    """A run folder's run.json and cell records, through the recorder's typed readers (older
    format-1 folders are read too); see the module docstring."""
    path = Path(path)
    info = read_run_info(path)
    if info is None:
        raise BadInputError(f"{path}: not a run folder, or its {RUN_FILE} does not read (see the log)")
    records = read_cell_records(path)
    root = path / CELLS_DIR
    found = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    order = [c for c in info.cells if c in records] + [
        c for c in found if c in records and c not in info.cells
    ]
    skipped = {
        c: "no readable summary.json (the run stopped inside the cell, or it does not match the model)"
        for c in found
        if c not in records
    }
    return RunFolderData(path, info, {c: records[c] for c in order}, skipped)
