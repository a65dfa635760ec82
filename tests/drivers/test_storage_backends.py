"""Every storage backend's driver against its simulator over the real protocol (placeholder twin:
flat counters), the same normalised figures from each, and each API's login and expiry rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from labctl.drivers.storage import open_storage
from labctl.drivers.storage.base import StorageDriver, VolumeMetrics
from labctl.drivers.storage.registry import DRIVERS
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.model import StorageKind
from tests.sim.arraylabs import FLAT, SECRETS, array_lab, write_secrets

pytestmark = pytest.mark.integration

NAMES = {"unity": "unity-01", "powerstore": "ps-01", "sc": "sc-01", "equallogic": "eql-01"}


def metrics_for(
    drv: StorageDriver, lab_s: float, clock_scale: float, wall_max_s: float = 8.0
) -> list[VolumeMetrics]:
    """Read until the samples cover ``lab_s`` lab seconds."""
    got: list[VolumeMetrics] = []
    deadline = time.monotonic() + wall_max_s
    while sum(v.interval_s for v in got) < lab_s and time.monotonic() < deadline:
        got += drv.read_metrics().volumes
        time.sleep(min(0.2, 5 / clock_scale))
    return got


@pytest.mark.parametrize("kind", list(NAMES))
def test_each_backend_reads_the_flat_twin_as_the_same_normalised_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with array_lab(tmp_path, kinds=(kind,)) as al:
        drv = open_storage(al.array(NAMES[kind]), timeout_s=5)
        assert isinstance(drv, DRIVERS[StorageKind(kind)])
        with drv:
            info = drv.info()
            assert info.model and info.software_version  # what preflight prints
            assert drv.missing_metrics() == []
            assert "vdi-ds-01" in drv.volume_names().values()
            drv.start_metrics(5)
            got = metrics_for(drv, 120, al.clock.scale)
            assert got and {v.volume for v in got} == {"vdi-ds-01"}
            span = sum(v.interval_s for v in got)
            read = sum(v.read_iops * v.interval_s for v in got) / span
            write = sum(v.write_iops * v.interval_s for v in got) / span
            assert read == pytest.approx(FLAT["read_iops"], rel=0.02)
            assert write == pytest.approx(FLAT["write_iops"], rel=0.02)
            last = got[-1]
            assert last.latency_ms == pytest.approx(FLAT["latency_ms"], rel=0.02)
            assert last.io_size_kb == pytest.approx(FLAT["io_size_kb"], rel=0.02)
            assert last.read_mb_s == pytest.approx(last.read_iops * 8192 / 1e6, rel=0.02)
            batch = drv.read_metrics()
            assert batch.controllers and {c.state for c in batch.controllers} <= {"active", "standby"}
            readings = {(r.entity, r.metric): r for r in batch.readings(NAMES[kind])}
            assert all(r.unit == "bool" for (e, m), r in readings.items() if m == "controller_up")


@pytest.mark.parametrize("kind", ["powerstore", "sc"])
def test_an_expired_session_logs_in_again_and_reading_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    write_secrets(tmp_path, monkeypatch)
    fault = f"- {{kind: storage_token_expiry, targets: [{NAMES[kind]}], after_s: 120}}"
    with (
        array_lab(tmp_path, kinds=(kind,), faults=fault) as al,
        open_storage(al.array(NAMES[kind]), timeout_s=5) as drv,
    ):
        drv.start_metrics(5)
        logins = drv.logins  # type: ignore[attr-defined]
        time.sleep(al.clock.to_wall_s(150))  # past the 120 s lifetime
        got = metrics_for(drv, 60, al.clock.scale)
        assert got, "reading went on after the session expired"
        assert drv.logins > logins  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["powerstore", "sc"])
def test_a_wrong_password_names_the_credential_not_its_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    ref = f"secret:sim.{kind}_password"
    write_secrets(tmp_path, monkeypatch, {**SECRETS, ref: "nope-nope-nope"})
    with array_lab(tmp_path, kinds=(kind,)) as al:
        with pytest.raises(EndpointError) as ei:
            open_storage(al.array(NAMES[kind]), timeout_s=5).open()
        msg = str(ei.value)
        assert msg.startswith(f"{NAMES[kind]} ({kind} ") and "credentials rejected" in msg
        assert ref in msg and "nope-nope-nope" not in msg


def test_equallogic_wrong_community_times_out_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = "secret:sim.equallogic_community"
    write_secrets(tmp_path, monkeypatch, {**SECRETS, ref: "guessed-community"})
    with array_lab(tmp_path, kinds=("equallogic",)) as al:
        with pytest.raises(EndpointTimeout) as ei:
            open_storage(al.array("eql-01"), timeout_s=0.3, retries=0).open()
        assert ref in str(ei.value) and "guessed-community" not in str(ei.value)


def test_equallogic_over_snmpv3_with_the_user_and_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with array_lab(tmp_path, kinds=("equallogic",), equallogic_query="?version=3&auth=sha&priv=aes") as al:
        arr = al.array("eql-01")
        with open_storage(arr, timeout_s=5) as drv:
            assert drv.info().api_version == "SNMPv3"
            drv.start_metrics(5)
            got = metrics_for(drv, 30, al.clock.scale)
            assert got and got[-1].read_iops == pytest.approx(FLAT["read_iops"], rel=0.02)
        wrong_user = arr.model_copy(update={"user": "intruder"})
        with pytest.raises(EndpointError) as ei:  # the agent reports usmStatsUnknownUserNames
            open_storage(wrong_user, timeout_s=0.3, retries=0).open()
        assert "Unknown USM user" in str(ei.value) and "'intruder'" in str(ei.value)
