"""One simulated Dell EMC Unity: the management REST API of one storage array, over HTTPS.

The wire protocol follows the real array:
- every request carries ``X-EMC-REST-CLIENT: true``;
- the first request logs in with basic auth; the answer sets the session cookie ``mod_sec_emc``
  and every GET answers with the session's ``EMC-CSRF-TOKEN`` header, which POST and DELETE must
  send back;
- collections answer ``{"@base", "updated", "links", "entries": [{"content": {...}}]}`` with only
  ``id`` and the attributes named in ``fields=``; ``compact=true`` leaves out the per-entry links;
  they come in pages of ``per_page`` (at most and by default 2,000) with ``links`` ``self`` and,
  while more follow, ``next`` (``&page=N``), as a real array's two-page metric catalogue shows
  (storops' recording; the simulator answered everything as page 1 before);
- a real-time metric query (``POST /api/types/metricRealTimeQuery/instances``) samples the lab
  twin's cumulative volume counters (:class:`~labctl.sim.arrays.feed.ArrayFeed`) when it is created
  and then on every interval boundary (lab time a multiple of ``interval``, so timestamps are round
  as on the array); ``metricQueryResult`` answers the samples of the last ``RESULT_RETENTION_S``
  lab seconds, values per SP, keyed by LUN id, as strings. A sampler that was starved still has a
  sample at every boundary it missed, from the counters interpolated between the twin readings
  around it (:mod:`labctl.sim.catchup`), and a result request first catches up on any boundary
  due. Each SP counts the I/O it served: what a LUN did between two readings is added
  to the SP that owns it then (after a failover its peer's counters grow). ``totalIoTime`` is the
  LUN's outstanding-I/O integral in microseconds, which by Little's law is its summed response
  time: a client's latency is delta(totalIoTime) / delta(reads + writes);
- ``storageProcessor`` instances answer each SP's health: OK (5) while it serves, major (20) after
  the twin failed it (fault ``array_controller_failover``).

Fault ``storage_token_expiry``: a session lives ``after_s`` lab seconds (``DEFAULT_TOKEN_LIFETIME_S``
when 0); the first request after that answers 401 and clears the cookie; a new login works.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import math
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from labctl.inventory.model import StorageArray
from labctl.sim.arrays.feed import ArrayFeed
from labctl.sim.arrays.sessions import Session, SessionBook, SessionState
from labctl.sim.catchup import boundaries, fraction, interpolate
from labctl.sim.endpoint import SimContext
from labctl.sim.http import (
    Request,
    Response,
    SimHttpsServer,
    empty_response,
    json_response,
    parse_host_port,
)
from labctl.sim.twin.interface import LunCounters
from labctl.sim.unity import catalog as cat
from labctl.sim.unity.catalog import error_body, unity_time

log = logging.getLogger(__name__)

COOKIE = "mod_sec_emc"
CSRF_HEADER = "EMC-CSRF-TOKEN"
IDLE_TIMEOUT_S = 3600.0  # lab seconds without a request before a session ends
QUERY_EXPIRATION_S = 3600.0  # a real-time query not read for this long is deleted
MAX_PER_PAGE = 2000  # a collection's page: per_page is at most (and by default) this
# how long a sample stays in metricQueryResult, lab seconds: long enough for a reader that was
# held up (a simulator starved through a whole boot storm: up to ~10 lab minutes seen on a loaded
# 2-core machine) to still find every sample; readers keep the newest timestamp they saw
RESULT_RETENTION_S = 600.0
DEFAULT_TOKEN_LIFETIME_S = 60.0  # storage_token_expiry with after_s 0
MODEL = "Unity 400"
SOFTWARE_VERSION = "4.5.1"
API_VERSION = "10.0"
POOL_SIZE_B = 10 * 2**40
LUN_SIZE_B = 2 * 2**40
SPS = ("spa", "spb")
BLOCK_BYTES = 512.0
HEALTH_OK, HEALTH_MAJOR = 5, 20  # Unity HealthEnum values

_FILTER_TERM = re.compile(
    r'^\s*([A-Za-z_][\w.]*)\s+(eq|ne|lt|le|gt|ge|lk)\s+("(?:[^"\\]|\\.)*"|\S+)\s*$', re.I
)


class _BadRequest(Exception):
    pass


Sampled = dict[str, dict[str, dict[str, str]]]  # path -> sp -> lun id -> value


@dataclass
class _Query:
    id: int
    paths: list[str]
    interval: int
    t0: float
    expires_lab_s: float
    samples: deque[tuple[float, Sampled]] = field(default_factory=deque)  # (lab time, values), oldest first
    reading: tuple[float, tuple[LunCounters, ...]] = (0.0, ())  # the twin's latest counters, and when

    @property
    def sample_time(self) -> float:
        return self.samples[-1][0] if self.samples else 0.0

    def next_due(self) -> float:
        """The next interval boundary (multiples of the interval in lab time, as the array
        stamps its samples on round times)."""
        return (math.floor(self.sample_time / self.interval) + 1) * self.interval


def _serial(name: str) -> str:
    n = int.from_bytes(hashlib.sha256(name.encode()).digest()[:6], "big")
    return f"FNM00{n % 10**9:09d}"


def _select(obj: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """``id`` plus the named attributes; ``pool.name`` picks from a reference."""
    if fields is None:
        return {k: v for k, v in obj.items() if v is not None}
    out: dict[str, Any] = {"id": obj["id"]} if "id" in obj else {}
    for f in fields:
        head, _, rest = f.partition(".")
        if obj.get(head) is None:
            continue  # unset attributes are left out, as the array does
        value = obj[head]
        if isinstance(value, dict) and "id" in value and set(value) != {"id"} and not rest:
            out[head] = {"id": value["id"]}  # a reference answers with its id unless asked for more
        elif rest and isinstance(value, dict):
            sub = out.setdefault(head, {"id": value.get("id")} if "id" in value else {})
            if rest in value:
                sub[rest] = value[rest]
        else:
            out[head] = value
    return out


def _fields(req: Request, all_fields: bool) -> list[str] | None:
    """The attributes named in ``fields=``; without it only ``id`` ([]), or every one (None)
    for the types the array answers in full."""
    if "fields" in req.query:
        return [f.strip() for f in req.query["fields"].split(",") if f.strip()]
    return None if all_fields else []


def _parse_filter(text: str) -> list[tuple[str, str, Any]]:
    terms = []
    for part in re.split(r"\s+and\s+", text.strip(), flags=re.I):
        m = _FILTER_TERM.match(part)
        if not m:
            raise _BadRequest(f"Invalid filter: {text}")
        attr, op, raw = m.group(1), m.group(2).lower(), m.group(3)
        value: Any
        if raw.startswith('"'):
            value = raw[1:-1].replace('\\"', '"')
        elif raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            try:
                value = int(raw)
            except ValueError:
                try:
                    value = float(raw)
                except ValueError:
                    raise _BadRequest(f"Invalid filter value {raw} in: {text}") from None
        terms.append((attr, op, value))
    return terms


def _lookup(obj: dict[str, Any], attr: str) -> Any:
    value: Any = obj
    for part in attr.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _matches(obj: dict[str, Any], terms: list[tuple[str, str, Any]]) -> bool:
    for attr, op, want in terms:
        have = _lookup(obj, attr)
        if op == "lk":
            pattern = "^" + ".*".join(re.escape(p) for p in str(want).split("%")) + "$"
            if have is None or not re.match(pattern, str(have)):
                return False
            continue
        if have is None:
            if op != "ne":
                return False
            continue
        try:
            ok = {
                "eq": have == want,
                "ne": have != want,
                "lt": have < want,
                "le": have <= want,
                "gt": have > want,
                "ge": have >= want,
            }[op]
        except TypeError:
            ok = False
        if not ok:
            return False
    return True


class UnityArray(SimHttpsServer):
    """The management REST API of one simulated Unity array."""

    server_header = "Apache"

    def __init__(self, ctx: SimContext, array: StorageArray, twin_array: str | None = None):
        host, port = parse_host_port(array.url)
        super().__init__(ctx, kind="unity", name=array.name, host=host, port=port)
        self.array = array
        self.feed = ArrayFeed(ctx, array, twin_array)
        hw = self.feed.hardware
        self.model = hw.model if hw is not None and hw.model.startswith("Unity") else MODEL
        # per LUN: the last volume reading and what each SP has counted (reads, writes, blocks, io time)
        self._seen: dict[str, tuple[float, ...]] = {}
        self._per_sp: dict[str, dict[str, list[float]]] = {}
        self._user = array.user
        self.sessions = SessionBook(
            ctx, array, COOKIE, idle_timeout_s=IDLE_TIMEOUT_S, default_lifetime_s=DEFAULT_TOKEN_LIFETIME_S
        )
        self._lock = threading.RLock()
        self._queries: dict[int, _Query] = {}
        self._query_ids = itertools.count(1)
        self._wake = threading.Event()
        self._sampler: threading.Thread | None = None
        self.serial = _serial(array.name)
        self.pool_ids = {p: f"pool_{i + 1}" for i, p in enumerate(array.pools)}
        self.lun_ids = {lun: f"sv_{i + 1}" for i, lun in enumerate(array.luns)}
        self._t_created = ctx.clock.now()

    # --- lifecycle -------------------------------------------------------------------------------
    def on_start(self) -> None:
        self._sampler = threading.Thread(
            target=self._sample_loop, name=f"sim-unity-rtq-{self.array.name}", daemon=True
        )
        self._sampler.start()

    def on_stop(self) -> None:
        self._wake.set()
        if self._sampler is not None:
            self._sampler.join(timeout=2)
            self._sampler = None

    # --- real-time query sampling ----------------------------------------------------------------
    def _read_counters(self) -> tuple[LunCounters, ...]:
        """Each SP's cumulative counters: every LUN's new I/O goes to the SP that owns it now."""
        vols = self.feed.volumes()
        sps = dict(zip(self.feed.controller_names, SPS, strict=False))
        out = []
        with self._lock:
            for v in vols:
                cur = (
                    v.reads,
                    v.writes,
                    v.bytes_read / BLOCK_BYTES,
                    v.bytes_written / BLOCK_BYTES,
                    v.queue_integral * 1e6,
                )
                prev = self._seen.get(v.volume, (0.0,) * len(cur))
                self._seen[v.volume] = cur
                acc = self._per_sp.setdefault(v.volume, {sp: [0.0] * len(cur) for sp in SPS})
                owner = acc.setdefault(sps.get(v.controller, v.controller), [0.0] * len(cur))
                for k, (a, b) in enumerate(zip(prev, cur, strict=True)):
                    owner[k] += max(0.0, b - a)
                for sp, c in acc.items():
                    out.append(LunCounters(v.volume, sp, *c))
        return tuple(out)

    def _read_counters_or_none(self) -> tuple[LunCounters, ...] | None:
        try:
            return self._read_counters()
        except Exception:
            log.exception("unity %s: reading the twin's LUN counters failed", self.array.name)
            return None

    def _fill(self, q: _Query, counters: tuple[LunCounters, ...], at: float) -> None:
        sample: Sampled = {}
        for path in q.paths:
            per_sp: dict[str, dict[str, str]] = {sp: {} for sp in SPS}
            for c in counters:
                lun_id = self.lun_ids.get(c.lun, c.lun)
                per_sp.setdefault(c.sp, {})[lun_id] = cat.counter_value(c, path)
            sample[path] = per_sp
        q.samples.append((at, sample))
        while q.samples and q.samples[0][0] < at - RESULT_RETENTION_S:
            q.samples.popleft()

    def _catch_up(self, q: _Query, counters: tuple[LunCounters, ...], read_at: float) -> None:
        """A sample at every boundary up to ``read_at`` that ``q`` does not have yet, each from the
        counters at its own time (interpolated between the previous twin reading and this one)."""
        t_prev, c_prev = q.reading
        for t in boundaries(0.0, q.interval, q.sample_time, read_at):
            self._fill(q, interpolate(c_prev, counters, fraction(t_prev, read_at, t)), t)
        q.reading = (read_at, counters)

    def _sample_loop(self) -> None:
        clock = self.ctx.clock
        while not self.stopping:
            with self._lock:
                now = clock.now()
                for qid in [q.id for q in self._queries.values() if q.expires_lab_s < now]:
                    del self._queries[qid]
                due = [q for q in self._queries.values() if q.next_due() <= now]
                nxt = min((q.next_due() for q in self._queries.values()), default=None)
            if due:
                counters = self._read_counters_or_none()
                read_at = clock.now()
                with self._lock:
                    for q in due:  # no reading: the samples hold the last one's values
                        self._catch_up(q, counters if counters is not None else q.reading[1], read_at)
                continue
            wait = 1.0 if nxt is None else min(1.0, max(0.005, clock.to_wall_s(nxt - now)))
            self._wake.wait(wait)
            self._wake.clear()

    # --- plumbing --------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.ctx.clock.now()

    def _error(
        self, status: int, code: tuple[int, str], *args: object, headers: list[tuple[str, str]] | None = None
    ) -> Response:
        return json_response(status, error_body(status, code, self._now(), *args), headers or [])

    def internal_error(self, req: Request) -> Response:
        return self._error(500, cat.E_BAD_REQUEST, "Internal error in the simulated array")

    def _base_url(self, req: Request, path: str, query: str = "") -> str:
        return f"https://{self.info.host}:{self.info.port}{path}" + (f"?{query}" if query else "")

    def _collection(
        self, req: Request, objects: list[dict[str, Any]], *, all_fields: bool = False
    ) -> dict[str, Any]:
        fields = _fields(req, all_fields)
        if "filter" in req.query:
            terms = _parse_filter(req.query["filter"])
            objects = [o for o in objects if _matches(o, terms)]
        compact = req.query.get("compact", "").lower() == "true"
        now = unity_time(self._now())
        # pages as the array cuts them: per_page (at most 2,000, the default), page from 1
        try:
            per_page = min(MAX_PER_PAGE, max(1, int(req.query.get("per_page", MAX_PER_PAGE))))
            page = max(1, int(req.query.get("page", 1)))
        except ValueError:
            per_page, page = MAX_PER_PAGE, 1
        pages = max(1, -(-len(objects) // per_page))
        objects = objects[(page - 1) * per_page : page * per_page]
        query = unquote(req.raw_query)
        kept = [
            p for p in query.split("&") if p and not p.lower().startswith(("compact=", "per_page=", "page="))
        ]
        base_query = "&".join([*kept, f"per_page={per_page}", *(["compact=true"] if compact else [])])
        type_path = req.path.rstrip("/")
        instance_base = self._base_url(
            req, type_path.replace("/api/types/", "/api/instances/").rsplit("/", 1)[0]
        )
        entries: list[dict[str, Any]] = []
        for o in objects:
            content = _select(o, fields)
            if compact:
                entries.append({"content": content})
            else:
                entries.append(
                    {
                        "@base": instance_base,
                        "updated": now,
                        "links": [{"rel": "self", "href": f"/{o.get('id', '')}"}],
                        "content": content,
                    }
                )
        out: dict[str, Any] = {
            "@base": self._base_url(req, type_path, base_query),
            "updated": now,
            "links": [
                {"rel": "self", "href": f"&page={page}"},
                *(
                    [{"rel": "first", "href": "&page=1"}, {"rel": "prev", "href": f"&page={page - 1}"}]
                    if page > 1
                    else []
                ),
                *([{"rel": "next", "href": f"&page={page + 1}"}] if page < pages else []),
            ],
        }
        if not compact:
            out["entryCount"] = len(entries)
        out["entries"] = entries
        return out

    def _instance(
        self, req: Request, type_name: str, obj: dict[str, Any], *, all_fields: bool = False
    ) -> dict[str, Any]:
        fields = _fields(req, all_fields)
        content = _select(obj, fields)
        if req.query.get("compact", "").lower() == "true":
            return {"content": content}
        return {
            "@base": self._base_url(req, f"/api/instances/{type_name}"),
            "updated": unity_time(self._now()),
            "links": [{"rel": "self", "href": f"/{obj.get('id', '')}"}],
            "content": content,
        }

    # --- sessions --------------------------------------------------------------------------------
    def _session_for(self, req: Request) -> tuple[Session | None, Response | None, bool]:
        """(session, error response, new login)."""
        s, outcome = self.sessions.resolve(req)
        if outcome is SessionState.EXPIRED:
            return (
                None,
                self._error(401, cat.E_SESSION_EXPIRED, headers=[self.sessions.clear_cookie()]),
                False,
            )
        if s is None:
            return (
                None,
                self._error(
                    401, cat.E_UNAUTHORIZED, headers=[("WWW-Authenticate", 'Basic realm="Unisphere"')]
                ),
                False,
            )
        return s, None, outcome is SessionState.NEW

    def active_sessions(self) -> int:
        return self.sessions.count()

    def active_queries(self) -> int:
        with self._lock:
            return len(self._queries)

    # --- dispatch --------------------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        if (req.header("X-EMC-REST-CLIENT") or "").strip().lower() != "true":
            return self._error(401, cat.E_NO_REST_HEADER)
        path = req.path.rstrip("/")
        method = "GET" if req.method == "HEAD" else req.method
        if method == "GET" and path in (
            "/api/types/basicSystemInfo/instances",
            "/api/instances/basicSystemInfo/0",
        ):
            obj = self._basic_system_info()
            body = (
                self._collection(req, [obj], all_fields=False)
                if "/types/" in path
                else self._instance(req, "basicSystemInfo", obj)
            )
            return json_response(200, body)
        session, err, new_login = self._session_for(req)
        if session is None:
            assert err is not None
            return err
        headers: list[tuple[str, str]] = []
        if new_login:
            headers.append(self.sessions.set_cookie(session))
        if method in ("POST", "DELETE", "PUT"):
            sent = req.header(CSRF_HEADER) or ""
            if not hmac.compare_digest(sent.encode(), session.csrf.encode()):
                return self._error(401, cat.E_CSRF, headers=headers)
        try:
            resp = self._route(req, method, path, session)
        except _BadRequest as exc:
            resp = self._error(400, cat.E_BAD_REQUEST, str(exc))
        if method == "GET":
            headers.append((CSRF_HEADER, session.csrf))
        resp.headers.extend(headers)
        return resp

    def _route(self, req: Request, method: str, path: str, session: Session) -> Response:
        parts = path.split("/")
        # /api/types/<type>/instances, /api/types/<type>/action/<name>, /api/instances/<type>/<id>
        if len(parts) == 5 and parts[:2] == ["", "api"] and parts[2] == "types" and parts[4] == "instances":
            return self._types(req, method, parts[3], session)
        if len(parts) == 6 and parts[:3] == ["", "api", "types"] and parts[4] == "action":
            if method == "POST" and parts[3] == "loginSessionInfo" and parts[5] == "logout":
                self.sessions.end(session)
                return json_response(200, {"logoutOK": "true"}, [self.sessions.clear_cookie()])
            return self._error(404, cat.E_NOT_FOUND)
        if len(parts) == 5 and parts[:3] == ["", "api", "instances"]:
            return self._instances(req, method, parts[3], parts[4], session)
        return self._error(404, cat.E_NOT_FOUND)

    def _types(self, req: Request, method: str, type_name: str, session: Session) -> Response:
        if type_name == "metricRealTimeQuery" and method == "POST":
            return self._create_query(req)
        getters = {
            "loginSessionInfo": lambda: [self._login_info(session)],
            "user": lambda: [self._user_obj()],
            "system": lambda: [self._system()],
            "pool": self._pools,
            "lun": self._luns,
            "metric": lambda: [m.content() for m in cat.METRICS],
            "metricRealTimeQuery": self._query_objs,
            "storageProcessor": self._storage_processors,
        }
        if type_name == "metricQueryResult":
            if method != "GET":
                return self._error(405, cat.E_METHOD, method)
            return self._results(req)
        getter = getters.get(type_name)
        if getter is None:
            return self._error(404, cat.E_NOT_FOUND)
        if method != "GET":
            return self._error(405, cat.E_METHOD, method)
        all_fields = type_name in ("metricRealTimeQuery", "loginSessionInfo")
        return json_response(200, self._collection(req, getter(), all_fields=all_fields))

    def _instances(self, req: Request, method: str, type_name: str, ident: str, session: Session) -> Response:
        if type_name == "metricRealTimeQuery":
            try:
                qid = int(ident)
            except ValueError:
                return self._error(422, cat.E_QUERY_NOT_FOUND, ident)
            with self._lock:
                q = self._queries.get(qid)
                if q is None:
                    return self._error(422, cat.E_QUERY_NOT_FOUND, ident)
                if method == "DELETE":
                    del self._queries[qid]
                    return empty_response(204)
                if method == "GET":
                    return json_response(
                        200, self._instance(req, type_name, self._query_obj(q), all_fields=True)
                    )
            return self._error(405, cat.E_METHOD, method)
        objects = {
            "pool": self._pools,
            "lun": self._luns,
            "metric": lambda: [m.content() for m in cat.METRICS],
            "loginSessionInfo": lambda: [self._login_info(session)],
            "user": lambda: [self._user_obj()],
            "storageProcessor": self._storage_processors,
        }.get(type_name)
        if objects is None:
            return self._error(404, cat.E_NOT_FOUND)
        if method != "GET":
            return self._error(405, cat.E_METHOD, method)
        for o in objects():
            if str(o["id"]) == ident or (ident.startswith("name:") and o.get("name") == ident[5:]):
                return json_response(
                    200, self._instance(req, type_name, o, all_fields=type_name == "loginSessionInfo")
                )
        return self._error(404, cat.E_NOT_FOUND)

    # --- objects ---------------------------------------------------------------------------------
    def _health(self, ok_id: str, text: str) -> dict[str, Any]:
        return {"value": 5, "descriptionIds": [ok_id], "descriptions": [text]}

    def _basic_system_info(self) -> dict[str, Any]:
        return {
            "id": "0",
            "model": self.model,
            "name": self.serial,
            "softwareVersion": SOFTWARE_VERSION,
            "apiVersion": API_VERSION,
            "earliestApiVersion": "4.0",
        }

    def _system(self) -> dict[str, Any]:
        return {
            "id": "0",
            "name": self.array.name,
            "model": self.model,
            "serialNumber": self.serial,
            "health": self._health("ALRT_SYSTEM_OK", "The system is operating normally."),
        }

    def _storage_processors(self) -> list[dict[str, Any]]:
        """Each SP with its health: a failed SP (the twin's controller state) is major, 20."""
        states = {c.controller: c.state for c in self.feed.controllers()}
        sps = dict(zip(self.feed.controller_names, SPS, strict=False))
        out = []
        for name, sp in sps.items():
            failed = states.get(name) == "failed"
            health = (
                self._health("ALRT_SP_FAULT", "The storage processor has faulted. Contact support.")
                if failed
                else self._health("ALRT_COMPONENT_OK", "The component is operating normally.")
            )
            health["value"] = HEALTH_MAJOR if failed else HEALTH_OK
            out.append(
                {
                    "id": sp,
                    "name": f"SP {sp[-1].upper()}",
                    "health": health,
                    "model": f"{self.model} SP",
                    "isRescueMode": False,
                    "needsReplacement": failed,
                    "memorySize": int((self.feed.hardware.cache_gb if self.feed.hardware else 48) * 1024),
                }
            )
        return out

    def _login_info(self, s: Session) -> dict[str, Any]:
        return {
            "id": s.user,
            "domain": "Local",
            "user": {"id": f"user_{s.user}"},
            "roles": [{"id": "administrator"}],
            "idleTimeout": int(IDLE_TIMEOUT_S),
            "isPasswordChangeRequired": False,
        }

    def _user_obj(self) -> dict[str, Any]:
        return {"id": f"user_{self._user}", "name": self._user, "role": {"id": "administrator"}}

    def _pools(self) -> list[dict[str, Any]]:
        created = unity_time(self._t_created - 86400 * 30)
        out = []
        n_luns = max(1, len(self.array.luns))
        for i, (name, pid) in enumerate(self.pool_ids.items()):
            used = min(POOL_SIZE_B, n_luns * LUN_SIZE_B // 4) if i == 0 else 0
            out.append(
                {
                    "id": pid,
                    "operationalStatus": [2],
                    "raidType": 10,
                    "type": 1,
                    "isAllFlash": False,
                    "harvestState": 0,
                    "instanceId": f"root/emc:EMC_UEM_MappedStoragePoolLeaf%InstanceID={pid}",
                    "objectId": 12884901890 + i,
                    "health": self._health(
                        "ALRT_COMPONENT_OK", "The component is operating normally. No action is required."
                    ),
                    "name": name,
                    "description": "",
                    "sizeFree": POOL_SIZE_B - used,
                    "sizeTotal": POOL_SIZE_B,
                    "sizeUsed": used,
                    "sizeSubscribed": n_luns * LUN_SIZE_B if i == 0 else 0,
                    "alertThreshold": 70,
                    "poolSpaceHarvestHighThreshold": 95.0,
                    "poolSpaceHarvestLowThreshold": 85.0,
                    "snapSpaceHarvestHighThreshold": 25.0,
                    "snapSpaceHarvestLowThreshold": 20.0,
                    "isFASTCacheEnabled": False,
                    "tiers": [
                        {
                            "tierType": 20,
                            "stripeWidth": 5,
                            "raidType": 1,
                            "name": "Performance",
                            "sizeTotal": POOL_SIZE_B,
                            "sizeUsed": used,
                            "sizeFree": POOL_SIZE_B - used,
                            "sizeMovingDown": 0,
                            "sizeMovingUp": 0,
                            "sizeMovingWithin": 0,
                            "poolUnitCount": 1,
                            "diskCount": 10,
                            "poolUnits": [{"id": f"rg_{i + 1}"}],
                        }
                    ],
                    "creationTime": created,
                    "isEmpty": used == 0,
                    "poolFastVP": {
                        "status": 3,
                        "relocationRate": 2,
                        "type": 2,
                        "isScheduleEnabled": True,
                        "relocationDurationEstimate": "00:00:00.000",
                        "sizeMovingDown": 0,
                        "sizeMovingUp": 0,
                        "sizeMovingWithin": 0,
                        "percentComplete": 0,
                        "dataRelocated": 0,
                    },
                    "isHarvestEnabled": True,
                    "isSnapHarvestEnabled": False,
                    "metadataSizeSubscribed": 0,
                    "snapSizeSubscribed": 0,
                    "metadataSizeUsed": 0,
                    "snapSizeUsed": 0,
                }
            )
        return out

    def _luns(self) -> list[dict[str, Any]]:
        created = unity_time(self._t_created - 86400 * 30)
        first_pool = next(iter(self.pool_ids.items()), None)
        out = []
        for i, (name, lid) in enumerate(self.lun_ids.items()):
            h = hashlib.sha256(f"{self.serial}/{name}".encode()).hexdigest().upper()
            wwn = ":".join(["60", "06", "01", "60"] + [h[j : j + 2] for j in range(0, 24, 2)])
            node = i % 2  # LUNs alternate between SP A and SP B
            lun: dict[str, Any] = {
                "id": lid,
                "operationalStatus": [2],
                "type": 2,
                "tieringPolicy": 0,
                "defaultNode": node,
                "currentNode": node,
                "auSize": 8192,
                "instanceId": f"root/emc:EMC_UEM_StorageVolumeLeaf%InstanceID={lid}",
                "creationTime": created,
                "health": self._health(
                    "ALRT_VOL_OK", "The LUN is operating normally. No action is required."
                ),
                "name": name,
                "description": "",
                "modificationTime": created,
                "sizeTotal": LUN_SIZE_B,
                "sizeAllocated": LUN_SIZE_B // 4,
                "sizeUsed": LUN_SIZE_B // 4,
                "perTierSizeUsed": [0, LUN_SIZE_B // 4, 0],
                "isThinEnabled": True,
                "wwn": wwn,
                "isReplicationDestination": False,
                "isSnapSchedulePaused": False,
                "objectId": 42949672960 + i + 1,
                "metadataSize": 5100273664,
                "metadataSizeAllocated": 2684354560,
                "snapWwn": wwn[:-2] + "FF",
                "snapsSize": 0,
                "snapsSizeAllocated": 0,
                "snapCount": 0,
                "storageResource": {"id": lid},
            }
            if first_pool is not None:
                lun["pool"] = {"id": first_pool[1], "name": first_pool[0]}
            out.append(lun)
        return out

    # --- real-time queries -----------------------------------------------------------------------
    def _query_obj(self, q: _Query) -> dict[str, Any]:
        return {
            "id": q.id,
            "paths": list(q.paths),
            "interval": q.interval,
            "maximumSamples": -1,
            "expiration": unity_time(q.expires_lab_s),
        }

    def _query_objs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._query_obj(q) for q in self._queries.values()]

    def _create_query(self, req: Request) -> Response:
        compact = req.query.get("compact", "").lower() == "true"
        try:
            body = req.json()
        except ValueError:
            return self._error(400, cat.E_BAD_REQUEST, "The request body is not valid JSON")
        if not isinstance(body, dict):
            return self._error(400, cat.E_BAD_REQUEST, "The request body must be an object")
        paths, interval = body.get("paths"), body.get("interval")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            return self._error(400, cat.E_BAD_REQUEST, "paths must be a non-empty list of metric paths")
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            return self._error(400, cat.E_BAD_REQUEST, "interval must be a positive number of seconds")
        for p in paths:
            m = cat.BY_PATH.get(p)
            if m is None:
                return self._error(422, cat.E_BAD_REQUEST, f"The metric path {p} does not exist")
            if not m.realtime:
                return self._error(
                    422, cat.E_BAD_REQUEST, f"The metric path {p} is not available in real time"
                )
        now = self._now()
        counters = self._read_counters()
        with self._lock:
            q = _Query(next(self._query_ids), list(paths), interval, now, now + QUERY_EXPIRATION_S)
            self._fill(q, counters, now)
            q.reading = (now, counters)
            self._queries[q.id] = q
            obj = self._query_obj(q)
        self._wake.set()
        if compact:
            return json_response(201, {"content": obj})
        return json_response(
            201,
            {
                "@base": self._base_url(req, "/api/instances/metricRealTimeQuery"),
                "updated": unity_time(now),
                "links": [{"rel": "self", "href": f"/{q.id}"}],
                "content": obj,
            },
        )

    def _results(self, req: Request) -> Response:
        flt = req.query.get("filter")
        if not flt:
            return self._error(400, cat.E_BAD_REQUEST, "A filter on queryId is required")
        terms = _parse_filter(flt)
        qids = [v for a, op, v in terms if a == "queryId" and op == "eq"]
        if len(qids) != 1 or not isinstance(qids[0], int):
            return self._error(400, cat.E_BAD_REQUEST, "A filter on queryId is required")
        now = self._now()
        with self._lock:
            q = self._queries.get(qids[0])
            due = q is not None and q.next_due() <= now
        # the sampler thread is behind (starved): sample what is due before answering
        counters = self._read_counters_or_none() if due else None
        with self._lock:
            q = self._queries.get(qids[0])
            if q is None or q.expires_lab_s < now:
                return self._error(422, cat.E_QUERY_NOT_FOUND, qids[0])
            if counters is not None:
                self._catch_up(q, counters, now)
            q.expires_lab_s = now + QUERY_EXPIRATION_S
            objects = [
                {
                    "queryId": q.id,
                    "path": path,
                    "timestamp": unity_time(at),
                    "values": sample.get(path, {}),
                }
                for at, sample in q.samples
                for path in q.paths
            ]
        # the per-path entries carry no id; with no fields= every attribute is answered
        return json_response(200, self._collection(req, objects, all_fields=True))
