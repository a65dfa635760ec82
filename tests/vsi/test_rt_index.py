"""The response-time index: baseline, saturation point and UX bands (docs/response-time-index.md).

On synthetic operations (the algorithm step by step), and on the lab twin driven directly: a login
ramp on an array with too few spindles saturates, the same ramp on SSDs does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records.rt_index import IndexParams, SessionSpan, TimedOp, UxBand, compute
from labctl.sim.twin import FastForwardClock, build_twin
from labctl.sim.twin.interface import PowerAction, SessionRefused
from tests.vdi.labs import load, vdi_yaml

P = IndexParams(sample_s=60, min_ops_per_sample=3, baseline_samples=5, baseline_outliers=1, consecutive=3)


def _ramp(slow_after: int | None, sessions: int = 20) -> tuple[list[TimedOp], list[SessionSpan]]:
    """A session every 60 s, each doing two operations a minute; past ``slow_after`` sessions every
    operation takes 2 s longer."""
    ops, spans = [], []
    for k in range(sessions):
        spans.append(SessionSpan(f"s{k}", f"d{k}", start_ts=k * 60.0))
    for minute in range(sessions + 10):
        active = min(minute + 1, sessions)
        for k in range(active):
            for j, (name, base) in enumerate((("open", 0.8), ("type", 0.3))):
                extra = 2.0 if slow_after is not None and active > slow_after else 0.0
                ops.append(TimedOp(f"s{k}", name, minute * 60.0 + 1 + j * 20 + k * 0.1, base + extra))
    return ops, spans


def test_baseline_is_the_unloaded_speed_and_no_saturation_without_load() -> None:
    ops, spans = _ramp(None)
    r = compute(ops, spans, P)
    # every operation at its own reference: a typical operation takes the mean of the references
    assert r.references_s == pytest.approx({"open": 0.8, "type": 0.3})
    assert r.baseline_s == pytest.approx(0.55)
    assert not r.saturated and r.saturation_sessions is None
    assert set(r.bands.values()) == {UxBand.GOOD} and r.share(UxBand.GOOD) == 1.0


def test_saturation_point_is_the_session_count_where_it_stays_above() -> None:
    ops, spans = _ramp(12)
    r = compute(ops, spans, P)
    assert r.baseline_s == pytest.approx(0.55)
    assert r.saturated and r.saturation_sessions == 13  # the first sample past 12 sessions
    # the sessions that saw the slowdown longest are poor, none of them good past the limit
    assert r.bands["d19"] is UxBand.POOR


def test_a_short_spike_is_not_saturation() -> None:
    ops, spans = _ramp(None)
    spiked = [
        TimedOp(o.session, o.name, o.start_ts, o.response_s + (3.0 if 600 <= o.start_ts < 700 else 0.0))
        for o in ops
    ]
    r = compute(spiked, spans, P)
    assert not r.saturated  # two samples above the limit are fewer than `consecutive`


def test_failed_logons_are_poor() -> None:
    ops, spans = _ramp(None, sessions=3)
    r = compute(ops, [*spans, SessionSpan("s9", "d9", 0.0, failed=True)], P)
    assert r.bands["d9"] is UxBand.POOR


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="consecutive"):
        compute([], [], IndexParams(consecutive=0))


# --- on the twin -----------------------------------------------------------------------------------


def _login_ramp(
    tmp_path: Path, tiers: tuple[str, ...], desktops: int
) -> tuple[list[TimedOp], list[SessionSpan]]:
    """Boot every desktop, then a user every 20 lab s, everyone working until 20 minutes after the last."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    lab = load(tmp_path, vdi_yaml(desktops=desktops, hosts=4, tiers=tiers))
    clock = FastForwardClock(scale=60)
    twin = build_twin(lab, clock)
    names = [m.name for m in lab.vms]
    twin.power_many(names, PowerAction.ON)
    clock.advance(900)
    sids: dict[str, str] = {}
    pending = list(names)
    while pending:
        d = pending[0]
        try:
            sids[d] = twin.start_session(d, f"u-{d}").session_id
            pending.pop(0)
        except SessionRefused:
            pass
        clock.advance(20)
    clock.advance(1200)
    ops, spans = [], []
    for d, sid in sids.items():
        info = twin.session(sid)
        on = info.logged_in_lab_s
        spans.append(SessionSpan(sid, d, on if on is not None else info.requested_lab_s, failed=on is None))
        ops += [TimedOp(sid, o.name, o.started_lab_s, o.response_s) for o in twin.session_operations(sid)]
    return ops, spans


@pytest.mark.slow
def test_the_twin_saturates_on_too_few_spindles_and_not_on_ssds(tmp_path: Path) -> None:
    params = IndexParams(
        sample_s=120, min_ops_per_sample=5, baseline_samples=5, baseline_outliers=1, consecutive=3
    )
    ssd = compute(
        *_login_ramp(tmp_path / "ssd", ("{drive: ssd, count: 8, capacity_gb: 400, raid: 10}",), 60), params
    )
    assert ssd.baseline_s is not None and not ssd.saturated
    assert ssd.share(UxBand.GOOD) >= 0.9
    hdd = compute(
        *_login_ramp(
            tmp_path / "nl", ("{drive: nl, count: 4, capacity_gb: 2000, raid: 5, raid_width: 4}",), 60
        ),
        params,
    )
    assert hdd.saturated, [round(s.value_s, 2) for s in hdd.samples]
    assert hdd.saturation_sessions is not None and 0 < hdd.saturation_sessions < 60
    assert hdd.share(UxBand.GOOD) < 0.9
