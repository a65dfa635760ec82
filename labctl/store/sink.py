"""``StoreSink``: a run goes into the results store as it is written, cell by cell.

    sinks = SinkSet(run, [RunFolderSink(run), ..., StoreSink(open_store(url), run.info, run.path)])

Implements the recorder's output-sink protocol (``cell_finished(record[, data])``,
``run_finished(info)``). The run's row is written with the first cell (``outcome: running``) and
rewritten when it ends; each cell's rows replace what the store had of that cell; its samples go in
batches, from the recorder's series (``data``) or else from the run folder's ``series.csv``.
Samples recorded outside any cell reach the store with ``labctl runs import`` only.
"""

from __future__ import annotations

from pathlib import Path

from labctl.recorder.series import read_series
from labctl.records.run_record import CellRecord, RunInfo
from labctl.records.series import Series, SeriesProvider
from labctl.store.base import ResultsStore
from labctl.store.importer import SAMPLE_BATCH_ROWS
from labctl.store.rows import batched, sample_rows


class StoreSink:
    """Writes a run's record to a :class:`ResultsStore` as the cells finish."""

    def __init__(
        self,
        store: ResultsStore,
        info: RunInfo,
        folder: Path | None = None,
        *,
        batch_rows: int = SAMPLE_BATCH_ROWS,
    ):
        self.store = store
        self.info = info
        self.folder = Path(folder) if folder is not None else None
        self.batch_rows = batch_rows
        self._seq = 0
        self._started = False

    @property
    def _folder_text(self) -> str | None:
        return str(self.folder.resolve()) if self.folder is not None else None

    def _series(self, cell: str, data: SeriesProvider | None) -> list[Series]:
        if data is not None:
            return data.series(cell=cell)
        if self.folder is not None:
            return read_series(self.folder, cell=cell)
        return []

    def cell_finished(self, record: CellRecord, data: SeriesProvider | None = None) -> None:
        run_id = self.info.run_id
        if not self._started:
            self.store.add_run(self.info, self._folder_text)
            self._started = True
        self.store.add_cell(run_id, record, self._seq)
        self._seq += 1
        rows = sample_rows(self._series(record.cell, data), cell=record.cell)
        self.store.replace_samples(run_id, record.cell, batched(rows, self.batch_rows))

    def run_finished(self, info: RunInfo) -> None:
        self.info = info
        self.store.finish_run(info, self._folder_text)
        self._started = True
