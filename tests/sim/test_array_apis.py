"""The simulated PowerStore, SC Data Collector and EqualLogic agent on the wire, without labctl's
drivers (requests and pysnmp as any client), compared with shapes published clients capture
(tests/sim/data/<kind>/, see the READMEs there)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    bulk_walk_cmd,
)
from pysnmp.proto.rfc1902 import Counter64, OctetString

from tests.sim.arraylabs import SECRETS, ArrayLab, array_lab

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data"
TIMEOUT = 5


def captured(kind: str, name: str) -> Any:
    return json.loads((DATA / kind / name).read_text())


def session(al: ArrayLab, auth: tuple[str, str] | None = None, **headers: str) -> requests.Session:
    s = requests.Session()
    s.trust_env = False
    s.verify = str(al.ca_file)
    s.headers.update({"Accept": "application/json", "Content-Type": "application/json", **headers})
    if auth:
        s.auth = auth
    return s


def test_powerstore_login_token_and_metrics_generate_shapes(tmp_path: Path) -> None:
    fields = captured("powerstore", "volume_sample_fields.json")
    real = captured("powerstore", "generate_volume_gopowerstore.json")
    with array_lab(tmp_path, kinds=("powerstore",)) as al:
        base = al.servers["ps-01"].base_url + "/api/rest"
        s = session(al, ("admin", SECRETS["secret:sim.powerstore_password"]))
        login = s.get(base + "/login_session", timeout=TIMEOUT)
        assert login.status_code == 200 and isinstance(login.json(), list) and "auth_cookie" in s.cookies
        token = login.headers["DELL-EMC-TOKEN"]
        s.auth = None  # the cookie carries the session from here
        vols = s.get(base + "/volume", params={"select": "id,name"}, timeout=TIMEOUT).json()
        assert [v["name"] for v in vols] == ["vdi-ds-01"] and set(vols[0]) == {"id", "name"}
        assert s.get(base + "/volume", params={"name": "eq.nope"}, timeout=TIMEOUT).json() == []
        body = {
            "entity": "performance_metrics_by_volume",
            "entity_id": vols[0]["id"],
            "interval": "Twenty_Sec",
        }
        refused = s.post(base + "/metrics/generate", json=body, timeout=TIMEOUT)
        assert refused.status_code == 403  # no DELL-EMC-TOKEN
        assert set(refused.json()["messages"][0]) == {"code", "severity", "message_l10n", "arguments"}
        time.sleep(al.clock.to_wall_s(70))
        got = s.post(
            base + "/metrics/generate", json=body, headers={"DELL-EMC-TOKEN": token}, timeout=TIMEOUT
        )
        assert got.status_code == 200
        samples = got.json()
        assert isinstance(samples, list) and samples and set(real[0]) <= set(samples[0])
        assert set(samples[-1]) == set(fields)
        last = samples[-1]
        assert last["entity"] == "performance_metrics_by_volume" and last["volume_id"] == vols[0]["id"]
        assert last["timestamp"].endswith("Z") and int(last["timestamp"][17:19]) % 20 == 0
        # the placeholder twin: 100 reads/s, 60 writes/s, 8 KB, 1.5 ms, in PowerStore's units
        assert last["read_iops"] == pytest.approx(100, rel=0.02)
        assert last["avg_latency"] == pytest.approx(1500, rel=0.02)  # microseconds
        assert last["avg_io_size"] == pytest.approx(8192, rel=0.02)  # bytes
        assert last["read_bandwidth"] == pytest.approx(100 * 8192, rel=0.02)  # bytes/s
        body["interval"] = "Five_Mins"
        five = s.post(
            base + "/metrics/generate", json=body, headers={"DELL-EMC-TOKEN": token}, timeout=TIMEOUT
        )
        assert five.status_code == 200  # no five-minute period closed yet, or one with avg_* fields
        for sample in five.json():
            assert set(captured("powerstore", "five_mins_fields.json")) <= set(sample)
        body["interval"] = "Every_Second"
        bad = s.post(
            base + "/metrics/generate", json=body, headers={"DELL-EMC-TOKEN": token}, timeout=TIMEOUT
        )
        assert bad.status_code == 400


def test_sc_login_version_header_objects_and_io_usage(tmp_path: Path) -> None:
    real_sc, real_vol = captured("sc", "storage_center.json"), captured("sc", "volume.json")
    usage_fields = captured("sc", "volume_io_usage_fields.json")
    with array_lab(tmp_path, kinds=("sc",)) as al:
        base = al.servers["sc-01"].base_url + "/api/rest/"
        auth = ("Admin", SECRETS["secret:sim.sc_password"])
        no_version = session(al, auth).post(base + "ApiConnection/Login", json={}, timeout=TIMEOUT)
        assert no_version.status_code == 400
        assert no_version.json()["result"].startswith(
            "Invalid API version specified, the version must be in the range ["
        )
        s = session(al, auth, **{"x-dell-api-version": "2.0"})
        login = s.post(
            base + "ApiConnection/Login", json={"Application": "Cinder REST Driver"}, timeout=TIMEOUT
        )
        assert login.status_code == 200 and "JSESSIONID" in s.cookies
        conn = login.json()
        assert conn["objectType"] == "ApiConnection" and conn["apiVersion"] and conn["instanceId"] == "0"
        s.auth = None
        (sc,) = s.get(
            base + f"ApiConnection/ApiConnection/{conn['instanceId']}/StorageCenterList", timeout=TIMEOUT
        ).json()
        assert set(sc) <= set(real_sc) | {"modelSeries"} and sc["objectType"] == "StorageCenter"
        vols = s.get(
            base + f"StorageCenter/StorageCenter/{sc['instanceId']}/VolumeList", timeout=TIMEOUT
        ).json()
        assert [v["name"] for v in vols] == ["vdi-ds-01"]
        assert {k for k in real_vol if k in vols[0]} >= {
            "instanceId",
            "instanceName",
            "objectType",
            "status",
            "deviceId",
        }
        for k in set(vols[0]) & set(real_vol):
            assert type(vols[0][k]) is type(real_vol[k]), k
        flt = {
            "filter": {
                "filterType": "AND",
                "filters": [{"attributeName": "name", "attributeValue": "vdi-ds-01", "filterType": "Equals"}],
            }
        }
        assert [
            v["instanceId"]
            for v in s.post(base + "StorageCenter/ScVolume/GetList", json=flt, timeout=TIMEOUT).json()
        ] == [vols[0]["instanceId"]]
        time.sleep(al.clock.to_wall_s(130))
        usage = s.post(
            base + f"StorageCenter/ScVolume/{vols[0]['instanceId']}/GetHistoricalIoUsage",
            json={"HistoricalFilter": {"FilterTime": "Other", "UseCurrent": True}},
            timeout=TIMEOUT,
        ).json()
        assert usage and set(usage_fields) <= set(usage[-1]) and usage[-1]["objectType"] == "ScVolumeIoUsage"
        last = usage[-1]
        assert all(isinstance(last[k], int) for k in ("readIops", "readKbPerSecond", "readLatency"))
        assert last["readIops"] == 100 and last["writeIops"] == 60
        assert last["readLatency"] == 1500  # microseconds
        assert last["readKbPerSecond"] == 800  # KiB/s: 100 x 8 KiB
        assert s.post(base + "ApiConnection/Logout", json={}, timeout=TIMEOUT).status_code == 204
        assert s.get(base + "StorageCenter/StorageCenter", timeout=TIMEOUT).status_code == 401


def test_equallogic_agent_answers_the_volume_tables_a_poller_walks(tmp_path: Path) -> None:
    walk_lines = (DATA / "equallogic" / "volume_walk.txt").read_text().splitlines()
    columns = {tuple(int(x) for x in line.split()[0].strip(".").split(".")[:-2]) for line in walk_lines}
    with array_lab(tmp_path, kinds=("equallogic",)) as al:
        agent = al.servers["eql-01"]

        async def walk(base: str, community: str) -> dict[tuple[int, ...], Any]:
            eng = SnmpEngine()
            target = await UdpTransportTarget.create((agent.info.host, agent.info.port), timeout=1, retries=0)
            got: dict[tuple[int, ...], Any] = {}
            async for ei, es, _i, vbs in bulk_walk_cmd(
                eng, CommunityData(community, mpModel=1), target, ContextData(), 0, 25,
                ObjectType(ObjectIdentity(base)), lexicographicMode=False,
            ):  # fmt: skip
                if ei or es:
                    break
                got.update({tuple(vb[0].get_oid()): vb[1] for vb in vbs})
            eng.close_dispatcher()
            return got

        community = SECRETS["secret:sim.equallogic_community"]
        got = asyncio.run(walk("1.3.6.1.4.1.12740.5.1.7", community))
        assert columns <= {oid[:-2] for oid in got}  # every column the published poller walks, two-part index
        names = {
            oid[-2:]: str(v)
            for oid, v in got.items()
            if oid[:-2] == (1, 3, 6, 1, 4, 1, 12740, 5, 1, 7, 1, 1, 4)
        }
        assert list(names.values()) == ["vdi-ds-01"]
        (idx,) = names
        stats = (1, 3, 6, 1, 4, 1, 12740, 5, 1, 7, 34, 1)
        assert all(isinstance(got[(*stats, c, *idx)], Counter64) for c in (3, 4, 6, 7, 8, 9))
        assert isinstance(got[(1, 3, 6, 1, 4, 1, 12740, 5, 1, 7, 1, 1, 4, *idx)], OctetString)
        assert asyncio.run(walk("1.3.6.1.4.1.12740.5.1.7", "public")) == {}  # a wrong community: no answer
