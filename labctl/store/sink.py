"""``StoreSink``: a run goes into the results store as it is written, cell by cell.

    sinks = SinkSet(run, [RunFolderSink(run), ..., StoreSink(open_store(url), run.info, run.path)])

Implements the recorder's output-sink protocol (``cell_finished(record[, data])``,
``run_finished(info)``). The run's row is written with the first cell (``outcome: running``) and
rewritten when it ends; each cell's rows replace what the store had of that cell; its samples go in
batches, from the recorder's series (``data``) or else from the run folder's ``series.csv``.
Samples recorded outside any cell reach the store with ``labctl runs import`` only.

A store that fails never costs the run anything (the sink is one output among the run folder,
Allure and JUnit, and the runner's sink set logs what a sink raises): after the first failure the
sink says so once (``say``), stops writing cell by cell (a store that is down would cost each cell
its connection timeout), and when the run ends imports the whole folder once more, which replaces
whatever half the store got. If that fails too, ``run_finished`` raises a :class:`StoreError`
naming the ``labctl runs import`` command that adds the run later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from labctl.errors import LabctlError
from labctl.recorder.series import read_series
from labctl.records.run_record import CellRecord, RunInfo
from labctl.records.series import Series, SeriesProvider
from labctl.store.base import ResultsStore, StoreError
from labctl.store.importer import SAMPLE_BATCH_ROWS, import_run
from labctl.store.rows import batched, sample_rows
from labctl.store.urls import safe_url

log = logging.getLogger(__name__)


class StoreSink:
    """Writes a run's record to a :class:`ResultsStore` as the cells finish."""

    # the LabctlError and OSError it catches it says through ``say``, in its own words: the
    # runner's sink set does not repeat them
    says_failures = True

    def __init__(
        self,
        store: ResultsStore,
        info: RunInfo,
        folder: Path | None = None,
        *,
        batch_rows: int = SAMPLE_BATCH_ROWS,
        say: Callable[[str], None] = log.warning,
    ):
        self.store = store
        self.info = info
        self.folder = Path(folder) if folder is not None else None
        self.batch_rows = batch_rows
        self.say = say  # one line a person must see: the store failed, and what to do
        self._seq = 0
        self._started = False
        self.failed: str | None = None  # the first failure's one line (None: every write went in)

    @property
    def _folder_text(self) -> str | None:
        return str(self.folder.resolve()) if self.folder is not None else None

    def _series(self, cell: str, data: SeriesProvider | None) -> list[Series]:
        if data is not None:
            return data.series(cell=cell)
        if self.folder is not None:
            return read_series(self.folder, cell=cell)
        return []

    def _why(self, exc: Exception) -> str:
        """The first line of what failed, without the store's URL the message starts with."""
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        return first.removeprefix(f"{safe_url(self.store.url)}: ")

    def _failing(self, exc: Exception, when: str) -> None:
        line = self._why(exc)
        if self.failed is None:
            self.failed = line
            self.say(
                f"results store {safe_url(self.store.url)}: {when} failed ({line}); the run folder and its "
                "verdicts are kept, and the run goes into the store once more when it ends"
            )

    def cell_finished(self, record: CellRecord, data: SeriesProvider | None = None) -> None:
        self._seq += 1
        if self.failed is not None:
            return  # the store failed earlier: the whole run is imported when it ends
        run_id = self.info.run_id
        try:
            if not self._started:
                self.store.add_run(self.info, self._folder_text)
                self._started = True
            self.store.add_cell(run_id, record, self._seq - 1)
            rows = sample_rows(self._series(record.cell, data), cell=record.cell)
            self.store.replace_samples(run_id, record.cell, batched(rows, self.batch_rows))
        except (LabctlError, OSError) as exc:
            self._failing(exc, f"writing cell {record.cell}")

    def run_finished(self, info: RunInfo) -> None:
        self.info = info
        if self.failed is None:
            try:
                self.store.finish_run(info, self._folder_text)
                self._started = True
                return
            except (LabctlError, OSError) as exc:
                self._failing(exc, "finishing the run")
        if self.folder is None:
            raise StoreError(f"{safe_url(self.store.url)}: run {info.run_id} not stored: {self.failed}")
        try:
            import_run(self.store, self.folder)
        except (LabctlError, OSError) as exc:
            first = self._why(exc)
            self.say(
                f"results store {safe_url(self.store.url)}: run {info.run_id} is not in the store ({first}); "
                f"add it later with `labctl runs import {info.run_id}`"
            )
            raise StoreError(
                f"{safe_url(self.store.url)}: run {info.run_id} not stored ({first}); "
                f"labctl runs import {info.run_id}"
            ) from exc
        self._started = True
        self.say(
            f"results store {safe_url(self.store.url)}: run {info.run_id} imported whole after the failure"
        )
