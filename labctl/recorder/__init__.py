"""Recording: metric series and events of a run, the run folder, and the outputs of its cells.

- :mod:`labctl.recorder.recorder`: the background :class:`Recorder` (coverage, per-endpoint errors).
- :mod:`labctl.recorder.series`: ``series.csv`` / ``events.jsonl`` writers and readers.
- :mod:`labctl.recorder.runfolder`: the run folder and its ``run.json``.
- :mod:`labctl.recorder.cell_files`: ``cells/<cell-id>/summary.json`` and ``verdicts.json``, typed.
- :mod:`labctl.recorder.cell_record`: the cell runner's seam: a finished or broken cell as a record.
- :mod:`labctl.recorder.sinks`: the outputs every cell record goes to (run folder, Allure, JUnit).
- :mod:`labctl.recorder.redact`: nothing written holds a secret value.
"""

from labctl.recorder.cell_files import (
    cell_id,
    read_cell_records,
    read_cell_summaries,
    read_cell_verdicts,
)
from labctl.recorder.cell_record import broken_record, judged_record
from labctl.recorder.recorder import MetricSource, Recorder, SourceFault
from labctl.recorder.runfolder import RunFolder, read_run_info
from labctl.recorder.series import RunSeries, read_events, read_series
from labctl.records.series import Series

__all__ = [
    "MetricSource",
    "Recorder",
    "RunFolder",
    "RunSeries",
    "Series",
    "SourceFault",
    "broken_record",
    "cell_id",
    "judged_record",
    "read_cell_records",
    "read_cell_summaries",
    "read_cell_verdicts",
    "read_events",
    "read_run_info",
    "read_series",
]
