"""The simulated Dell EMC Unity REST API, driven over HTTPS with ``requests``.

Shapes are compared with real arrays' responses captured in storops' test data
(tests/sim/data/unity/, see its README).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.sim.endpoint import SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.twin.placeholder import PlaceholderTwin
from labctl.sim.unity import UnityArray, build_endpoints
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data" / "unity"
PASSWORD = "Password123!"
SECRETS = {"secret:sim.unity_password": PASSWORD}
TIMEOUT = 5
LUN_PATHS = [
    "sp.*.storage.lun.*.reads",
    "sp.*.storage.lun.*.writes",
    "sp.*.storage.lun.*.readBlocks",
    "sp.*.storage.lun.*.writeBlocks",
    "sp.*.storage.lun.*.totalIoTime",
]
UNITY_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def captured(name: str) -> Any:
    return json.loads((DATA / name).read_text())


class Client:
    """A requests.Session the way a Unity client holds one: REST header, basic auth, cookie jar."""

    def __init__(
        self, ctx: SimContext, array: UnityArray, password: str = PASSWORD, rest_header: bool = True
    ):
        self.base = array.base_url
        self.s = requests.Session()
        self.s.trust_env = False  # REQUESTS_CA_BUNDLE would override the CA below
        self.s.verify = str(ctx.state_dir / "ca.pem")
        self.s.auth = ("admin", password)
        self.s.headers.update({"Accept": "application/json", "Content-Type": "application/json"})
        if rest_header:
            self.s.headers["X-EMC-REST-CLIENT"] = "true"

    def get(self, path: str, **kw: Any) -> requests.Response:
        r = self.s.get(self.base + path, timeout=TIMEOUT, **kw)
        if "EMC-CSRF-TOKEN" in r.headers:
            self.csrf = r.headers["EMC-CSRF-TOKEN"]
        return r

    def post(self, path: str, body: Any, csrf: str | None = None, **kw: Any) -> requests.Response:
        headers = {"EMC-CSRF-TOKEN": csrf} if csrf else {}
        return self.s.post(self.base + path, json=body, headers=headers, timeout=TIMEOUT, **kw)

    def delete(self, path: str, csrf: str | None = None) -> requests.Response:
        headers = {"EMC-CSRF-TOKEN": csrf} if csrf else {}
        return self.s.delete(self.base + path, headers=headers, timeout=TIMEOUT)

    def login(self) -> str:
        r = self.get("/api/types/loginSessionInfo/instances")
        assert r.status_code == 200, r.text
        return r.headers["EMC-CSRF-TOKEN"]


@contextmanager
def sim(
    tmp_path: Path, *, faults: str = "", time_scale: float = 60.0
) -> Iterator[tuple[SimContext, UnityArray]]:
    lab = load_lab(
        make_test_lab(tmp_path, clients=2, faults=faults, time_scale=time_scale), every_machine=True
    )
    clock = LabClock(scale=lab.time_scale)
    ctx = SimContext(
        lab, PlaceholderTwin(lab, clock), FaultBook(lab.faults, clock), clock, tmp_path / "state", SECRETS
    )
    arrays = build_endpoints(ctx)
    assert [a.array.name for a in arrays] == ["unity-01"]
    try:
        for a in arrays:
            a.start()
        yield ctx, arrays[0]
    finally:
        for a in arrays:
            a.stop()


def assert_error_shape(r: requests.Response, status: int) -> str:
    """Unity's error body, compared with a captured one; returns the message."""
    assert r.status_code == status, r.text
    body = r.json()
    real = captured("error_404.json")
    assert set(body) == set(real) == {"error"}
    assert set(body["error"]) == set(real["error"])
    assert body["error"]["httpStatusCode"] == status
    assert isinstance(body["error"]["errorCode"], int)
    assert UNITY_TIME.fullmatch(body["error"]["created"])
    [msg] = body["error"]["messages"]
    assert set(msg) == {"en-US"}
    assert re.search(r"\(Error Code:0x[0-9a-f]+\)$", msg["en-US"])
    return msg["en-US"]


