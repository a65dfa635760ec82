"""Reports from a run folder (never from the lab itself).

- :mod:`labctl.report.allure_helpers`: what plans call under allure-pytest (labels, steps,
  attachments, criteria verdicts as steps with evidence), environment and categories files.
- :mod:`labctl.report.build`: ``labctl report``: Allure 3 single-file HTML, made offline, with
  history across runs; and the figures page.
- :mod:`labctl.report.figures`: the 2007 paper's figure set as one standalone HTML page.
- :mod:`labctl.report.charts`: the matplotlib charts both use.
- :mod:`labctl.report.offline`: strip every external reference from a generated page.
"""
