from __future__ import annotations

import pytest

from labctl.drivers.storage.base import LunCounters, RateTracker, array_totals, delta


def c(
    ts: float, reads: float, writes: float, rb: float, wb: float, io_us: float, lun: str = "vdi-ds-01"
) -> LunCounters:
    return LunCounters(lun, ts, reads, writes, rb, wb, io_us)


def test_rates_from_counter_deltas() -> None:
    d = delta(c(0, 0, 0, 0, 0, 0), c(10, 500, 1500, 8000, 24000, 2000 * 4000))
    assert d is not None
    assert d.read_iops == 50 and d.write_iops == 150 and d.iops == 200
    assert d.read_mb_s == pytest.approx(8000 * 512 / 10 / 1e6)
    assert d.latency_ms == pytest.approx(4.0)  # 4000 us per I/O
    assert d.io_size_kb == pytest.approx(32000 * 512 / 2000 / 1024)  # 8 KB


def test_idle_interval_has_no_latency_and_counter_reset_is_skipped() -> None:
    d = delta(c(0, 5, 5, 5, 5, 5), c(5, 5, 5, 5, 5, 5))
    assert d is not None and d.iops == 0 and d.latency_ms is None
    assert delta(c(0, 100, 0, 0, 0, 0), c(5, 10, 0, 0, 0, 0)) is None  # SP reboot: counters went back
    assert delta(c(5, 0, 0, 0, 0, 0), c(5, 1, 0, 0, 0, 0)) is None


def test_tracker_and_array_totals() -> None:
    t = RateTracker()
    assert t.feed([c(0, 0, 0, 0, 0, 0), c(0, 0, 0, 0, 0, 0, lun="b")]) == []
    out = t.feed([c(5, 50, 0, 800, 0, 50 * 2000), c(5, 0, 50, 0, 800, 50 * 6000, lun="b")])
    assert {d.lun for d in out} == {"vdi-ds-01", "b"}
    tot = {r.metric: r.value for r in array_totals("unity-01", out)}
    assert tot["iops"] == 20 and tot["latency_ms"] == pytest.approx(4.0)
    assert t.feed([c(5, 50, 0, 800, 0, 50 * 2000)]) == []  # the same timestamp again: nothing new