def assert_same_shape(ours: Any, theirs: Any, where: str = "") -> None:
    """Same JSON types, recursively, for the keys both sides have."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        for k in set(ours) & set(theirs):
            assert_same_shape(ours[k], theirs[k], f"{where}.{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list), where
        if ours and theirs:
            assert_same_shape(ours[0], theirs[0], f"{where}[0]")
    elif isinstance(theirs, bool):
        assert isinstance(ours, bool), where
    elif isinstance(theirs, (int, float)):
        assert isinstance(ours, (int, float)) and not isinstance(ours, bool), where
        if isinstance(theirs, float):
            assert isinstance(ours, float), where
    else:
        assert type(ours) is type(theirs), where


def fields_of(captured_body: dict[str, Any]) -> str:
    return re.search(r"fields=([^&]+)", captured_body["@base"]).group(1)  # type: ignore[union-attr]


def test_every_request_needs_the_rest_client_header(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        bare = Client(ctx, array, rest_header=False)
        msg = assert_error_shape(bare.get("/api/types/loginSessionInfo/instances"), 401)
        assert "X-EMC-REST-CLIENT" in msg
        assert "mod_sec_emc" not in bare.s.cookies


def test_login_sets_the_cookie_and_every_get_the_csrf_token(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        r = c.get("/api/types/loginSessionInfo/instances")
        assert r.status_code == 200
        assert "mod_sec_emc" in c.s.cookies
        token = r.headers["EMC-CSRF-TOKEN"]
        [entry] = r.json()["entries"]
        assert entry["content"]["id"] == "admin"
        # later requests ride on the cookie alone, and keep the session's token
        c.s.auth = None
        again = c.get("/api/types/pool/instances?fields=name")
        assert again.status_code == 200 and again.headers["EMC-CSRF-TOKEN"] == token
        assert array.active_sessions() == 1
        bad = Client(ctx, array, password="nope")
        assert_error_shape(bad.get("/api/types/loginSessionInfo/instances"), 401)
        other_user = Client(ctx, array)
        other_user.s.auth = ("root", PASSWORD)
        assert_error_shape(other_user.get("/api/types/loginSessionInfo/instances"), 401)
        garbled = Client(ctx, array)
        garbled.s.auth = None
        garbled.s.headers["Authorization"] = "Basic !!!"
        assert_error_shape(garbled.get("/api/types/loginSessionInfo/instances"), 401)
        assert array.active_sessions() == 1
        nobody = Client(ctx, array)
        nobody.s.auth = None
        assert_error_shape(nobody.get("/api/types/lun/instances"), 401)


def test_post_and_delete_need_the_csrf_token(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        token = c.login()
        body = {"paths": LUN_PATHS[:1], "interval": 5}
        msg = assert_error_shape(c.post("/api/types/metricRealTimeQuery/instances", body), 401)
        assert "EMC-CSRF-TOKEN" in msg
        assert_error_shape(c.post("/api/types/metricRealTimeQuery/instances", body, csrf="forged"), 401)
        created = c.post("/api/types/metricRealTimeQuery/instances", body, csrf=token)
        assert created.status_code == 201
        qid = created.json()["content"]["id"]
        assert_error_shape(c.delete(f"/api/instances/metricRealTimeQuery/{qid}"), 401)
        assert c.delete(f"/api/instances/metricRealTimeQuery/{qid}", csrf=token).status_code == 204
        gone = c.get(f"/api/types/metricQueryResult/instances?filter=queryId eq {qid}")
        msg = assert_error_shape(gone, 422)
        real = captured("metricRealTimeQuery_query_id_not_found.json")["error"]
        assert gone.json()["error"]["errorCode"] == real["errorCode"]
        assert msg == real["messages"][0]["en-US"].replace(": 4.", f": {qid}.")


def test_basic_system_info_matches_a_real_array(tmp_path: Path) -> None:
    real = captured("basicSystemInfo_all.json")
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        c.s.auth = None  # the one type a real Unity answers before login
        r = c.get(f"/api/types/basicSystemInfo/instances?compact=True&fields={fields_of(real)}")
        assert r.status_code == 200
        ours = r.json()
        assert set(ours) == set(real)
        assert set(ours["entries"][0]) == {"content"}
        assert set(ours["entries"][0]["content"]) == set(real["entries"][0]["content"])
        assert_same_shape(ours, real)
        assert ours["entries"][0]["content"]["model"].startswith("Unity ")


@pytest.mark.parametrize(("type_name", "file"), [("pool", "pool_all.json"), ("lun", "lun_all.json")])
def test_pool_and_lun_listing_match_a_real_array(tmp_path: Path, type_name: str, file: str) -> None:
    real = captured(file)
    always = set.intersection(*(set(e["content"]) for e in real["entries"]))
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        r = c.get(f"/api/types/{type_name}/instances?compact=True&fields={fields_of(real)}")
        assert r.status_code == 200
        ours = r.json()
        assert set(ours) == set(real)
        assert ours["links"] == real["links"]
        assert UNITY_TIME.fullmatch(ours["updated"])
        asked = set(fields_of(real).split(","))
        for entry in ours["entries"]:
            content = entry["content"]
            assert always <= set(content), always - set(content)  # what a real array always answers
            assert set(content) <= {f.split(".")[0] for f in asked} | {"id"}  # and nothing unasked
            assert_same_shape(content, real["entries"][0]["content"], type_name)
        names = [e["content"]["name"] for e in ours["entries"]]
        inventory = ctx.lab.storage["unity-01"]
        assert names == list(inventory.pools if type_name == "pool" else inventory.luns)


def test_lun_lookup_by_filter_and_by_name_and_only_ids_without_fields(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        plain = c.get("/api/types/lun/instances").json()
        assert [e["content"] for e in plain["entries"]] == [{"id": "sv_1"}]
        assert plain["entries"][0]["links"] == [{"rel": "self", "href": "/sv_1"}]
        hit = c.get(
            '/api/types/lun/instances?fields=name,pool.id,pool.name&filter=name eq "vdi-ds-01"'
        ).json()
        [lun] = [e["content"] for e in hit["entries"]]
        assert lun == {"id": "sv_1", "name": "vdi-ds-01", "pool": {"id": "pool_1", "name": "pool_vdi"}}
        miss = c.get('/api/types/lun/instances?filter=name eq "nope"').json()
        assert miss["entries"] == []
        by_name = c.get("/api/instances/lun/name:vdi-ds-01?fields=sizeTotal").json()
        assert by_name["content"]["id"] == "sv_1" and by_name["content"]["sizeTotal"] > 0
        assert_error_shape(c.get("/api/instances/lun/sv_99"), 404)
        assert_error_shape(c.get("/api/types/nothing/instances"), 404)
        assert_error_shape(c.get('/api/types/lun/instances?filter=name =="x"'), 400)


def test_metric_catalog_lists_the_realtime_lun_paths_like_a_real_array(tmp_path: Path) -> None:
    real = {e["content"]["path"]: e["content"] for e in captured("metric_lun_entries.json")["entries"]}
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        fields = "description,id,isHistoricalAvailable,isRealtimeAvailable,name,objectType,path,product,type,unit,unitDisplayString,visibility"
        r = c.get(
            f'/api/types/metric/instances?compact=True&fields={fields}&filter=path lk "sp.*.storage.lun.%"'
        )
        ours = {e["content"]["path"]: e["content"] for e in r.json()["entries"]}
        for path in LUN_PATHS:
            assert ours[path]["isRealtimeAvailable"] is True
            assert ours[path] == {k: v for k, v in real[path].items() if k in ours[path]}
            assert set(ours[path]) == set(real[path])
        for path, content in ours.items():
            assert path in real and content["id"] == real[path]["id"]
        token = c.login()
        rate = c.post(
            "/api/types/metricRealTimeQuery/instances",
            {"paths": ["sp.*.storage.lun.*.readsRate"], "interval": 5},
            token,
        )
        assert "real time" in assert_error_shape(rate, 422)
        unknown = c.post(
            "/api/types/metricRealTimeQuery/instances",
            {"paths": ["sp.*.storage.lun.*.bogus"], "interval": 5},
            token,
        )
        assert_error_shape(unknown, 422)
        assert_error_shape(
            c.post("/api/types/metricRealTimeQuery/instances", {"paths": LUN_PATHS}, token), 400
        )


def start_query(ctx: SimContext, array: UnityArray, interval: int) -> tuple[Client, str, requests.Response]:
    """A logged-in client, its CSRF token, and the answer to creating a real-time LUN query."""
    c = Client(ctx, array)
    token = c.login()
    created = c.post(
        "/api/types/metricRealTimeQuery/instances?compact=True",
        {"paths": LUN_PATHS, "interval": interval},
        token,
    )
    return c, token, created


def test_realtime_query_returns_raw_counters_as_strings_that_increase(tmp_path: Path) -> None:
    create_real = captured("metricRealTimeQuery_create_id_4.json")
    result_real = captured("metricQueryResult_query_id_19.json")
    with sim(tmp_path) as (ctx, array):
        interval = 5
        c, token, created = start_query(ctx, array, interval)
        assert created.status_code == 201
        body = created.json()
        assert set(body) == set(create_real) and set(body["content"]) == set(create_real["content"])
        assert_same_shape(body, create_real)
        qid = body["content"]["id"]
        assert body["content"]["paths"] == LUN_PATHS and body["content"]["interval"] == interval
        listed = c.get("/api/types/metricRealTimeQuery/instances").json()
        assert [e["content"]["id"] for e in listed["entries"]] == [qid]

        url = f"/api/types/metricQueryResult/instances?compact=True&fields=path,queryId,timestamp,values&filter=queryId eq {qid}"

        def read() -> dict[str, dict[str, Any]]:
            r = c.get(url)
            assert r.status_code == 200
            out = r.json()
            assert set(out) == set(result_real)
            for e in out["entries"]:
                assert set(e) == {"content"}
                assert set(e["content"]) == set(result_real["entries"][0]["content"])
                assert_same_shape(e["content"], result_real["entries"][0]["content"])
            return {e["content"]["path"]: e["content"] for e in out["entries"]}

        first = read()
        assert list(first) == LUN_PATHS
        for content in first.values():
            assert content["queryId"] == qid and UNITY_TIME.fullmatch(content["timestamp"])
            assert set(content["values"]) == {"spa", "spb"}
            for per_lun in content["values"].values():
                assert list(per_lun) == ["sv_1"]  # keyed by LUN id, as a real array does
                assert all(isinstance(v, str) and v.isdigit() for v in per_lun.values())
        time.sleep(ctx.clock.to_wall_s(3 * interval))
        second = read()
        t1, t2 = (
            datetime.fromisoformat(
                x["sp.*.storage.lun.*.reads"]["timestamp"].replace("Z", "+00:00")
            ).timestamp()
            for x in (first, second)
        )
        assert t2 > t1 and t2 % interval == 0  # samples on interval boundaries, round times
        for path in LUN_PATHS:
            # the SP that owns the LUN counts its I/O; its peer's counters stand still
            a, b = int(first[path]["values"]["spa"]["sv_1"]), int(second[path]["values"]["spa"]["sv_1"])
            assert b > a, path
            assert second[path]["values"]["spb"]["sv_1"] == first[path]["values"]["spb"]["sv_1"] == "0"
        # the counters are the twin's, raw: the rate a client computes is the twin's rate
        twin_reads = sum(c_.reads for c_ in ctx.twin.lun_counters("unity-01"))
        assert int(second["sp.*.storage.lun.*.reads"]["values"]["spa"]["sv_1"]) <= twin_reads
        assert c.delete(f"/api/instances/metricRealTimeQuery/{qid}", csrf=token).status_code == 204
        assert c.get("/api/types/metricRealTimeQuery/instances").json()["entries"] == []


def test_a_starved_sampler_still_gives_a_sample_at_every_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The array's sampler thread never runs (the simulator starved): a result request still
    answers a sample at every interval boundary since the query began, each at its own round
    time, with counters that grow from one to the next."""
    monkeypatch.setattr(UnityArray, "_sample_loop", lambda self: None)
    with sim(tmp_path) as (ctx, array):
        interval = 5
        c, _, created = start_query(ctx, array, interval)
        qid = created.json()["content"]["id"]
        time.sleep(ctx.clock.to_wall_s(4.2 * interval))
        r = c.get(f"/api/types/metricQueryResult/instances?compact=True&filter=queryId eq {qid}")
        assert r.status_code == 200
        reads = sorted(
            (
                datetime.fromisoformat(e["content"]["timestamp"].replace("Z", "+00:00")).timestamp(),
                int(e["content"]["values"]["spa"]["sv_1"]),
            )
            for e in r.json()["entries"]
            if e["content"]["path"] == "sp.*.storage.lun.*.reads"
        )
        boundaries = [t for t, _ in reads[1:]]  # the first sample is the query's creation
        assert len(boundaries) >= 4
        assert all(t % interval == 0 for t in boundaries)
        assert [b - a for a, b in itertools.pairwise(boundaries)] == [interval] * (len(boundaries) - 1)
        values = [v for _, v in reads]
        assert values == sorted(values) and values[-1] > values[0]


