"""PVS device status is recorded on change, with a periodic refresh (sample-and-hold)."""

from __future__ import annotations

from types import SimpleNamespace

from labctl.lab.sources import PvsSource
from labctl.records.samples import Sample


def _s(ts: float, entity: str, metric: str, value: float) -> Sample:
    return Sample("pvs", entity, metric, "", ts, value)


def test_only_changes_and_refreshes_are_kept() -> None:
    src = PvsSource(SimpleNamespace(), SimpleNamespace(name="pvs-01"), refresh_s=60.0)  # type: ignore[arg-type]
    first = src._changed([_s(0, "c1", "retries", 0), _s(0, "c2", "retries", 0)])
    assert len(first) == 2  # everything is new
    assert src._changed([_s(5, "c1", "retries", 0), _s(5, "c2", "retries", 3)]) == [_s(5, "c2", "retries", 3)]
    assert src._changed([_s(30, "c1", "retries", 0), _s(30, "c2", "retries", 3)]) == []
    # a value unchanged for the refresh period is written again, so every window has an anchor
    assert src._changed([_s(60, "c1", "retries", 0), _s(60, "c2", "retries", 3)]) == [
        _s(60, "c1", "retries", 0)
    ]
