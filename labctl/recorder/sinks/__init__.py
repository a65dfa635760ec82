"""Output sinks, as OpenHTF's output callbacks: every output of a run consumes the same typed
records, one cell at a time, and once more when the run ends.

    sinks = SinkSet(run, [RunFolderSink(run), AllureSink(run, chart=...), JUnitSink(run)])
    sinks.cell_finished(record, recorder)   # after each cell (recorder: its series, for evidence)
    sinks.run_finished(run.finish(outcome, reason))

- :class:`RunFolderSink`: ``cells/<id>/summary.json`` and ``verdicts.json`` (their only writer),
  the cell's id in ``run.json``.
- :class:`AllureSink`: one Allure test result per cell in ``allure-results/``.
- :class:`JUnitSink`: ``junit.xml`` for CI servers, one test case per cell.

A sink never raises into the runner: :class:`SinkSet` logs a failing sink and appends a
``sink.error`` event to ``events.jsonl``, and the other sinks still get the record. With ``say``
(the runner's console line) each failure is also said the moment it happens, one line: the output,
what failed and that the run goes on; a sink that says its own failures (``says_failures``, the
results store's, for the LabctlError and OSError it catches) is left to say those, and a full
results disk is said once, when the run ends.
"""

from __future__ import annotations

import errno
import inspect
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from labctl.errors import LabctlError
from labctl.recorder.series import EVENTS_FILE, EventWriter, event_record, run_path
from labctl.recorder.sinks.allure import AllureSink
from labctl.recorder.sinks.junit import JUnitSink
from labctl.recorder.sinks.runfolder import RunFolderSink
from labctl.records.run_record import CellRecord, RunInfo
from labctl.records.samples import Event
from labctl.records.series import SeriesProvider

log = logging.getLogger(__name__)

__all__ = ["AllureSink", "JUnitSink", "RunFolderSink", "Sink", "SinkSet"]


@runtime_checkable
class Sink(Protocol):
    """An output of a run. ``cell_finished`` gets every cell's record as the cell ends (a sink
    may take the cell's series as a second argument, ``data``); ``run_finished`` the final
    ``run.json`` content. Both may be called from the thread that ran the cell."""

    def cell_finished(self, record: CellRecord) -> None: ...

    def run_finished(self, info: RunInfo) -> None: ...


def _takes_data(method: Any) -> bool:
    try:
        return len(inspect.signature(method).parameters) >= 2
    except (TypeError, ValueError):
        return False


# what a results disk that is full or failing answers a write (not a store that is unreachable)
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def _disk_error(exc: BaseException) -> bool:
    """A write the disk refused: an OSError with a disk errno, or a library's own I/O error that
    quotes one (DuckDB's IOException for the store's Parquet files)."""
    if isinstance(exc, OSError):
        return exc.errno in DISK_ERRNOS
    text = str(exc)
    return any(os.strerror(e) in text for e in DISK_ERRNOS)


class SinkSet:
    """Hands every record to every sink; a sink that raises is logged and recorded as a
    ``sink.error`` event (target: the sink's class), never raised into the runner."""

    def __init__(
        self,
        run: Any,
        sinks: Sequence[Sink],
        *,
        clock: Any = None,
        redactor: Any = None,
        say: Callable[[str], None] | None = None,
        errors: list[str] | None = None,
    ):
        self.path = run_path(run)
        self._run = run
        self.sinks = list(sinks)
        self.clock = clock or getattr(run, "clock", None)
        self.redactor = redactor or getattr(run, "redactor", None)
        self.say = say  # a person must see an output failing as it happens (the runner's console)
        # one line per failure, for the run's summary (a list the run's outputs share across cells)
        self.errors: list[str] = errors if errors is not None else []

    def redacted(self, record: CellRecord) -> CellRecord:
        """``record`` with every secret the run's redactor knows masked: what every sink gets, so
        no output (run folder, Allure, JUnit, the results store) can hold one."""
        if self.redactor is None:
            return record
        return CellRecord.model_validate(self.redactor.obj(record.model_dump(mode="json")))

    def redacted_info(self, info: RunInfo) -> RunInfo:
        if self.redactor is None:
            return info
        return RunInfo.model_validate(self.redactor.obj(info.model_dump(mode="json")))

    def cell_finished(self, record: CellRecord, data: SeriesProvider | None = None) -> None:
        record = self.redacted(record)
        for sink in self.sinks:
            try:
                if data is not None and _takes_data(sink.cell_finished):
                    sink.cell_finished(record, data)  # type: ignore[call-arg]
                else:
                    sink.cell_finished(record)
            except Exception as exc:
                self._failed(sink, "cell_finished", exc, record.cell)

    def run_finished(self, info: RunInfo) -> None:
        info = self.redacted_info(info)
        for sink in self.sinks:
            try:
                sink.run_finished(info)
            except Exception as exc:
                self._failed(sink, "run_finished", exc, "")

    def _failed(self, sink: Sink, call: str, exc: Exception, cell: str) -> None:
        name = type(sink).__name__
        error = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
        if self.redactor is not None:
            error = self.redactor.text(error)
        line = f"{name}.{call}" + (f" ({cell})" if cell else "") + f": {error}"
        self.errors.append(line)
        if _disk_error(exc):  # the results disk, full or failing: said once at the run's end
            log.warning("output sink failed: %s", line)
            note = getattr(self._run, "note_write_error", None)
            if callable(note):
                note(f"{name}.{call}", exc)
            return  # the events file is on the same disk
        # a LabctlError says what and where in one line (a store that cannot be reached); anything
        # else is a bug in the sink: its traceback goes to the log
        log.warning("output sink failed: %s", line, exc_info=None if isinstance(exc, LabctlError) else exc)
        # a sink that says its own failures (the store) has said a LabctlError or OSError already;
        # anything else it raised (a bug, a database error it does not wrap) it has not
        said = getattr(sink, "says_failures", False) and isinstance(exc, LabctlError | OSError)
        if self.say is not None and not said:
            self.say(f"output {line}; the run goes on with its other outputs")
        now = self.clock.now() if self.clock is not None else time.time()
        writer = EventWriter(self.path / EVENTS_FILE)
        try:
            writer.write([event_record(Event(now, "sink.error", name, {"call": call, "error": error}), cell)])
        except OSError as write_error:  # the run folder itself is failing: the log has it
            log.warning("could not record the sink error in %s: %s", self.path, write_error)
        finally:
            writer.close()
