"""The run folder as a sink: each cell's ``summary.json`` and ``verdicts.json`` (written here and
nowhere else), the cell's id in ``run.json``, and the final ``run.json``."""

from __future__ import annotations

from labctl.recorder.cell_files import VERDICTS_FILE, cell_dir, write_cell_files
from labctl.recorder.runfolder import RunFolder
from labctl.records.run_record import CellRecord, CellSummary, Outcome, RunInfo

KILLED = "the run ended before this cell finished (killed?): what it recorded is in series.csv"


class RunFolderSink:
    def __init__(self, run: RunFolder):
        self.run = run

    def cell_started(self, summary: CellSummary) -> None:
        """A provisional summary when a cell starts (outcome ``interrupted`` unless given another),
        so the folder of a run that is killed still shows the cell; the record replaces it."""
        if summary.outcome is Outcome.PASS:
            summary = summary.model_copy(
                update={"outcome": Outcome.INTERRUPTED, "reason": summary.reason or KILLED}
            )
        self._write(CellRecord(summary=summary))

    def cell_finished(self, record: CellRecord) -> None:
        self._write(record)
        self.run.add_cell(record.cell)

    def run_finished(self, info: RunInfo) -> None:
        self.run.set_info(info)

    def _write(self, record: CellRecord) -> None:
        # redacted like every other file of the run (a reason may quote an endpoint's error)
        clean = CellRecord.model_validate(self.run.redactor.obj(record.model_dump(mode="json")))
        write_cell_files(self.run, clean)
        if clean.verdict is None:  # a cell measured again without a verdict: none is left behind
            (cell_dir(self.run, record.cell) / VERDICTS_FILE).unlink(missing_ok=True)
