"""PowerStore collections as the published clients page them: the driver against a replay server that
answers as the clients expect (``limit``/``offset``, gopowerstore ``api/api_query_params.go``; a
``Range`` header and 206 + ``Content-Range: first-last/total``, PyPowerStore ``client.py``, 100
objects without a limit, at most 2,000), and the simulated appliance against the same rules.

The 250 volumes are made for the test (no public recording of a PowerStore volume collection longer
than a page was found); the paging rules are the clients', not ours."""

from __future__ import annotations

import json
import re

import pytest

from labctl.drivers.storage.powerstore import TOKEN_HEADER, PowerStoreDriver
from labctl.inventory.model import StorageArray
from labctl.sim.powerstore import array as sim
from tests.conformance.storage.replay import Answer, Call, Replay

VOLUMES = [
    {"id": f"{k:08x}-0000-4000-8000-000000000000", "name": f"vdi-{k:03d}", "type": "Primary"}
    for k in range(250)
]
SNAPSHOT = {"id": "ffffffff-0000-4000-8000-000000000000", "name": "vdi-000.snap", "type": "Snapshot"}
DEFAULT_LIMIT, MAX_LIMIT = 100, 2000  # PyPowerStore utils/constants.py: the first answer is 0-99; MAX_LIMIT


def client_page(objects: list[dict[str, str]], c: Call) -> Answer:
    """A collection page as PyPowerStore and gopowerstore expect the appliance to cut it."""
    offset, limit = int(c.query.get("offset", 0)), int(c.query.get("limit", DEFAULT_LIMIT))
    rng = c.headers.get("range")
    if rng and re.fullmatch(r"\d+-\d+", rng):
        first, last = map(int, rng.split("-"))
        offset, limit = first, last - first + 1
    if limit > MAX_LIMIT:
        return Answer(400, {"messages": [{"code": "0xE04040020009", "message_l10n": "limit too large"}]})
    fields = c.query.get("select", "id").split(",")
    part = [{f: o[f] for f in fields if f in o} for o in objects[offset : offset + limit]]
    if offset == 0 and len(part) == len(objects):
        return Answer(200, part)
    return Answer(206, part, {"Content-Range": f"{offset}-{offset + len(part) - 1}/{len(objects)}"})


def route(c: Call) -> Answer:
    if c.path == "/api/rest/login_session":
        return Answer(200, [{"id": "s1", "user": "admin"}], {TOKEN_HEADER: "tok"})
    assert c.headers.get(TOKEN_HEADER.lower()) == "tok", f"{c.method} {c.path} without {TOKEN_HEADER}"
    if c.path == "/api/rest/volume":
        return client_page([*VOLUMES, SNAPSHOT], c)
    if c.path == "/api/rest/logout":
        return Answer(204)
    return Answer(404, {"messages": [{"code": "0xE04040010001", "message_l10n": f"not replayed: {c.path}"}]})


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCTL_TEST_PS_PW", "replayed")


def test_the_driver_lists_a_collection_longer_than_one_page() -> None:
    """The paging defect: the first answer is 206 with 100 of 251; the driver took 206 for an error."""
    with Replay(route) as server:
        arr = StorageArray.model_validate(
            {
                "name": "ps",
                "kind": "powerstore",
                "url": server.url,
                "user": "admin",
                "password": "env:LABCTL_TEST_PS_PW",
            }
        )
        with PowerStoreDriver(arr, timeout_s=5) as drv:
            names = drv.volume_names()
        asked = [
            (c.query.get("offset"), c.query.get("limit"))
            for c in server.calls
            if c.path == "/api/rest/volume"
        ]
    assert len(names) == 250 and names[VOLUMES[249]["id"]] == "vdi-249"
    assert SNAPSHOT["id"] not in names
    assert all(int(limit or DEFAULT_LIMIT) <= MAX_LIMIT for _, limit in asked)


def test_the_replay_cuts_pages_as_the_clients_expect() -> None:
    """The rules the replay (and the simulator) follow, as PyPowerStore reads them: 0-99 first."""
    first = client_page(VOLUMES, Call("GET", "/api/rest/volume", {}, None, {}))
    assert first.status == 206 and first.headers["Content-Range"] == "0-99/250" and len(first.body) == 100
    rest = client_page(VOLUMES, Call("GET", "/api/rest/volume", {}, None, {"range": "100-2100"}))
    assert rest.status == 400  # 2,001 objects: over MAX_LIMIT (PyPowerStore asks i..i+MAX_LIMIT)


@pytest.mark.parametrize(
    ("query", "range_header", "status", "content_range", "count"),
    [
        ({}, None, 206, "0-99/250", 100),
        ({"limit": "2000"}, None, 200, None, 250),
        ({"limit": "2000", "offset": "200"}, None, 206, "200-249/250", 50),
        ({}, "100-199", 206, "100-199/250", 100),
    ],
)
def test_the_simulated_appliance_pages_as_the_clients_expect(
    query: dict[str, str], range_header: str | None, status: int, content_range: str | None, count: int
) -> None:
    """The simulator answered every object with 200 (the driver's assumption, hidden from its tests)."""
    resp = sim.page(list(VOLUMES), query, range_header)
    assert resp.status == status
    assert dict(resp.headers).get("Content-Range") == content_range
    assert len(json.loads(resp.body)) == count
