"""The background recorder: schedules, source timestamps, errors, streaming, stop deadline."""

from __future__ import annotations

import csv
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from labctl.clock import LabClock
from labctl.recorder import Recorder, read_events, read_series
from labctl.recorder.series import SERIES_COLUMNS
from labctl.records.samples import Event, Sample

FAST = LabClock(scale=1000.0)  # 5 lab seconds = 5 ms


def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError("condition not met in time")


class Counter:
    """A polled source whose device clock runs 3600 s behind the lab clock."""

    def __init__(self, name: str = "dev", clock: LabClock = FAST):
        self.name = name
        self.clock = clock
        self.n = 0

    def read(self) -> list[Sample]:
        self.n += 1
        ts = self.clock.now() - 3600.0
        return [
            Sample(self.name, "pvs-01", "cpu_pct", "%", ts, float(self.n)),
            Sample(self.name, "pvs-01/D:", "disk_queue_len", "requests", ts, 2.0 * self.n),
        ]


class Failing:
    name = "bmc"

    def __init__(self) -> None:
        self.calls = 0

    def read(self) -> list[Sample]:
        self.calls += 1
        if self.calls <= 3:
            raise ConnectionError("https://root:hunter2@bmc/redfish refused")
        return [Sample(self.name, "pvs-01", "power_w", "W", FAST.now(), 300.0)]


class Hanging:
    name = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()

    def read(self) -> list[Sample]:
        self.release.wait(30)
        return []


class Streaming:
    """Like typeperf -si 1: rows of two counters, one row per lab second, until closed."""

    name = "typeperf"

    def __init__(self) -> None:
        self.closed = threading.Event()

    def read(self) -> Iterator[Sample]:
        t = 5000.0
        while not self.closed.is_set():
            yield Sample(self.name, "pvs-01", "cpu_pct", "%", t, 10.0)
            yield Sample(self.name, "pvs-01", "mem_used_mb", "MB", t, 700.0)
            t += 1.0
            time.sleep(0.002)

    def close(self) -> None:
        self.closed.set()


class Redactor:
    def text(self, s: str) -> str:
        return s.replace("hunter2", "***")

    def obj(self, x: object) -> object:
        return json.loads(self.text(json.dumps(x)))


class Timeline:
    def __init__(self) -> None:
        self.subs: list[Callable[[Event], None]] = []

    def subscribe(self, cb: Callable[[Event], None]) -> Callable[[], None]:
        self.subs.append(cb)
        return lambda: self.subs.remove(cb)

    def emit(self, e: Event) -> None:
        for cb in list(self.subs):
            cb(e)


