"""Work for child processes in the concurrency tests (module level, so a spawned process finds it)."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from labctl.store import StoreSink, import_run, open_store
from labctl.store.folder import read_run_folder


def sink_run(url: str, folder: str, errors: str) -> None:
    """Write a run folder into the store the way a running run does: cell by cell, then finish."""
    try:
        data = read_run_folder(Path(folder))
        store = open_store(url)
        sink = StoreSink(store, data.info, Path(folder), batch_rows=200)
        for record in data.records.values():
            sink.cell_finished(record)
        sink.run_finished(data.info)
        store.close()
    except BaseException:
        Path(errors).write_text(traceback.format_exc())
        raise


def import_again(url: str, folder: str, times: int, errors: str) -> None:
    """`labctl runs import` of one run folder, ``times`` times over."""
    try:
        store = open_store(url)
        for _ in range(times):
            import_run(store, Path(folder))
        store.close()
    except BaseException:
        Path(errors).write_text(traceback.format_exc())
        raise


def read_while(url: str, stop_file: str, errors: str) -> None:
    """Query the store until ``stop_file`` exists; any error, or a doubled row, is written to ``errors``."""
    try:
        store = open_store(url)
        while not Path(stop_file).exists():
            doubled = store.sql(
                "SELECT run_id, cell, count(*) FROM cells GROUP BY run_id, cell HAVING count(*) > 1"
            ).rows
            if doubled:
                raise AssertionError(f"doubled cells seen by a reader: {doubled}")
            store.runs()
            time.sleep(0.01)
        store.close()
    except BaseException:
        Path(errors).write_text(traceback.format_exc())
        raise
