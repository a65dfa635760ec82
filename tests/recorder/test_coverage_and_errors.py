"""The recorder holds each series to its source's interval (gaps, coverage) and keeps one error
state per source and endpoint."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from labctl.errors import EndpointError
from labctl.recorder import Recorder, read_events, read_series
from labctl.records.samples import PartialRead, Sample

T0 = 1_194_256_800.0


class FakeClock:
    """A lab clock the test moves by hand (the recorder is driven with sample_once)."""

    def __init__(self, t: float = T0):
        self.t = t

    def now(self) -> float:
        return self.t

    def sleep(self, lab_seconds: float, stop: threading.Event | None = None) -> bool:
        self.t += lab_seconds
        return True


class Typeperf:
    """Rows of two counters stamped by the device, one per ``interval_s``; ``skip`` reads give
    nothing (the device printed no row), like the simulator starved of CPU in issue 10."""

    name = "typeperf:pvs-01"

    def __init__(self, clock: FakeClock, interval_s: float | None = 5.0):
        self.clock = clock
        self.interval_s = interval_s
        self.silent = False

    def read(self) -> list[Sample]:
        if self.silent:
            return []
        t = self.clock.now()
        return [
            Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", t, 1.0),
            Sample("typeperf", "pvs-01", "cpu_pct", "%", t, 20.0),
        ]


def _run(rec: Recorder, clock: FakeClock, src: Typeperf, seconds: float, step: float = 5.0) -> None:
    end = clock.t + seconds
    while clock.t < end:
        rec.sample_once()
        clock.t += step
    del src


def test_a_silence_longer_than_twice_the_interval_is_one_gap_event_and_shows_in_the_summary(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    src = Typeperf(clock)
    rec = Recorder(tmp_path, [src], clock=clock, interval_s=30.0, cell="c")  # the source's 5 s wins
    _run(rec, clock, src, 15)  # t = 0, 5, 10
    src.silent = True
    _run(rec, clock, src, 150)  # nothing from t = 15 to t = 160
    src.silent = False
    _run(rec, clock, src, 25)  # t = 165 .. 185
    gaps = rec.events(kind="source.gap")
    assert len(gaps) == 1, gaps  # once per gap and source, not once per series
    g = gaps[0]
    assert g.target == "typeperf:pvs-01"
    assert g.detail["start_ts_s"] == T0 + 10 and g.detail["end_ts_s"] == T0 + 165
    assert g.detail["length_s"] == 155 and g.detail["interval_s"] == 5.0 and g.detail["series"] == 2
    assert g.detail["entities"] == ["pvs-01", "pvs-01/D:"]
    got = rec.summaries("c", (T0, T0 + 185))["typeperf/pvs-01/D:/disk_queue_len"]
    assert got.expected_interval_s == 5.0
    assert [(x.start_ts_s - T0, x.end_ts_s - T0) for x in got.gaps] == [(10.0, 165.0)]
    assert got.coverage == pytest.approx(1 - 155 / 185)
    rec.stop()
    assert [e["kind"] for e in read_events(tmp_path, kind="source.gap")] == ["source.gap"]


def test_a_series_that_never_comes_back_is_an_open_gap_at_stop(tmp_path: Path) -> None:
    clock = FakeClock()
    src = Typeperf(clock)
    rec = Recorder(tmp_path, [src], clock=clock, cell="c")
    _run(rec, clock, src, 20)  # t = 0 .. 15
    src.silent = True
    _run(rec, clock, src, 60)
    rec.stop()
    (g,) = read_events(tmp_path, kind="source.gap")
    assert g["detail"]["open"] is True and g["detail"]["start_ts_s"] == T0 + 15
    assert g["detail"]["end_ts_s"] == pytest.approx(T0 + 80)


def test_a_device_clock_behind_the_lab_clock_is_not_a_silence(tmp_path: Path) -> None:
    clock = FakeClock()

    class Behind(Typeperf):
        def read(self) -> list[Sample]:
            return [Sample("typeperf", "pvs-01", "cpu_pct", "%", self.clock.now() - 3600.0, 1.0)]

    rec = Recorder(tmp_path, [Behind(clock)], clock=clock, cell="c")
    _run(rec, clock, Behind(clock), 30)
    clock.t -= 5  # stop right after the last read
    rec.stop()
    assert read_events(tmp_path, kind="source.gap") == []


def test_intervals_a_source_promises_none_or_does_not_say(tmp_path: Path) -> None:
    clock = FakeClock()
    on_change = Typeperf(clock, interval_s=None)

    class Silent:  # says nothing about its interval: held to the recorder's
        name = "legacy"

        def read(self) -> list[Sample]:
            return [Sample("legacy", "x", "m", "", clock.now(), 1.0)]

    rec = Recorder(tmp_path, [on_change, Silent()], clock=clock, interval_s=7.0, cell="c")
    rec.sample_once()
    assert rec.interval_of("typeperf", "pvs-01", "cpu_pct") is None
    assert rec.interval_of("legacy", "x", "m") == 7.0
    got = rec.summaries("c", (T0, T0 + 100))
    assert got["typeperf/pvs-01/cpu_pct"].coverage is None and got["typeperf/pvs-01/cpu_pct"].gaps == []
    assert got["legacy/x/m"].coverage == 0.0  # one sample, then 100 s of nothing
    rec.stop()


# --- errors per endpoint: two BMCs over real HTTP, one answering 503 --------------------------------


class _Bmcs(BaseHTTPRequestHandler):
    failures_left: ClassVar[dict[str, int]] = {"bmc-02": 3}  # this many 503s, then answers

    def do_GET(self) -> None:
        name = self.path.strip("/")
        left = self.failures_left.get(name, 0)
        if left > 0:
            self.failures_left[name] = left - 1
            self.send_response(503, "Service Unavailable")
            self.end_headers()
            return
        body = json.dumps({"PowerConsumedWatts": 300 if name == "bmc-01" else 250}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def bmcs() -> Iterator[str]:
    _Bmcs.failures_left = {"bmc-02": 3}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bmcs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class RedfishPower:
    """Polls every BMC at once, each with its own deadline; one failing BMC is a PartialRead."""

    name = "redfish:power"
    interval_s = 5.0

    def __init__(self, base: str, clock: FakeClock, bmcs: tuple[str, ...] = ("bmc-01", "bmc-02")):
        self.base = base
        self.clock = clock
        self.bmcs = bmcs

    def _one(self, bmc: str) -> Sample:
        try:
            with urllib.request.urlopen(f"{self.base}/{bmc}", timeout=5) as r:
                watts = json.load(r)["PowerConsumedWatts"]
        except urllib.error.HTTPError as exc:
            raise EndpointError(bmc, "read power", f"HTTP {exc.code} {exc.reason}") from None
        return Sample("redfish", bmc, "power_w", "W", self.clock.now(), float(watts))

    def read(self) -> list[Sample]:
        with ThreadPoolExecutor(len(self.bmcs)) as pool:
            futures = {b: pool.submit(self._one, b) for b in self.bmcs}
        got, errors = [], {}
        for b, f in futures.items():
            try:
                got.append(f.result())
            except EndpointError as exc:
                errors[b] = exc
        if errors:
            raise PartialRead(got, errors)
        return got


def test_a_503ing_bmc_is_an_error_of_that_endpoint_while_the_healthy_one_keeps_its_samples(
    tmp_path: Path, bmcs: str
) -> None:
    clock = FakeClock()
    rec = Recorder(tmp_path, [RedfishPower(bmcs, clock)], clock=clock, cell="c")
    for _ in range(6):
        rec.sample_once()
        clock.t += 5
    rec.stop()
    power = {s.entity: len(s) for s in read_series(tmp_path, metric="power_w")}
    assert power == {"bmc-01": 6, "bmc-02": 3}  # bmc-01 every read; bmc-02 once it answered
    errors = read_events(tmp_path, kind="source.error")
    assert len(errors) == 1, errors  # once per distinct error, not once per read
    e = errors[0]
    assert e["target"] == "bmc-02"
    assert e["detail"]["endpoint"] == "bmc-02" and e["detail"]["source"] == "redfish:power"
    assert "bmc-02: read power: HTTP 503" in e["detail"]["error"]
    (back,) = read_events(tmp_path, kind="source.recovered")
    assert back["target"] == "bmc-02" and back["detail"]["failed_reads"] == 3
    faults = rec.source_faults()
    assert [(f.endpoint, f.count, f.recovered) for f in faults] == [("bmc-02", 3, True)]


def test_an_error_naming_its_endpoint_and_one_that_does_not(tmp_path: Path) -> None:
    clock = FakeClock()

    class Flaky:
        name = "pvs:pvs-01"
        interval_s = 5.0
        calls = 0

        def read(self) -> list[Sample]:
            self.calls += 1
            if self.calls == 1:
                raise EndpointError("pvs-01", "read device status", "ssh: connection refused")
            if self.calls == 2:
                raise RuntimeError("parser broke")
            return []

    rec = Recorder(tmp_path, [Flaky()], clock=clock, cell="c")
    for _ in range(3):
        rec.sample_once()
    rec.stop()
    errors = read_events(tmp_path, kind="source.error")
    assert [(e["target"], e["detail"]["endpoint"]) for e in errors] == [
        ("pvs-01", "pvs-01"),
        ("pvs:pvs-01", ""),
    ]
    assert {e["target"] for e in read_events(tmp_path, kind="source.recovered")} == {"pvs-01", "pvs:pvs-01"}


def test_one_poll_ending_many_gaps_is_one_event(tmp_path: Path) -> None:
    """A poll of many clients whose values resume at once: one event, not one per client."""
    clock = FakeClock()

    class Clients:
        name = "pvs:pvs-01"
        interval_s = 5.0
        quiet: ClassVar[set[str]] = set()

        def read(self) -> list[Sample]:
            return [
                Sample("pvs", f"optiplex-{i:03d}", "boot_time_s", "s", clock.now(), 30.0)
                for i in range(1, 51)
                if f"optiplex-{i:03d}" not in self.quiet
            ]

    src = Clients()
    rec = Recorder(tmp_path, [src], clock=clock, cell="c")
    rec.sample_once()
    clock.t += 5
    src.quiet = {f"optiplex-{i:03d}" for i in range(1, 26)}  # half go quiet for 30 s ...
    for _ in range(3):
        rec.sample_once()
        clock.t += 5
    src.quiet = {f"optiplex-{i:03d}" for i in range(1, 11)}  # ... 15 of them come back
    for _ in range(3):
        rec.sample_once()
        clock.t += 5
    src.quiet = set()
    rec.sample_once()
    rec.stop()
    gaps = read_events(tmp_path, kind="source.gap")
    assert [g["detail"]["series"] for g in gaps] == [15, 10]
    assert gaps[0]["detail"]["start_ts_s"] == T0 and gaps[0]["detail"]["end_ts_s"] == T0 + 20
    assert len(gaps[0]["detail"]["entities"]) == 15
