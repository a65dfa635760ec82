"""The Unity driver against the simulated Unity REST API over HTTPS, token expiry included."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from labctl.drivers.storage import open_storage
from labctl.drivers.storage.base import RateTracker, delta
from labctl.drivers.storage.unity import UnityDriver, UnityError
from labctl.inventory.model import Tls, TlsMode
from tests.drivers.simparts import endpoints, write_secrets

pytestmark = pytest.mark.integration


def array_of(parts, **tls):
    arr = parts.lab.storage["unity-01"]
    return arr.model_copy(update={"tls": Tls(mode=TlsMode.VERIFY, ca_file=str(parts.ca_file))})


def counters_after(drv: UnityDriver, n: int, wall_s: float = 5.0):
    got = []
    deadline = time.monotonic() + wall_s
    while len(got) < n and time.monotonic() < deadline:
        got.extend(drv.read_counters())
        time.sleep(0.05)
    return got


def test_query_lifecycle_and_rates_from_counter_deltas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.unity") as parts:
        svc = parts.endpoints[0]
        drv = open_storage(array_of(parts), timeout_s=5)
        assert isinstance(drv, UnityDriver)
        with drv:
            info = drv.info()
            assert info.model.startswith("Unity") and info.software_version
            assert drv.missing_metrics() == []
            drv.start_metrics(5)
            assert drv.query_id is not None
            readings = counters_after(drv, 5)  # 5 lab s per sample: ~83 ms of wall time at 60x
            assert {c.lun for c in readings} == {"vdi-ds-01"} and len(readings) >= 5
            assert len(RateTracker().feed(readings)) == len(readings) - 1
            # over several intervals, so the simulator's sampling jitter averages out
            d = delta(readings[0], readings[-1])
            assert d is not None
            # the placeholder twin: per SP 50 reads/s, 30 writes/s, 16 blocks per I/O, 1.5 ms busy per I/O
            assert d.read_iops == pytest.approx(100, rel=0.05)
            assert d.write_iops == pytest.approx(60, rel=0.05)
            assert d.read_mb_s == pytest.approx(100 * 16 * 512 / 1e6, rel=0.05)
            assert d.latency_ms == pytest.approx(1.5, rel=0.05)
            assert d.io_size_kb == pytest.approx(8.0, rel=0.01)
            # the array drops a query nobody reads: the driver starts a fresh one and reads on
            qid = drv.query_id
            with svc._lock:
                svc._queries.clear()
            assert drv.read_counters() == []
            assert drv.query_id not in (None, qid) and svc.active_queries() == 1
            assert counters_after(drv, 2)
            qid = drv.query_id
        assert drv.query_id is None and qid is not None
        assert svc.active_queries() == 0  # deleted on the array, not only forgotten
        assert svc.active_sessions() == 0  # logged out


def test_expired_session_logs_in_again_and_keeps_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    fault = "- {kind: storage_token_expiry, targets: [unity-01], after_s: 20}"
    with (
        endpoints(tmp_path, "labctl.sim.unity", faults=fault) as parts,
        UnityDriver(array_of(parts), timeout_s=5) as drv,
    ):
        drv.start_metrics(5)
        assert drv.logins == 1
        time.sleep(0.5)  # 30 lab seconds: past the 20 s lifetime
        got = counters_after(drv, 2)
        assert got, "reading went on after the session expired"
        assert drv.logins >= 2
        drv.stop_metrics()  # a DELETE needs the fresh session's CSRF token


def test_wrong_password_and_missing_header_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch, {"secret:sim.unity_password": "nope"})
    with endpoints(tmp_path, "labctl.sim.unity") as parts:
        with pytest.raises(UnityError) as ei:
            UnityDriver(array_of(parts), timeout_s=5).open()
        msg = str(ei.value)
        assert msg.startswith("unity-01 (unity https://") and "credentials rejected" in msg
        assert "secret:sim.unity_password" in msg and "nope" not in msg


def test_a_body_that_is_not_json_is_an_error_naming_the_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.sim.http import Response

    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.unity") as parts, UnityDriver(array_of(parts), timeout_s=5) as drv:
        svc = parts.endpoints[0]
        orig = svc.handle
        svc.handle = lambda req: (
            Response(200, b"<html>maintenance</html>", [], "text/html") if "/lun/" in req.path else orig(req)
        )
        try:
            with pytest.raises(UnityError, match="not JSON") as ei:
                drv.lun_names()
        finally:
            svc.handle = orig
        assert "unity-01" in str(ei.value) and "list LUNs" in str(ei.value)


def test_tls_verified_against_the_inventory_ca(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    with endpoints(tmp_path, "labctl.sim.unity") as parts:
        arr = parts.lab.storage["unity-01"].model_copy(update={"tls": Tls()})
        with pytest.raises(UnityError, match="TLS verification failed"):
            UnityDriver(arr, timeout_s=5).open()
        bogus = tmp_path / "empty.pem"
        bogus.write_text("")
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bogus))
        insecure = arr.model_copy(update={"tls": Tls(mode=TlsMode.INSECURE)})
        with UnityDriver(insecure, timeout_s=5) as drv:
            assert drv.info().model


def test_stopped_array_is_a_connection_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.unity") as parts:
        arr = array_of(parts)
    with pytest.raises(UnityError, match="cannot connect"):
        UnityDriver(arr, timeout_s=2).open()
