"""Recording: metric series and events of a run, written incrementally to its run folder.

- :mod:`labctl.recorder.recorder`: the background :class:`Recorder` and the :class:`MetricSource`
  protocol sources implement.
- :mod:`labctl.recorder.series`: ``series.csv`` / ``events.jsonl`` writers and readers.
- :mod:`labctl.records.stats`: peak, mean, p95, time above, storm duration, back to baseline.
- :mod:`labctl.recorder.cells`: ``cells/<cell-id>/summary.json`` and ``verdicts.json``.
"""

from labctl.recorder.cells import cell_id, read_cell_summaries, write_cell_summary
from labctl.recorder.recorder import MetricSource, Recorder
from labctl.recorder.series import RunSeries, read_events, read_series
from labctl.records.series import Series

__all__ = [
    "MetricSource",
    "Recorder",
    "RunSeries",
    "Series",
    "cell_id",
    "read_cell_summaries",
    "read_events",
    "read_series",
    "write_cell_summary",
]
