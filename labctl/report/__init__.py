"""Reports from a run folder (never from the lab itself), reading the typed run record.

- :mod:`labctl.report.run_view`: a run folder as the reports see it (typed summaries, verdicts,
  the figure series; a killed cell's numbers over what it recorded).
- :mod:`labctl.report.figures`: the 2007 paper's figure set as one standalone HTML page, with
  :mod:`~labctl.report.figures_table` (results by cell), :mod:`~labctl.report.figures_storm`
  (boot storm), :mod:`~labctl.report.figures_matrix` (copy/reboot matrix),
  :mod:`~labctl.report.ha_comparison` (standalone vs HA), :mod:`~labctl.report.timelines`
  (counters over time, gaps) and :mod:`~labctl.report.counters` (which series for a server).
- :mod:`labctl.report.charts`: the matplotlib charts (also the Allure sink's evidence charts).
- :mod:`labctl.report.build`: ``labctl report``: Allure 3 single-file HTML, made offline, with
  history across runs (and :mod:`~labctl.report.allure_fill`: a killed run's last cell); and the
  figures page.
- :mod:`labctl.report.allure_helpers`: labels, steps and attachments for a plan under
  allure-pytest; environment and categories files.
- :mod:`labctl.report.offline`: strip every external reference from a generated page.
- :mod:`labctl.report.compare`: ``labctl compare``.
"""
