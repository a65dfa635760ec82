"""The SC (Data Collector) driver's calls and parsing against what the published clients do
(OpenStack Cinder ``storagecenter_api.py``, telegraf ``dellstoragecenter``, san_exporter ``sc8000``);
no recording of a real Data Collector's answers was found, so the answers here are the clients'
shapes with made values."""

from __future__ import annotations

import pytest

from labctl.drivers.storage.base import aware_epoch
from labctl.drivers.storage.sc import ScDriver, usage_metrics
from labctl.inventory.model import StorageArray
from tests.conformance.storage.replay import Answer, Call, Replay

SSN = 64702
# telegraf's scVolumeIoUsageStat fields (json tags), values made
SAMPLE = {
    "time": "2018-05-14T10:05:00-05:00",
    "startTime": "2018-05-14T10:00:00-05:00",
    "readIops": 120,
    "writeIops": 80,
    "totalIops": 200,
    "readKbPerSecond": 960,
    "writeKbPerSecond": 640,
    "averageKbPerIo": 8,
    "readLatency": 1500,  # microseconds (san_exporter divides by 1000 for ms)
    "writeLatency": 500,
    "xferLatency": 1100,
}
# What the published clients call (method, path under /api/rest)
PUBLISHED = {
    ("POST", "/api/rest/ApiConnection/Login"): "telegraf Login, Cinder open_connection",
    ("POST", "/api/rest/ApiConnection/Logout"): "Cinder close_connection",
    ("GET", "/api/rest/ApiConnection/ApiConnection/0/StorageCenterList"): "Cinder, Dell's published samples",
    ("POST", "/api/rest/StorageCenter/ScVolume/GetList"): "telegraf GetVolumeList, Cinder _get_volume_list",
    ("POST", "/api/rest/StorageCenter/ScVolume/v1/GetHistoricalIoUsage"): "telegraf GetVolumeIoUsageStats",
}


def route(c: Call) -> Answer:
    if c.path.endswith("/ApiConnection/Login"):
        return Answer(200, {"instanceId": "0", "apiVersion": "4.1", "providerVersion": "16.3"})
    if c.path.endswith("/StorageCenterList"):
        return Answer(
            200, [{"instanceId": str(SSN), "scSerialNumber": SSN, "name": "SC 64702", "version": "7.1"}]
        )
    if c.path.endswith("/ScVolume/GetList"):
        terms = c.body["filter"]["filters"]
        assert terms == [{"attributeName": "scSerialNumber", "attributeValue": SSN, "filterType": "Equals"}]
        return Answer(200, [{"instanceId": "v1", "name": "vdi-ds-01", "scSerialNumber": SSN}])
    if c.path.endswith("/GetHistoricalIoUsage"):
        return Answer(200, [SAMPLE])
    if c.path.endswith("/Logout"):
        return Answer(204)
    return Answer(404, {"result": f"not replayed: {c.path}"})


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCTL_TEST_SC_PW", "replayed")


def test_volumes_are_listed_the_way_the_published_clients_list_them() -> None:
    """GET .../StorageCenter/{ssn}/VolumeList is in no published client or recording; ScVolume/GetList
    with a PayloadFilter is (telegraf, Cinder)."""
    with Replay(route) as server:
        arr = StorageArray.model_validate(
            {
                "name": "sc",
                "kind": "sc",
                "url": server.url,
                "user": "Admin",
                "password": "env:LABCTL_TEST_SC_PW",
            }
        )
        with ScDriver(arr, timeout_s=5) as drv:
            assert drv.volume_names() == {"v1": "vdi-ds-01"}
            assert drv._usage("v1", None) == [SAMPLE]
        calls = server.endpoints()
    assert calls <= set(PUBLISHED), sorted(calls - set(PUBLISHED))


def test_a_usage_sample_in_the_clients_units() -> None:
    m = usage_metrics("vdi-ds-01", SAMPLE, 300)
    assert m.interval_s == 300
    assert (m.read_iops, m.write_iops) == (120, 80)
    assert m.read_latency_ms == pytest.approx(1.5) and m.latency_ms == pytest.approx(1.1)
    assert m.read_mb_s == pytest.approx(960 * 1024 / 1e6)  # KiB/s, as the driver reads "Kb" (unverified)
    assert m.ts == aware_epoch("2018-05-14T15:05:00Z")


def test_an_array_timestamp_without_a_zone_is_refused_not_guessed() -> None:
    """datetime.timestamp() of a zone-less value used the controller's own zone, silently."""
    with pytest.raises(ValueError, match="carries no zone"):
        usage_metrics("v", {**SAMPLE, "time": "2018-05-14T10:05:00"}, 300)
