"""Records: the small types every layer shares, at the ground of labctl.

- :mod:`labctl.records.samples`: :class:`Sample`, :class:`Event` and the :class:`MetricSource`
  protocol;
- :mod:`labctl.records.series`: :class:`Series` (one metric of one entity over time) and its
  selection;
- :mod:`labctl.records.stats`: peak, mean, p95, time above, storm duration, baseline, gaps;
- :mod:`labctl.records.run_record`: the typed run record (``run.json``, cell summaries, per-client
  outcomes, verdicts) that the recorder writes and everything downstream reads.

Nothing here imports another part of labctl.
"""

from labctl.records.samples import Event, MetricSource, Sample
from labctl.records.series import Series, SeriesProvider

__all__ = ["Event", "MetricSource", "Sample", "Series", "SeriesProvider"]
