"""Allure results for the cells a run never handed to its Allure sink: the cell a killed run was in
(only its provisional summary, ``interrupted``, is in the folder). Written by the same
:class:`~labctl.recorder.sinks.AllureSink` into a separate folder that the report build adds to the
run's own ``allure-results`` (the run folder is not changed), so an interrupted cell is
``interrupted`` (broken) in Allure too, never missing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from labctl.recorder.cell_files import read_cell_records
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.sinks.allure import AllureSink, history_key
from labctl.records.run_record import RunOutcome
from labctl.report.charts import evidence_png

log = logging.getLogger(__name__)


def _known(results: Path) -> set[str]:
    """The history ids and story labels (cell ids) of the results already there: the sink's
    and allure-pytest's (format-1 runs) alike."""
    out: set[str] = set()
    for f in results.glob("*-result.json") if results.is_dir() else ():
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("historyId"), str):
            out.add(data["historyId"])
        for label in data.get("labels") or []:
            if (
                isinstance(label, dict)
                and label.get("name") == "story"
                and isinstance(label.get("value"), str)
            ):
                out.add(label["value"])
    return out


def fill_missing(run: Path, results: Path, into: Path) -> int:
    """Write an Allure result into ``into`` for every cell of ``run`` without one in ``results``,
    when the run had an Allure sink (``results`` exists) or was killed (``run.json`` still says
    running); the number written."""
    try:
        folder = RunFolder.open(run)
    except (FileNotFoundError, ValueError) as exc:
        log.debug("%s: no Allure results added (%s)", run, exc)
        return 0
    if not results.is_dir() and folder.info.outcome is not RunOutcome.RUNNING:
        return 0  # a run without Allure output gets none made up afterwards
    known = _known(results)
    missing = [
        r
        for r in read_cell_records(run).values()
        if r.cell not in known and history_key(folder.info.lab, r.summary.plan, r.cell) not in known
    ]
    if not missing:
        return 0
    sink = AllureSink(folder, chart=evidence_png, results_dir=into)
    for record in missing:
        sink.cell_finished(record)
    sink.run_finished(folder.info)
    return len(missing)
