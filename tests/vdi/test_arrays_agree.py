"""The four array backends read the same VDI twin state over their real protocols and agree.

One physical twin (desktops booting on a small VDI lab, its array ``arr-1``), four simulators serving
that one twin array each with its own management API (Unity REST, PowerStore REST, SC Data Collector
REST, EqualLogic SNMP), four drivers reading them. The lab clock is a fast-forward clock moved in
whole minutes, so every API's sample ends on the same boundary and every backend's normalised
figures for a minute come from the same twin counters; they must agree within each API's rounding
(SC answers integers: IOPS, KiB/s, microseconds). A controller failover then shows in every API
as its own kind of controller state, with the latency spike in every backend's figures.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.drivers.storage import open_storage
from labctl.drivers.storage.base import StorageDriver, VolumeMetrics
from labctl.inventory.model import Lab, StorageArray, StorageKind, Tls, TlsMode
from labctl.sim.endpoint import SimContext
from labctl.sim.equallogic import EqualLogicAgent
from labctl.sim.faults import FaultBook
from labctl.sim.powerstore import PowerStoreArray
from labctl.sim.sc import DataCollector
from labctl.sim.twin import FastForwardClock, PhysicalTwin, build_twin
from labctl.sim.twin.interface import PowerAction
from labctl.sim.unity import UnityArray
from tests.labfiles import _free_block
from tests.sim.arraylabs import SECRETS, write_secrets
from tests.vdi.labs import load, vdi_yaml

pytestmark = pytest.mark.integration

MINUTE = 60.0
WALL_TIMEOUT_S = 10.0


@dataclass
class Backends:
    clock: FastForwardClock
    twin: PhysicalTwin
    drivers: dict[str, StorageDriver]


def arrays(lab: Lab, block: int) -> dict[str, StorageArray]:
    """The twin's arr-1 as four arrays of four kinds on the test's loopback block."""
    luns = lab.storage["arr-1"].luns
    base = {"tls": Tls(mode=TlsMode.INSECURE), "luns": luns}
    return {
        "unity": StorageArray(
            name="u", kind=StorageKind.UNITY, url=f"https://127.{block}.4.1:8443", user="admin",
            password="secret:sim.unity_password", **base,
        ),
        "powerstore": StorageArray(
            name="p", kind=StorageKind.POWERSTORE, url=f"https://127.{block}.4.2:8443", user="admin",
            password="secret:sim.powerstore_password", **base,
        ),
        "sc": StorageArray(
            name="s", kind=StorageKind.SC, url=f"https://127.{block}.4.3:3033/api/rest", user="Admin",
            password="secret:sim.sc_password", **base,
        ),
        "equallogic": StorageArray(
            name="e", kind=StorageKind.EQUALLOGIC, url=f"snmp://127.{block}.4.4:16100", user="sanhq",
            password="secret:sim.equallogic_community", luns=luns,
        ),
    }  # fmt: skip


@pytest.fixture
def backends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backends]:
    write_secrets(tmp_path, monkeypatch)
    lab = load(
        tmp_path,
        vdi_yaml(desktops=24, faults="- {kind: array_controller_failover, targets: [arr-1], after_s: 900}"),
    )
    clock = FastForwardClock(scale=600.0)
    clock.advance(MINUTE - clock.now() % MINUTE)  # on a minute boundary
    twin = build_twin(lab, clock, FaultBook(lab.faults, clock))
    assert isinstance(twin, PhysicalTwin)
    ctx = SimContext(lab, twin, FaultBook(lab.faults, clock), clock, tmp_path / "state", SECRETS)
    arrs = arrays(lab, _free_block(random.Random()))
    servers = [
        UnityArray(ctx, arrs["unity"], "arr-1"),
        PowerStoreArray(ctx, arrs["powerstore"], "arr-1"),
        DataCollector(ctx, arrs["sc"], "arr-1"),
        EqualLogicAgent(ctx, arrs["equallogic"], "arr-1"),
    ]
    drivers: dict[str, StorageDriver] = {}
    try:
        for s in servers:
            s.start()
        for kind, arr in arrs.items():
            drivers[kind] = open_storage(arr, timeout_s=5).open()
        yield Backends(clock, twin, drivers)
    finally:
        for d in drivers.values():
            d.close()
        for s in reversed(servers):
            s.stop()


def minute_of(kind: str, drv: StorageDriver, end: float) -> dict[str, VolumeMetrics]:
    """Each volume's figures for the minute ending at ``end``, from one backend (sub-minute samples
    combined: IOPS and MB/s averaged, latency and size weighted by I/O)."""
    got: list[VolumeMetrics] = []
    deadline = time.monotonic() + WALL_TIMEOUT_S
    while time.monotonic() < deadline:
        got += [v for v in drv.read_metrics().volumes if end - MINUTE < v.ts <= end + 1e-6]
        if any(abs(v.ts - end) < 0.05 for v in got):  # the Unity sampler takes its sample a moment later
            break
        time.sleep(0.02)
    assert got, f"{kind}: no sample ending at {end}"
    out = {}
    for vol in {v.volume for v in got}:
        parts = [v for v in got if v.volume == vol]
        span = sum(v.interval_s for v in parts)
        assert span == pytest.approx(MINUTE, abs=0.05), (kind, vol, [v.interval_s for v in parts])
        r = sum(v.read_iops * v.interval_s for v in parts) / span
        w = sum(v.write_iops * v.interval_s for v in parts) / span
        ios = sum(v.iops * v.interval_s for v in parts)
        lat = sum((v.latency_ms or 0.0) * v.iops * v.interval_s for v in parts) / ios if ios else None
        size = sum((v.io_size_kb or 0.0) * v.iops * v.interval_s for v in parts) / ios if ios else None
        out[vol] = VolumeMetrics(
            vol, end, span, r, w,
            sum(v.read_mb_s * v.interval_s for v in parts) / span,
            sum(v.write_mb_s * v.interval_s for v in parts) / span,
            None, None, lat, size,
        )  # fmt: skip
    return out


def test_four_backends_report_the_same_twin_minute_by_minute_and_each_shows_the_failover(
    backends: Backends,
) -> None:
    clock, twin, drivers = backends.clock, backends.twin, backends.drivers
    twin.power_many([d.name for d in twin.desktops()], PowerAction.ON)
    for d in drivers.values():
        d.start_metrics(5)
    latency: dict[str, list[float]] = {k: [] for k in drivers}
    for minute in range(18):  # a boot storm; the controller fails at 15 min
        clock.advance(MINUTE)
        end = clock.now()
        per = {k: minute_of(k, d, end) for k, d in drivers.items()}
        ref = per["unity"]
        assert set(ref) == {"pvs-store", "ds-1"}
        for kind, vols in per.items():
            assert set(vols) == set(ref), kind
            for name, v in vols.items():
                u = ref[name]
                # SC answers whole IOPS and KiB/s: within half a unit; Unity and EqualLogic count whole
                # I/Os (a minute's count within one of the exact one), PowerStore rates are exact
                abs_iops = 0.5 if kind == "sc" else 2.0 / MINUTE
                assert v.read_iops == pytest.approx(u.read_iops, rel=5e-3, abs=abs_iops + 1e-6), (
                    kind,
                    name,
                    minute,
                )
                assert v.write_iops == pytest.approx(u.write_iops, rel=5e-3, abs=abs_iops + 1e-6), (
                    kind,
                    name,
                )
                # SC: whole KiB/s
                abs_mb = 1024 / 1e6 if kind == "sc" else 1e-3
                assert v.read_mb_s == pytest.approx(u.read_mb_s, rel=5e-3, abs=abs_mb), (kind, name)
                assert v.write_mb_s == pytest.approx(u.write_mb_s, rel=5e-3, abs=abs_mb), (kind, name)
                if u.iops > 5:
                    assert v.latency_ms == pytest.approx(u.latency_ms, rel=1e-2, abs=2e-3), (
                        kind,
                        name,
                        minute,
                    )
                if u.iops > (50 if kind == "sc" else 5):  # SC's size comes from whole KiB/s over whole IOPS
                    assert v.io_size_kb == pytest.approx(u.io_size_kb, rel=2e-2, abs=0.1), (
                        kind,
                        name,
                        minute,
                    )
        for kind in drivers:
            lat = per[kind]["ds-1"].latency_ms
            latency[kind].append(lat or 0.0)
    assert max(latency["unity"][:14]) > 0  # the storm did I/O on the write-cache volume
    for kind, drv in drivers.items():
        states = {c.controller: c.state for c in drv.read_metrics().controllers}
        assert "failed" in states.values(), (kind, states)  # each API says so in its own way
        assert max(latency[kind][14:]) > 10 * max(latency[kind][:14]), (kind, latency[kind])  # the stall


def test_each_backends_array_total_adds_up_every_volume_of_a_read_and_tiers_carry_drive_io(
    backends: Backends,
) -> None:
    """The array's own figure is every volume of one read summed (a backend that stamps volumes of
    one poll at different times would total one volume per timestamp), and the EqualLogic disk
    table's drives are counted in their tier (SSD by type, spindles by RPM)."""
    clock, twin, drivers = backends.clock, backends.twin, backends.drivers
    twin.power_many([d.name for d in twin.desktops()], PowerAction.ON)
    for d in drivers.values():
        d.start_metrics(5)
    clock.advance(2 * MINUTE)
    for kind, drv in drivers.items():
        batch = drv.read_metrics()
        deadline = time.monotonic() + WALL_TIMEOUT_S
        while not batch.volumes and time.monotonic() < deadline:  # Unity's sampler runs a moment later
            time.sleep(0.02)
            batch = drv.read_metrics()
        last = max(v.ts for v in batch.volumes)
        vols = [v for v in batch.volumes if v.ts == last]
        assert {v.volume for v in vols} == {"pvs-store", "ds-1"}, kind
        totals = {
            r.metric: r.value for r in batch.readings("arr") if r.entity == "arr" and r.source_ts == last
        }
        assert sum(v.iops for v in vols) > 0, kind
        assert totals["iops"] == pytest.approx(sum(v.iops for v in vols)), kind
    clock.advance(MINUTE)
    tiers = {t.tier: t for t in drivers["equallogic"].read_metrics().tiers}
    assert set(tiers) == {"ssd"} and tiers["ssd"].iops > 0, tiers
