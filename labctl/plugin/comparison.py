"""Moved to :mod:`labctl.report.ha_comparison` (reads the typed cell summaries); drop this shim."""

from labctl.report.ha_comparison import CONFIGS, QUANTITIES, SideBySide, cell_key, side_by_side  # noqa: F401
