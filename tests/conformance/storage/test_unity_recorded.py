"""The Unity driver against responses recorded from real Unity arrays (storops' test data),
replayed by a small server on loopback: paging, units, counter arithmetic, and that every call
the driver makes is one a real array was recorded answering or one the published client makes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from labctl.drivers.storage.unity import COUNTER_PATHS, CSRF_HEADER, UnityDriver
from labctl.inventory.model import StorageArray
from tests.conformance.storage.replay import Answer, Call, Replay, recording

REC = "unity/"
TOKEN = "recorded-session-token"
# Calls answered from a recording of a real array (storops_test/unity/rest_data/...)
RECORDED = {
    ("GET", "/api/types/basicSystemInfo/instances"),
    ("GET", "/api/types/metric/instances"),
    ("GET", "/api/types/lun/instances"),
    ("GET", "/api/types/storageProcessor/instances"),
    ("POST", "/api/types/metricRealTimeQuery/instances"),
    ("GET", "/api/types/metricQueryResult/instances"),
}
# Calls no recording holds, with the published client that makes the same call
REFERENCE = {
    (
        "GET",
        "/api/types/loginSessionInfo/instances",
    ): "storops connector: basic auth on a GET, CSRF token from the answer's header",
    (
        "POST",
        "/api/types/loginSessionInfo/action/logout",
    ): "storops UnityClient.type_action: POST /api/types/{type}/action/{action}",
    (
        "DELETE",
        "/api/instances/metricRealTimeQuery/4",
    ): "storops UnityClient.delete: DELETE /api/instances/{type}/{id}",
}


class UnityRecording:
    """Routes requests to the recorded answers; result reads walk through the recorded queries."""

    def __init__(self, results: tuple[str, ...] = ("query_id_128", "query_id_130")):
        self.results = list(results)
        self.queries_created = 0

    def __call__(self, c: Call) -> Answer:
        assert c.headers.get("x-emc-rest-client") == "true", (
            "Unity wants X-EMC-REST-CLIENT: true on every request"
        )
        if c.method in ("POST", "DELETE") and c.path != "/api/types/loginSessionInfo/instances":
            assert c.headers.get(CSRF_HEADER.lower()) == TOKEN, f"{c.method} {c.path} without the CSRF token"
        key = (c.method, c.path)
        if key == ("GET", "/api/types/loginSessionInfo/instances"):
            return Answer(200, {"entries": []}, {CSRF_HEADER: TOKEN})
        if key == ("GET", "/api/types/basicSystemInfo/instances"):
            return Answer(200, recording(REC + "basicSystemInfo_all.json"))
        if key == ("GET", "/api/types/metric/instances"):
            page = int(c.query.get("page", "1"))
            return Answer(200, recording(REC + f"metric_page_{page}.json.gz"))
        if key == ("GET", "/api/types/lun/instances"):
            return Answer(200, recording(REC + "lun_all.json"))
        if key == ("GET", "/api/types/storageProcessor/instances"):
            return Answer(200, recording(REC + "storageProcessor_all.json"))
        if key == ("POST", "/api/types/metricRealTimeQuery/instances"):
            self.queries_created += 1
            return Answer(201, recording(REC + "metricRealTimeQuery_create_id_4.json"))
        if key == ("GET", "/api/types/metricQueryResult/instances"):
            if not self.results:
                return Answer(422, recording(REC + "metricRealTimeQuery_query_id_not_found.json"))
            return Answer(200, recording(REC + f"metricQueryResult_{self.results.pop(0)}.json.gz"))
        if key in REFERENCE:
            return Answer(204)
        return Answer(404, {"error": {"messages": [{"en-US": f"not in the recording: {c.method} {c.path}"}]}})


def _array(url: str) -> StorageArray:
    return StorageArray.model_validate(
        {
            "name": "unity-rec",
            "kind": "unity",
            "url": url,
            "user": "admin",
            "password": "env:LABCTL_TEST_UNITY_PW",
        }
    )


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCTL_TEST_UNITY_PW", "recorded")


def _entry(rec: dict[str, Any], path: str) -> dict[str, Any]:
    return next(e["content"] for e in rec["entries"] if e["content"]["path"] == path)


def _lun_total(rec: dict[str, Any], path: str, lun: str) -> float:
    return sum(float(per_sp[lun]) for per_sp in _entry(rec, path)["values"].values() if lun in per_sp)


def test_the_driver_reads_every_page_of_a_real_arrays_metric_catalogue() -> None:
    """The paging defect: the real catalogue is 2,411 metrics in two pages of 2,000; the driver read
    the first page only and lost 411 of them."""
    pages = [recording(REC + f"metric_page_{n}.json.gz") for n in (1, 2)]
    assert [len(p["entries"]) for p in pages] == [2000, 411]
    assert {"rel": "next", "href": "&page=2"} in pages[0]["links"]
    with Replay(UnityRecording()) as server, UnityDriver(_array(server.url), timeout_s=5) as drv:
        catalog = drv.metric_catalog()
        paths = {e["content"]["path"] for p in pages for e in p["entries"]}
        assert len(paths) == 2405  # 2,411 entries: six paths are listed twice (historical and real-time)
        assert set(catalog) == paths
        assert drv.missing_metrics() == []


def test_a_path_listed_twice_in_the_real_catalogue_is_real_time_when_either_entry_is() -> None:
    with Replay(UnityRecording()) as server, UnityDriver(_array(server.url), timeout_s=5) as drv:
        catalog = drv.metric_catalog()
    for path in ("kpi.sp.+.utilization", "kpi.lun.+.sp.+.responseTime", "kpi.disk.+.sp.+.queueLength"):
        assert catalog[path]["isRealtimeAvailable"] is True, path
    pages_asked = [c.query.get("page", "1") for c in server.calls if c.path == "/api/types/metric/instances"]
    assert pages_asked[:2] == ["1", "2"]


def test_the_driver_reads_each_counter_in_the_unit_the_real_catalogue_gives() -> None:
    from labctl.drivers.storage.unity import COUNTER_UNITS  # the driver's declared units

    catalog = {
        e["content"]["path"]: e["content"]
        for n in (1, 2)
        for e in recording(REC + f"metric_page_{n}.json.gz")["entries"]
    }
    for path, unit in COUNTER_UNITS.items():
        assert catalog[path]["unitDisplayString"] == unit, path
        assert catalog[path]["isRealtimeAvailable"] is True
    assert set(COUNTER_UNITS) == set(COUNTER_PATHS)


def test_rates_from_two_real_readings_are_the_counter_deltas_over_the_array_s_time() -> None:
    """Two real result sets of one array (queries 128 and 130, 13.5 h apart) give each LUN's rates:
    summed over both SPs, blocks of 512 bytes, totalIoTime in microseconds."""
    a = recording(REC + "metricQueryResult_query_id_128.json.gz")
    b = recording(REC + "metricQueryResult_query_id_130.json.gz")
    with Replay(UnityRecording()) as server, UnityDriver(_array(server.url), timeout_s=5) as drv:
        info = drv.info()
        assert (info.model, info.software_version, info.api_version) == ("Unity 500", "4.0.0", "4.0")
        drv.start_metrics(60)
        assert drv.query_id == 4
        first = drv.read_metrics()
        second = drv.read_metrics()
    assert first.volumes == ()
    assert {c.state for c in second.controllers} == {"active"}  # both SPs health 5 (OK)
    got = {v.volume: v for v in second.volumes}
    t0 = datetime.fromisoformat(_entry(a, "sp.*.storage.lun.*.reads")["timestamp"].replace("Z", "+00:00"))
    t1 = datetime.fromisoformat(_entry(b, "sp.*.storage.lun.*.reads")["timestamp"].replace("Z", "+00:00"))
    dt = (t1 - t0).total_seconds()
    assert dt == 48540.0
    busy = 0
    for lun, v in got.items():

        def d(p: str, lun: str = lun) -> float:
            return _lun_total(b, f"sp.*.storage.lun.*.{p}", lun) - _lun_total(
                a, f"sp.*.storage.lun.*.{p}", lun
            )

        assert v.interval_s == dt
        assert v.read_iops == pytest.approx(d("reads") / dt)
        assert v.write_iops == pytest.approx(d("writes") / dt)
        assert v.read_mb_s == pytest.approx(d("readBlocks") * 512 / dt / 1e6)
        assert v.write_mb_s == pytest.approx(d("writeBlocks") * 512 / dt / 1e6)
        ios = d("reads") + d("writes")
        if ios > 0:
            busy += 1
            assert v.latency_ms == pytest.approx(d("totalIoTime") / ios / 1000.0)
    assert busy >= 3  # the recording has LUNs that did I/O in between


def test_a_query_the_array_dropped_is_started_again_on_its_recorded_422() -> None:
    routes = UnityRecording(results=("query_id_128",))
    with Replay(routes) as server, UnityDriver(_array(server.url), timeout_s=5) as drv:
        drv.start_metrics(60)
        drv.read_counters()
        assert drv.read_counters() == []  # "Query ID not found: 4." (422, as recorded)
        assert routes.queries_created == 2


def test_every_call_the_driver_makes_is_recorded_or_made_by_the_published_client() -> None:
    with Replay(UnityRecording()) as server:
        with UnityDriver(_array(server.url), timeout_s=5) as drv:
            drv.info()
            drv.missing_metrics()
            drv.volume_names()
            drv.start_metrics(60)
            drv.read_metrics()
            drv.read_metrics()
        calls = server.endpoints()
    unknown = calls - RECORDED - set(REFERENCE)
    assert not unknown, f"calls neither recorded nor in the published client: {sorted(unknown)}"
    assert set(REFERENCE) <= calls and calls >= RECORDED