def test_logout_ends_the_session(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        c = Client(ctx, array)
        token = c.login()
        assert_error_shape(
            c.post("/api/types/loginSessionInfo/action/logout", {"localCleanupOnly": "true"}), 401
        )
        r = c.post("/api/types/loginSessionInfo/action/logout", {"localCleanupOnly": "true"}, token)
        assert r.status_code == 200 and r.json() == {"logoutOK": "true"}
        assert array.active_sessions() == 0
        c.s.auth = None
        assert_error_shape(c.get("/api/types/pool/instances"), 401)


def test_fault_token_expiry_401_then_works_after_a_new_login(tmp_path: Path) -> None:
    # sessions live 10 lab seconds (1 s of wall time at 10x)
    faults = "- {kind: storage_token_expiry, targets: [unity-01], after_s: 10}"
    with sim(tmp_path, faults=faults, time_scale=10) as (ctx, array):
        c = Client(ctx, array)
        old = c.login()
        assert c.get("/api/types/pool/instances?fields=name").status_code == 200
        time.sleep(ctx.clock.to_wall_s(12))
        expired = c.get("/api/types/pool/instances?fields=name")
        assert "expired" in assert_error_shape(expired, 401)
        assert "mod_sec_emc" not in c.s.cookies  # the array cleared it
        # a new login (basic auth, no cookie) works, with a new token; the old one is dead
        new = c.login()
        assert new != old
        body = {"paths": LUN_PATHS[:1], "interval": 5}
        assert_error_shape(c.post("/api/types/metricRealTimeQuery/instances", body, old), 401)
        assert c.post("/api/types/metricRealTimeQuery/instances", body, new).status_code == 201
        # and it expires again
        time.sleep(ctx.clock.to_wall_s(12))
        assert_error_shape(c.get("/api/types/lun/instances"), 401)
        assert c.get("/api/types/lun/instances").status_code == 200


def test_stop_frees_the_address(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, array):
        array.stop()
        with pytest.raises(requests.ConnectionError):
            Client(ctx, array).get("/api/types/basicSystemInfo/instances")
        array.start()
        assert Client(ctx, array).get("/api/types/basicSystemInfo/instances").status_code == 200
