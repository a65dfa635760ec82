"""The run folder's measurement files: ``series.csv`` and ``events.jsonl``.

Both are append-only and written one batch at a time (append, flush), so an interrupted run keeps
everything it measured up to the last batch, and both are read as they are by pandas
(``pd.read_csv``, ``pd.read_json(lines=True)``) and DuckDB (``read_csv_auto``, ``read_json_auto``).
Their columns are documented in ``results/README.md``.

Reading is tolerant: a half-written last line (the process died mid-write) is skipped.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from labctl.inventory.userfile import open_user_file
from labctl.records.samples import Event, Sample
from labctl.records.series import SERIES_FILE, Series, SeriesStore, iso_utc, matches, ts_s

EVENTS_FILE = "events.jsonl"
SERIES_COLUMNS = ("cell", "source", "entity", "metric", "unit", "source_ts", "source_ts_s", "value")


def run_path(run: Any) -> Path:
    """A run folder given as a path or as an object with a ``path`` attribute (a RunFolder)."""
    if isinstance(run, str | os.PathLike):
        return Path(run)
    path = getattr(run, "path", None)
    if path is None:
        raise TypeError(f"not a run folder: {run!r} (give a path or a RunFolder)")
    return Path(path)


# --- series ------------------------------------------------------------------------------------


def csv_row(
    cell: str, source: str, entity: str, metric: str, unit: str, ts: float, value: float
) -> tuple[str, ...]:
    """One line of ``series.csv`` in :data:`SERIES_COLUMNS` order (also for attachments of series).
    Values are written exactly (``repr``); ``nan`` / ``inf`` / ``-inf`` as such."""
    return (cell, source, entity, metric, unit, iso_utc(ts), ts_s(ts), repr(float(value)))


class _Appender:
    """An append-only text file written whole batches at a time, each flushed at once (so a
    crash loses at most the batch being written); writes after :meth:`close` are dropped.

    A write the disk refuses (full, failing) never raises into the recorder's threads: the file
    stops there, ``error`` says why (one line, the first), and later writes are dropped."""

    def __init__(self, path: Path):
        self.path = path
        self.error = ""
        self._lock = threading.Lock()
        self._fh: io.TextIOWrapper | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("a", newline="", encoding="utf-8")
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.error = self.error or f"{self.path.name}: {exc.strerror or exc}"
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()  # the buffered part cannot be flushed either: the descriptor is closed

    def _append(self, text: str) -> bool:
        with self._lock:
            if self._fh is None:
                return False
            try:
                self._fh.write(text)
                self._fh.flush()
            except OSError as exc:
                self._failed(exc)
                return False
            return True

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                try:
                    self._fh.close()  # flushes
                except OSError as exc:
                    self._failed(exc)
                self._fh = None


def _csv_text(rows: Iterable[Sequence[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


class SeriesWriter(_Appender):
    """Appends samples to ``series.csv``; writes the header when the file is new or empty."""

    def __init__(self, path: Path):
        super().__init__(path)
        if self._fh is not None and path.stat().st_size == 0:
            self._append(_csv_text([SERIES_COLUMNS]))

    def write(self, cell: str, samples: Iterable[Sample]) -> int:
        rows = [csv_row(cell, s.source, s.entity, s.metric, s.unit, s.source_ts, s.value) for s in samples]
        return len(rows) if rows and self._append(_csv_text(rows)) else 0


def _complete_lines(fh: Iterable[str]) -> Iterator[str]:
    """The lines of a file that end with a newline: a torn last line (the writer died mid-row)
    is dropped even when it has every column, as its last value may be cut short."""
    for line in fh:
        if line.endswith("\n"):
            yield line


def _read_rows(path: Path) -> Iterator[dict[str, str]]:
    try:  # a user's file: regular, no symlink out of the run folder (labctl.inventory.userfile)
        raw = open_user_file(path, what=path.name, follow_symlinks=False)
    except FileNotFoundError:
        return
    with io.TextIOWrapper(raw, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.DictReader(_complete_lines(fh))
        for row in reader:
            if None in row or any(row.get(c) is None for c in SERIES_COLUMNS):
                continue  # a malformed line
            yield row


def read_series(
    run: Any,
    *,
    cell: str | None = None,
    source: str | None = None,
    entity: str | None = None,
    metric: str | None = None,
) -> list[Series]:
    """Series from a run folder's ``series.csv``, grouped by cell/source/entity/metric, time-sorted."""
    store = SeriesStore()
    for row in _read_rows(run_path(run) / SERIES_FILE):
        if cell is not None and row["cell"] != cell:
            continue
        if not (matches(row["source"], source) and matches(row["entity"], entity)):
            continue
        if not matches(row["metric"], metric):
            continue
        try:
            ts = float(row["source_ts_s"])
            value = float(row["value"])
        except ValueError:
            continue
        store.add(row["cell"], Sample(row["source"], row["entity"], row["metric"], row["unit"], ts, value))
    return store.series()


class RunSeries:
    """A run folder as a :class:`SeriesProvider` (criteria can be re-evaluated offline)."""

    def __init__(self, run: Any):
        self.path = run_path(run)

    def series(
        self,
        *,
        cell: str | None = None,
        source: str | None = None,
        entity: str | None = None,
        metric: str | None = None,
    ) -> list[Series]:
        return read_series(self.path, cell=cell, source=source, entity=entity, metric=metric)


# --- events ------------------------------------------------------------------------------------


def event_record(event: Event, cell: str) -> dict[str, Any]:
    return {
        "lab_ts": round(float(event.lab_ts), 3),
        "lab_time": iso_utc(event.lab_ts),
        "cell": cell,
        "kind": event.kind,
        "target": event.target,
        "detail": event.detail,
    }


class EventWriter(_Appender):
    """Appends events to ``events.jsonl``, one JSON object a line."""

    def write(self, records: Sequence[dict[str, Any]]) -> int:
        lines = "".join(json.dumps(r, default=str, ensure_ascii=False) + "\n" for r in records)
        return len(records) if records and self._append(lines) else 0


def read_events(run: Any, *, cell: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
    """The events of a run folder (``kind`` may be a pattern such as ``power.*``), in file order."""
    path = run_path(run) / EVENTS_FILE
    out: list[dict[str, Any]] = []
    try:  # a user's file: regular, no symlink out of the run folder (labctl.inventory.userfile)
        with open_user_file(path, what=path.name, follow_symlinks=False) as raw:
            text = raw.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if not isinstance(rec, dict):
            continue
        if cell is not None and rec.get("cell") != cell:
            continue
        if not matches(str(rec.get("kind", "")), kind):
            continue
        out.append(rec)
    return out
