"""A secret that reaches a cell's record (an endpoint's error quoting a password, a plain-text
password that slipped into a lab) is masked in every output of the run: the run folder's files,
``junit.xml``, the Allure results and the results store, because every sink gets its records
through :class:`~labctl.recorder.sinks.SinkSet`, which redacts them once for all."""

from __future__ import annotations

from pathlib import Path

from labctl.inventory.load import load_lab
from labctl.recorder import broken_record
from labctl.recorder.redact import Redactor
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.sinks import AllureSink, JUnitSink, RunFolderSink, SinkSet
from labctl.records.run_record import ClientOutcome, Outcome, RunOutcome
from labctl.store import open_store
from labctl.store.schema import tables
from labctl.store.sink import StoreSink
from tests.recorder.test_sinks import measured_cell

SECRET = "Sw33p-launcher-pw"


def test_a_secret_in_a_record_reaches_no_output(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path / "results", load_lab(), "boot_storm", redactor=Redactor([SECRET]))
    store = open_store(f"duckdb:{tmp_path / 'store'}")
    sinks = SinkSet(
        folder,
        [
            RunFolderSink(folder),
            AllureSink(folder),
            JUnitSink(folder),
            StoreSink(store, folder.info, folder.path),
        ],
    )
    rec, summary = measured_cell(folder, "boot_storm-standalone-001", 2.0, {"optiplex-001": 30.0})
    record = broken_record(summary, rec, Outcome.LAB_FAULT, "launcher refused the logon")
    # what an endpoint's error or a leaky lab could put anywhere in a record
    leaky_summary = record.summary.model_copy(
        update={
            "clients": {
                "optiplex-001": ClientOutcome(
                    name="optiplex-001", outcome="timeout", detail=f"ssh vsi:{SECRET}@127.0.0.1 refused"
                )
            }
        }
    )
    record = record.model_copy(update={"reason": f"logon with {SECRET} refused", "summary": leaky_summary})
    sinks.cell_finished(record, rec)
    sinks.run_finished(folder.finish(RunOutcome.LAB_FAULT, f"the launcher said {SECRET}"))
    assert sinks.errors == []

    written = [p for p in folder.path.rglob("*") if p.is_file()]
    assert any(p.name == "junit.xml" for p in written) and any("allure-results" in str(p) for p in written)
    leaks = [str(p.relative_to(folder.path)) for p in written if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    for table in tables():
        rows = store.sql(f"SELECT * FROM {table}").rows
        assert not any(SECRET in str(v) for row in rows for v in row), table
    assert store.sql("SELECT count(*) FROM cells").rows[0][0] == 1  # the store did get the cell
