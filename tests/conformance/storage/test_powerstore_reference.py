"""PowerStore ``performance_metrics_by_volume`` fields in the units the vendor's API reference gives
them (the PowerStore OpenAPI model ``BasePerformanceMetricsByVolume``, as a generated client's
documentation reproduces it; SOURCES.md), for the driver and the simulated appliance."""

from __future__ import annotations

import pytest

from labctl.drivers.storage.base import aware_epoch
from labctl.drivers.storage.powerstore import sample_metrics
from labctl.sim.arrays.history import VolumeRates
from labctl.sim.powerstore import metrics as sim_metrics

# field -> the reference's wording of its unit
REFERENCE_UNITS = {
    "timestamp": "End of sample period.",
    "avg_read_latency": "microseconds",
    "avg_write_latency": "microseconds",
    "avg_latency": "microseconds",
    "avg_read_size": "bytes",
    "avg_write_size": "bytes",
    "avg_io_size": "bytes",
    "read_iops": "per second",
    "write_iops": "per second",
    "total_iops": "per second",
    "read_bandwidth": "bytes per second",
    "write_bandwidth": "byte/sec",
    "total_bandwidth": "bytes per second",
    "repeat_count": "Number of times the metrics are repeated.",
}

SAMPLE = {
    "timestamp": "2020-05-11T07:40:20Z",
    "read_iops": 100.0,
    "write_iops": 50.0,
    "read_bandwidth": 8_192_000.0,  # bytes/s
    "write_bandwidth": 409_600.0,
    "avg_read_latency": 1500.0,  # microseconds
    "avg_write_latency": 500.0,
    "avg_latency": 1166.6667,
    "avg_io_size": 8192.0,  # bytes
    "repeat_count": 2,
}


def test_the_driver_reads_each_field_in_the_reference_s_unit() -> None:
    first, second = sample_metrics("vol", SAMPLE, 20.0)
    assert first.ts == aware_epoch("2020-05-11T07:40:20Z")  # end of the period
    assert second.ts == first.ts + 20.0  # a repeated sample stands for the next period too
    assert first.read_latency_ms == pytest.approx(1.5) and first.write_latency_ms == pytest.approx(0.5)
    assert first.read_mb_s == pytest.approx(8.192) and first.write_mb_s == pytest.approx(0.4096)
    assert first.io_size_kb == pytest.approx(8.0)
    assert (first.read_iops, first.write_iops) == (100.0, 50.0)


def test_the_simulated_appliance_answers_every_field_in_the_reference_s_unit() -> None:
    """One period of 100 reads/s of 8 KiB taking 1.5 ms: the figures as the reference's units give them."""
    r = VolumeRates("vol", "node_a", 0.0, 20.0, 100.0, 50.0, 819_200.0, 204_800.0, 0.0015, 0.0005, 0.2)
    v = sim_metrics.values(r)
    assert set(v) <= set(REFERENCE_UNITS)
    assert v["avg_read_latency"] == pytest.approx(1500.0)  # microseconds
    assert v["avg_write_latency"] == pytest.approx(500.0)
    assert v["read_bandwidth"] == 819_200.0  # bytes per second
    assert v["avg_read_size"] == pytest.approx(8192.0)  # bytes
    assert v["avg_io_size"] == pytest.approx((819_200.0 + 204_800.0) / 150.0)
    # and the driver reads the simulator's figures back into the same rates
    (m,) = sample_metrics("vol", {**v, "timestamp": "2020-05-11T07:40:20Z"}, 20.0)
    assert m.read_latency_ms == pytest.approx(1.5) and m.read_mb_s == pytest.approx(0.8192)
