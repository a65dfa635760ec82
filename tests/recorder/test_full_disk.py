"""A results disk that refuses writes (full): the recorder's files stop where they are, say why in
one line, and never raise into the recorder's threads; what was recorded stays in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.clock import LabClock
from labctl.recorder.recorder import Recorder
from labctl.recorder.series import EventWriter, SeriesWriter
from labctl.records.samples import Sample

FULL = Path("/dev/full")  # every write answers ENOSPC, as a full disk does

pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full (Linux)")


def test_appenders_on_a_full_disk_stop_and_say_why() -> None:
    series = SeriesWriter(FULL)
    assert series.write("c", [Sample("s", "e", "m", "u", 1.0, 2.0)]) == 0
    events = EventWriter(FULL)
    assert events.write([{"kind": "x"}]) == 0
    series.close()
    events.close()
    assert series.error == events.error == "full: No space left on device"


def test_a_recorder_on_a_full_disk_keeps_its_samples_in_memory_and_names_the_files(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, clock=LabClock(), cell="c")
    # the run folder's two files are on a disk that is full from now on
    rec._series = SeriesWriter(FULL)
    rec._events = EventWriter(FULL)
    with rec:
        rec.record_samples([Sample("s", "e", "m", "u", 1.0, 2.0)])
        rec.record("x.event", "t")
    assert [s.values for s in rec.series(cell="c")] == [(2.0,)]
    assert rec.write_errors == ["full: No space left on device", "full: No space left on device"]