def rows(path: Path) -> list[dict[str, str]]:
    with (path / "series.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_writes_incrementally_with_source_timestamps_and_cells(tmp_path: Path) -> None:
    src = Counter()
    rec = Recorder(tmp_path, [src], clock=FAST, interval_s=5.0)
    with rec:
        with rec.cell("boot_storm-001"):
            # rows are on disk while the recorder is still running
            wait_for(lambda: sum(r["cell"] == "boot_storm-001" for r in rows(tmp_path)) >= 6)
        with rec.cell("boot_storm-005"):
            wait_for(lambda: any(r["cell"] == "boot_storm-005" for r in rows(tmp_path)))
    got = rows(tmp_path)
    with (tmp_path / "series.csv").open() as fh:
        assert tuple(fh.readline().strip().split(",")) == SERIES_COLUMNS
    assert {r["cell"] for r in got} >= {"boot_storm-001", "boot_storm-005"}
    for r in got:
        # the source's clock, not the recorder's: an hour behind the lab clock
        assert float(r["source_ts_s"]) < FAST.now() - 3500
        iso = datetime.fromisoformat(r["source_ts"])
        assert iso.utcoffset() is not None and iso.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert abs(iso.timestamp() - float(r["source_ts_s"])) < 0.001
        assert r["source_ts"].endswith("Z") and len(r["source_ts"].split(".")[1]) == 4  # ms + Z
    # values in file order come out per series, time-sorted, from disk and from memory alike
    disk = read_series(tmp_path, cell="boot_storm-001", metric="cpu_pct")
    mem = rec.series(cell="boot_storm-001", metric="cpu_pct")
    assert len(disk) == 1 and disk[0].values == mem[0].values and len(disk[0]) >= 3
    assert list(disk[0].ts) == sorted(disk[0].ts)
    kinds = [e["kind"] for e in read_events(tmp_path)]
    assert kinds[0] == "recorder.start" and kinds[-1] == "recorder.stop"
    assert kinds.count("cell.start") == 2


def test_interval_is_lab_time(tmp_path: Path) -> None:
    clock = LabClock(scale=100.0)
    src = Counter(clock=clock)
    with Recorder(tmp_path, [src], clock=clock, interval_s=5.0):  # 50 ms wall
        time.sleep(0.5)  # 50 lab seconds: about 10 reads
    assert 6 <= src.n <= 13
    ts = read_series(tmp_path, metric="cpu_pct")[0].ts
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    assert sorted(gaps)[len(gaps) // 2] == pytest.approx(5.0, abs=1.5)


def test_a_failing_source_is_an_event_and_does_not_stop_the_others(tmp_path: Path) -> None:
    good, bad = Counter(), Failing()
    rec = Recorder(tmp_path, [bad, good], clock=FAST, interval_s=5.0, redactor=Redactor())
    with rec:
        wait_for(lambda: bad.calls >= 5 and good.n >= 5)
    events = read_events(tmp_path)
    errors = [e for e in events if e["kind"] == "source.error"]
    assert len(errors) == 1  # the same error three times is one event
    assert errors[0]["target"] == "bmc" and "ConnectionError" in errors[0]["detail"]["error"]
    recovered = [e for e in events if e["kind"] == "source.recovered"]
    assert recovered and recovered[0]["detail"]["failed_reads"] == 3
    text = (tmp_path / "events.jsonl").read_text() + (tmp_path / "series.csv").read_text()
    assert "hunter2" not in text
    assert read_series(tmp_path, source="bmc") and read_series(tmp_path, source="dev")


def test_stop_never_hangs_on_a_stuck_source(tmp_path: Path) -> None:
    stuck, good = Hanging(), Counter()
    rec = Recorder(tmp_path, [stuck, good], clock=FAST, interval_s=5.0, stop_timeout_s=0.3)
    rec.start()
    wait_for(lambda: good.n >= 2)
    t0 = time.monotonic()
    rec.stop()
    assert time.monotonic() - t0 < 2.0
    stuck.release.set()
    assert any(e["kind"] == "source.stuck" and e["target"] == "stuck" for e in read_events(tmp_path))
    n = len(rows(tmp_path))
    time.sleep(0.05)  # nothing is written after stop, even by the released source
    assert len(rows(tmp_path)) == n
    rec.stop()  # idempotent


def test_streaming_source_rows_are_written_as_they_come(tmp_path: Path) -> None:
    src = Streaming()
    rec = Recorder(tmp_path, [src], clock=FAST, interval_s=5.0, stop_timeout_s=2.0)
    with rec:
        wait_for(lambda: len(rows(tmp_path)) >= 10)
    assert src.closed.is_set()
    got = rows(tmp_path)
    cpu = [float(r["source_ts_s"]) for r in got if r["metric"] == "cpu_pct"]
    assert cpu[:3] == [5000.0, 5001.0, 5002.0]
    assert not any(e["kind"] == "source.stuck" for e in read_events(tmp_path))


def test_timeline_events_and_plan_samples(tmp_path: Path) -> None:
    tl = Timeline()
    rec = Recorder(tmp_path, [], clock=FAST, redactor=Redactor())
    rec.attach(tl)
    with rec, rec.cell("c1"):
        tl.emit(Event(1234.5, "power.action", "optiplex-001", {"action": "wake", "pw": "hunter2"}))
        rec.record_samples([Sample("pvs", "optiplex-001", "boot_time_s", "s", 1300.0, 31.5)])
    assert tl.subs == []  # unsubscribed on stop
    ev = [e for e in read_events(tmp_path, kind="power.*")]
    assert ev == [
        {
            "lab_ts": 1234.5,
            "lab_time": "1970-01-01T00:20:34.500Z",
            "cell": "c1",
            "kind": "power.action",
            "target": "optiplex-001",
            "detail": {"action": "wake", "pw": "***"},
        }
    ]
    (s,) = read_series(tmp_path, metric="boot_time_s")
    assert s.cell == "c1" and s.values == (31.5,) and s.ts == (1300.0,)


def test_appends_to_an_existing_run_folder_and_tolerates_a_torn_line(tmp_path: Path) -> None:
    with Recorder(tmp_path, [], clock=FAST) as rec:
        rec.record_samples([Sample("a", "e", "m", "u", 10.0, 1.0)])
    with Recorder(tmp_path, [], clock=FAST) as rec:
        rec.record_samples([Sample("a", "e", "m", "u", 11.0, 2.0)])
    with (tmp_path / "series.csv").open("a") as fh:
        fh.write("c,a,e,m,u,1970-01-01T00:00:12")  # the process died mid-row
    with (tmp_path / "events.jsonl").open("a") as fh:
        fh.write('{"lab_ts": 1')
    text = (tmp_path / "series.csv").read_text()
    assert text.count("cell,source") == 1  # one header
    (s,) = read_series(tmp_path)
    assert s.values == (1.0, 2.0)
    assert read_events(tmp_path)[-1]["kind"] == "recorder.stop"


def test_a_torn_last_row_with_every_column_is_not_read_as_a_value(tmp_path: Path) -> None:
    with Recorder(tmp_path, [], clock=FAST) as rec:
        rec.record_samples([Sample("a", "e", "m", "u", 10.0, 1.0)])
    with (tmp_path / "series.csv").open("a") as fh:
        fh.write(",a,e,m,u,1970-01-01T00:00:11.000Z,11.000,23")  # died while writing 234.5
    (s,) = read_series(tmp_path)
    assert s.values == (1.0,) and s.ts == (10.0,)


def test_series_rows_on_disk_and_in_attachments_are_the_same(tmp_path: Path) -> None:
    from labctl.report.allure_helpers import series_csv

    samples = [
        Sample("unity", "lun-01", "latency_ms", "ms", 1_194_256_800.0 + i, v)
        for i, v in enumerate([0.1, float("nan"), float("inf"), float("-inf"), 3])
    ]
    with Recorder(tmp_path, [], clock=FAST) as rec, rec.cell("c"):
        rec.record_samples(samples)
    text = (tmp_path / "series.csv").read_text()
    assert text.splitlines()[1:] == [
        "c,unity,lun-01,latency_ms,ms,2007-11-05T10:00:00.000Z,1194256800.000,0.1",
        "c,unity,lun-01,latency_ms,ms,2007-11-05T10:00:01.000Z,1194256801.000,nan",
        "c,unity,lun-01,latency_ms,ms,2007-11-05T10:00:02.000Z,1194256802.000,inf",
        "c,unity,lun-01,latency_ms,ms,2007-11-05T10:00:03.000Z,1194256803.000,-inf",
        "c,unity,lun-01,latency_ms,ms,2007-11-05T10:00:04.000Z,1194256804.000,3.0",
    ]
    assert series_csv(read_series(tmp_path)) == text


def test_wait_back_to_baseline(tmp_path: Path) -> None:
    clock = LabClock(scale=1000.0)
    rec = Recorder(tmp_path, [], clock=clock, interval_s=1.0)
    t0 = 10_000.0
    with rec, rec.cell("c"):
        values = [5.0] * 30 + [90.0] * 20 + [5.0] * 60
        rec.record_samples([Sample("tp", "pvs-01", "cpu_pct", "%", t0 + i, v) for i, v in enumerate(values)])
        t = rec.wait_back_to_baseline(metric="cpu_pct", storm_start_ts=t0 + 30, hold_s=30, timeout_s=5)
        assert t == t0 + 50
        # a metric that never comes back: the deadline answers None
        rec.record_samples(
            [Sample("tp", "pvs-01", "nic_pct", "%", t0 + i, 5.0 if i < 30 else 90.0) for i in range(60)]
        )
        t1 = time.monotonic()
        assert rec.wait_back_to_baseline(metric="nic_pct", storm_start_ts=t0 + 30, timeout_s=50) is None
        assert time.monotonic() - t1 < 2.0


def test_summaries_for_the_cell_file_and_the_run_folders_redactor(tmp_path: Path) -> None:
    class Run:
        path = tmp_path
        redactor = Redactor()

    rec = Recorder(Run(), [], clock=FAST)
    with rec, rec.cell("c"):
        rec.record("error", "bmc", reason="login hunter2 refused")
        rec.record_samples(
            [Sample("tp", "pvs-01", "cpu_pct", "%", 100.0 + i, v) for i, v in enumerate([5, 90, 95, 5])]
        )
    got = rec.summaries("c", (100.0, 102.0))["tp/pvs-01/cpu_pct"]
    assert got.peak == 95 and got.samples == 3 and got.mean == pytest.approx(190 / 3)
    # samples the plan wrote itself promise no interval: no coverage is claimed for them
    assert got.expected_interval_s is None and got.coverage is None and got.gaps == []
    assert "hunter2" not in (tmp_path / "events.jsonl").read_text()
