"""One simulated Dell PowerStore: the management REST API (``/api/rest``) of one appliance, over HTTPS.

The wire protocol follows the real array as gopowerstore (``api/api.go``) and PyPowerStore speak it:
- ``GET /api/rest/login_session`` with basic auth logs in: the answer is ``[{"id", "user", ...}]``,
  sets the ``auth_cookie`` session cookie and carries the CSRF token in ``DELL-EMC-TOKEN``, which
  every POST, PATCH and DELETE must send back (gopowerstore sends it on every request);
- a session that ended (idle an hour, or the fault ``storage_token_expiry``) answers 403, the
  status gopowerstore answers with a fresh login; bad credentials answer 401;
- collections (``appliance``, ``cluster``, ``node``, ``hardware``, ``volume``,
  ``software_installed``) answer a JSON array of objects; ``select=a,b`` picks attributes (only
  ``id`` without it) and ``attr=eq.value`` / ``neq.`` / ``in.(a,b)`` filter, PostgREST style;
  at most ``limit`` objects from ``offset`` (100 without a limit, at most 2,000): a partial answer is
  ``206 Partial Content`` with ``Content-Range: first-last/total`` (what PyPowerStore's client
  pages on; the simulator answered every object with 200 before, hiding a driver that read one page);
- errors answer ``{"messages": [{"code", "severity", "message_l10n", "arguments"}]}``;
- ``POST /api/rest/metrics/generate`` answers samples of the twin's counters
  (:mod:`labctl.sim.powerstore.metrics`).

A controller failover (the twin's ``array_controller_failover``) shows as the failed node's
``hardware`` entry with ``lifecycle_state: Failed``; its volumes' I/O moves to the peer node.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from labctl.inventory.model import StorageArray
from labctl.sim.arrays.feed import ArrayFeed
from labctl.sim.arrays.history import CounterHistory, Snapshot
from labctl.sim.arrays.sessions import Session, SessionBook, SessionState
from labctl.sim.endpoint import SimContext
from labctl.sim.http import Request, Response, SimHttpsServer, json_response, parse_host_port
from labctl.sim.powerstore import metrics as m

log = logging.getLogger(__name__)

PREFIX = "/api/rest"
COOKIE = "auth_cookie"
TOKEN_HEADER = "DELL-EMC-TOKEN"
IDLE_TIMEOUT_S = 3600.0
DEFAULT_TOKEN_LIFETIME_S = 60.0  # storage_token_expiry with after_s 0
DEFAULT_LIMIT = 100  # objects in a collection answer without limit=
MAX_LIMIT = 2000  # the largest limit= the API accepts
MODEL = "PowerStore 1000T"
RELEASE = "3.6.0.0"
APPLIANCE_ID = "A1"
VOLUME_SIZE_B = 2 * 2**40

# PowerStore error codes as the API answers them (the code is an opaque hex string).
E_UNAUTHORIZED = ("0xE09010010001", "Authentication failed: the user name or password is incorrect.")
E_EXPIRED = ("0xE09010010012", "The login session has expired or is invalid. Log in again.")
E_TOKEN = ("0xE09010010013", "The DELL-EMC-TOKEN header is missing or invalid for this session.")
E_NOT_FOUND = ("0xE04040010005", "The requested resource {0} was not found.")
E_BAD_REQUEST = ("0xE04040020009", "Invalid request: {0}")
E_METHOD = ("0xE04040010006", "The method {0} is not allowed on {1}.")

_FILTER = re.compile(r"^(eq|neq|in)\.(.*)$")


def error(
    status: int, code: tuple[str, str], *args: object, headers: list[tuple[str, str]] | None = None
) -> Response:
    body = {
        "messages": [
            {
                "code": code[0],
                "severity": "Error",
                "message_l10n": code[1].format(*args),
                "arguments": [str(a) for a in args],
            }
        ]
    }
    return json_response(status, body, headers or [])


def _stable_uuid(*parts: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256("/".join(parts).encode()).digest()[:16], version=4))


def select(objects: list[dict[str, Any]], query: dict[str, str]) -> list[dict[str, Any]] | Response:
    """PostgREST-style ``select`` and ``attr=op.value`` filters, as the array applies them."""
    picked = objects
    for key, raw in query.items():
        if key in ("select", "limit", "offset", "order"):
            continue
        f = _FILTER.match(raw)
        if f is None:
            return error(400, E_BAD_REQUEST, f"filter {key}={raw} (write {key}=eq.value)")
        op, want = f.groups()
        wanted = [w.strip() for w in want.strip("()").split(",")] if op == "in" else [want]

        def keep(o: dict[str, Any], key: str = key, op: str = op, wanted: list[str] = wanted) -> bool:
            have = str(o.get(key))
            return (have in wanted) if op in ("eq", "in") else (have not in wanted)

        picked = [o for o in picked if keep(o)]
    fields = [f.strip() for f in query.get("select", "id").split(",") if f.strip()]
    return [{f: o[f] for f in fields if f in o} for o in picked]


def page(objects: list[dict[str, Any]], query: dict[str, str], range_header: str | None = None) -> Response:
    """One page of a collection: ``offset``/``limit`` (gopowerstore) or a ``Range: first-last`` header
    (PyPowerStore); 206 with a Content-Range when others remain."""
    try:
        limit = int(query.get("limit", DEFAULT_LIMIT))
        offset = int(query.get("offset", 0))
        if range_header and re.fullmatch(r"\s*\d+-\d+\s*", range_header):
            first, last = (int(x) for x in range_header.split("-"))
            offset, limit = first, min(MAX_LIMIT, max(1, last - first + 1))
    except ValueError:
        return error(400, E_BAD_REQUEST, f"limit={query.get('limit')} offset={query.get('offset')}")
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        return error(400, E_BAD_REQUEST, f"limit must be 1..{MAX_LIMIT} and offset at least 0")
    total = len(objects)
    part = objects[offset : offset + limit]
    if offset == 0 and len(part) == total:
        return json_response(200, part)
    last = offset + len(part) - 1
    return json_response(206, part, [("Content-Range", f"{offset}-{max(last, offset)}/{total}")])


def _only(volume: str) -> Callable[[Snapshot], list[str]]:
    return lambda snap: [volume]


def _owned_by(controller: str) -> Callable[[Snapshot], list[str]]:
    """The volumes a node served at the end of a period (a failover moves them to its peer)."""
    return lambda snap: [v for v, c in snap.volumes.items() if c.controller == controller]


class PowerStoreArray(SimHttpsServer):
    """The management REST API of one simulated PowerStore appliance."""

    server_header = "Apache"

    def __init__(self, ctx: SimContext, array: StorageArray, twin_array: str | None = None):
        host, port = parse_host_port(array.url)
        super().__init__(ctx, kind="powerstore", name=array.name, host=host, port=port)
        self.array = array
        self.feed = ArrayFeed(ctx, array, twin_array)
        self.sessions = SessionBook(
            ctx, array, COOKIE, idle_timeout_s=IDLE_TIMEOUT_S, default_lifetime_s=DEFAULT_TOKEN_LIFETIME_S
        )
        self.history = CounterHistory(self.feed, m.STEP_S, max(m.RETENTION_S.values()))
        hw = self.feed.hardware
        self.model = hw.model if hw is not None and hw.model.startswith("PowerStore") else MODEL
        self.volume_ids = {v: _stable_uuid(array.name, v) for v in array.luns}
        # node id -> the twin's controller name (node_a, node_b)
        self.nodes = {f"N{k + 1}": c for k, c in enumerate(self.feed.controller_names)}

    # --- lifecycle -------------------------------------------------------------------------------
    def on_start(self) -> None:
        self.history.start(self.array.name)

    def on_stop(self) -> None:
        self.history.stop()

    def active_sessions(self) -> int:
        return self.sessions.count()

    # --- dispatch --------------------------------------------------------------------------------
    def internal_error(self, req: Request) -> Response:
        return error(500, E_BAD_REQUEST, "internal error in the simulated array")

    def handle(self, req: Request) -> Response:
        path = req.path.rstrip("/")
        if not path.startswith(PREFIX + "/"):
            return error(404, E_NOT_FOUND, req.path)
        resource = path[len(PREFIX) + 1 :]
        s, outcome = self.sessions.resolve(req)
        if outcome is SessionState.EXPIRED:
            return error(403, E_EXPIRED, headers=[self.sessions.clear_cookie()])
        if s is None:
            return error(401, E_UNAUTHORIZED, headers=[("WWW-Authenticate", 'Basic realm="PowerStore"')])
        headers: list[tuple[str, str]] = [(TOKEN_HEADER, s.csrf)]
        if outcome is SessionState.NEW:
            headers.append(self.sessions.set_cookie(s))
        if req.method in ("POST", "PATCH", "DELETE", "PUT") and outcome is not SessionState.NEW:
            sent = req.header(TOKEN_HEADER) or ""
            if not hmac.compare_digest(sent.encode(), s.csrf.encode()):
                return error(403, E_TOKEN)
        resp = self._route(req, resource, s)
        resp.headers.extend(headers)
        return resp

    def _route(self, req: Request, resource: str, s: Session) -> Response:
        if resource == "metrics/generate":
            if req.method != "POST":
                return error(405, E_METHOD, req.method, resource)
            return self._generate(req)
        if resource == "logout":
            if req.method != "POST":
                return error(405, E_METHOD, req.method, resource)
            self.sessions.end(s)
            return Response(204, b"", [self.sessions.clear_cookie()])
        getters: dict[str, Callable[[], list[dict[str, Any]]]] = {
            "login_session": lambda: [self._login_session(s)],
            "cluster": self._clusters,
            "appliance": self._appliances,
            "software_installed": self._software,
            "node": self._nodes,
            "hardware": self._hardware,
            "volume": self._volumes,
        }
        name, _, ident = resource.partition("/")
        getter = getters.get(name)
        if getter is None:
            return error(404, E_NOT_FOUND, resource)
        if req.method not in ("GET", "HEAD"):
            return error(405, E_METHOD, req.method, resource)
        objects = getter()
        if ident:
            hit = [o for o in objects if str(o.get("id")) == ident]
            if not hit:
                return error(404, E_NOT_FOUND, resource)
            query = dict(req.query)
            query.setdefault("select", ",".join(hit[0]))
            picked = select(hit, query)
            return picked if isinstance(picked, Response) else json_response(200, picked[0])
        picked = select(objects, req.query)
        return picked if isinstance(picked, Response) else page(picked, req.query, req.header("Range"))

    # --- objects ---------------------------------------------------------------------------------
    def _login_session(self, s: Session) -> dict[str, Any]:
        return {
            "id": _stable_uuid(s.cookie),
            "user": s.user,
            "role_ids": ["1"],
            "idle_timeout": int(IDLE_TIMEOUT_S),
            "is_password_change_required": False,
            "is_built_in_user": True,
        }

    def _clusters(self) -> list[dict[str, Any]]:
        return [
            {
                "id": "0",
                "name": self.array.name,
                "global_id": "PS" + hashlib.sha256(self.array.name.encode()).hexdigest()[:10],
                "state": "Configured",
                "physical_mtu": 1500,
                "master_appliance_id": APPLIANCE_ID,
            }
        ]

    def _appliances(self) -> list[dict[str, Any]]:
        return [
            {
                "id": APPLIANCE_ID,
                "name": f"{self.array.name}-appliance-1",
                "model": self.model,
                "service_tag": hashlib.sha256(self.array.name.encode()).hexdigest()[:7].upper(),
                "drive_failure_tolerance_level": "Single",
            }
        ]

    def _software(self) -> list[dict[str, Any]]:
        return [{"id": "0", "release_version": RELEASE, "build_version": f"{RELEASE}.1", "is_cluster": True}]

    def _nodes(self) -> list[dict[str, Any]]:
        return [
            {
                "id": nid,
                "name": f"{self.array.name}-appliance-1-node-{'AB'[k % 2]}",
                "slot": k,
                "appliance_id": APPLIANCE_ID,
            }
            for k, nid in enumerate(self.nodes)
        ]

    def _hardware(self) -> list[dict[str, Any]]:
        states = {c.controller: c.state for c in self.feed.controllers()}
        return [
            {
                "id": _stable_uuid(self.array.name, "hw", nid),
                "name": f"BaseEnclosure-Node{'AB'[k % 2]}",
                "type": "Node",
                "lifecycle_state": "Failed" if states.get(ctrl) == "failed" else "Healthy",
                "appliance_id": APPLIANCE_ID,
                "slot": k,
            }
            for k, (nid, ctrl) in enumerate(self.nodes.items())
        ]

    def _volumes(self) -> list[dict[str, Any]]:
        return [
            {
                "id": vid,
                "name": name,
                "type": "Primary",
                "state": "Ready",
                "size": VOLUME_SIZE_B,
                "appliance_id": APPLIANCE_ID,
                "wwn": "naa.68ccf098" + hashlib.sha256(vid.encode()).hexdigest()[:24],
            }
            for name, vid in self.volume_ids.items()
        ]

    # --- metrics ---------------------------------------------------------------------------------
    def _generate(self, req: Request) -> Response:
        try:
            body = req.json()
        except ValueError:
            return error(400, E_BAD_REQUEST, "the body is not JSON")
        if not isinstance(body, dict):
            return error(400, E_BAD_REQUEST, "the body must be an object")
        entity, ident, interval = body.get("entity"), str(body.get("entity_id", "")), body.get("interval")
        if interval not in m.INTERVALS_S:
            return error(400, E_BAD_REQUEST, f"interval {interval!r} (one of {', '.join(m.INTERVALS_S)})")
        covers: Callable[[Snapshot], list[str]]
        if entity == m.VOLUME:
            name = next((n for n, vid in self.volume_ids.items() if vid == ident), None)
            if name is None:
                return error(404, E_NOT_FOUND, f"volume {ident}")
            fields = {"volume_id": ident, "appliance_id": APPLIANCE_ID}
            covers = _only(name)
        elif entity == m.APPLIANCE:
            if ident != APPLIANCE_ID:
                return error(404, E_NOT_FOUND, f"appliance {ident}")
            fields = {"appliance_id": APPLIANCE_ID}
            covers = lambda snap: list(snap.volumes)  # noqa: E731
        elif entity == m.NODE:
            ctrl = self.nodes.get(ident)
            if ctrl is None:
                return error(404, E_NOT_FOUND, f"node {ident}")
            fields = {"node_id": ident, "appliance_id": APPLIANCE_ID}
            covers = _owned_by(ctrl)
        else:
            return error(400, E_BAD_REQUEST, f"entity {entity!r} is not supported by this array")
        return json_response(200, m.generate(self.history, str(entity), fields, covers, str(interval)))
