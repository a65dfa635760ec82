"""An output that fails is said on the console as it happens and in the run's summary, once each
(the results store in its own words, the others by the sink set), and a store that lacks the run
when it ends sets ``not_stored`` (``labctl run`` exits 3 for it). No lab: a synthetic run's
records through the run's real outputs, and a store nothing answers for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labctl.plugin.runner import RunOutputs
from labctl.recorder.runfolder import RunFolder
from labctl.records.run_record import CellRecord
from labctl.store import StoreSink, open_store
from labctl.store.folder import read_run_folder
from tests.store.runs import make_run

NOBODY = "postgresql://nobody@127.0.0.1:9/none?connect_timeout=5"  # nothing listens on port 9


class Unwritable:
    """An output whose every write fails (a sink's own bug, or a share that went read-only)."""

    def cell_finished(self, record: CellRecord) -> None:
        raise PermissionError(13, "Permission denied", "/mnt/reports/allure")

    def run_finished(self, info: Any) -> None:
        return None


def test_a_store_that_goes_away_and_an_output_that_fails_are_said_once_each(tmp_path: Path) -> None:
    data = read_run_folder(make_run(tmp_path, seed=3, group_sizes=(1, 5)))
    folder = RunFolder.open(data.path)
    said: list[str] = []
    store = StoreSink(open_store(NOBODY), data.info, data.path, say=said.append)
    outputs = RunOutputs(folder, store=store, say=said.append)
    for record in data.records.values():
        sinks = outputs.sinks()
        sinks.sinks.append(Unwritable())
        sinks.cell_finished(record)
    outputs.finish(data.info)

    store_lines = [s for s in said if s.startswith("results store")]
    assert len(store_lines) == 2, said  # the first failure, then the import at the end that failed too
    assert f"labctl runs import {folder.run_id}" in store_lines[-1]
    other = [s for s in said if s.startswith("output Unwritable.cell_finished")]
    assert len(other) == len(data.records) and "the run goes on" in other[0], said
    assert outputs.not_stored

    summary = outputs.summary_lines()
    assert len(summary) == 2, summary
    assert summary[0].startswith("results store postgresql://nobody@127.0.0.1:9/none")
    assert f"labctl runs import {folder.run_id}" in summary[0]
    assert summary[1].startswith(f"output Unwritable failed {len(data.records)} time(s)"), summary


def test_a_store_that_comes_back_before_the_run_ends_gets_it_whole_and_is_no_failure(tmp_path: Path) -> None:
    data = read_run_folder(make_run(tmp_path / "results", seed=4, group_sizes=(1,)))
    root = tmp_path / "store"
    root.mkdir()
    (root / "runs").write_text("not a folder")  # every write of a run fails until it is removed
    said: list[str] = []
    store = StoreSink(open_store(f"duckdb:{root}"), data.info, data.path, say=said.append)
    outputs = RunOutputs(RunFolder.open(data.path), store=store, say=said.append)
    for record in data.records.values():
        outputs.sinks().cell_finished(record)
    (root / "runs").unlink()
    outputs.finish(data.info)
    assert not outputs.not_stored
    (line,) = outputs.summary_lines()
    assert "failed during the run" in line and "imported whole" in line, line
