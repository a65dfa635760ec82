"""One simulated EqualLogic PS member: an SNMP agent (pysnmp) on UDP, answering what SAN HQ polls.

The inventory's URL names the agent and how to reach it: ``snmp://HOST:PORT`` is SNMPv2c with the
array's credential as the community; ``snmp://HOST:PORT?version=3`` is SNMPv3 with the array's
``user`` as the USM user and the credential as its authentication and privacy passphrase
(``auth=sha|sha256|md5``, ``priv=aes|des|none``; default SHA and AES-128). An unknown community or
a wrong v3 key gets no answer, as on a real agent: the manager times out.

Objects (:mod:`labctl.sim.equallogic.mib`) come from the twin's counters of the array at the moment
of the request; one GET answers every object in it from one reading, so a poller that asks for a
volume's counters in one PDU gets a consistent row.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1905
from pysnmp.proto.api import v2c
from pysnmp.smi import instrum

from labctl.errors import BadInputError
from labctl.inventory.model import StorageArray
from labctl.sim.arrays.feed import ArrayFeed
from labctl.sim.arrays.sessions import array_password
from labctl.sim.endpoint import EndpointInfo, SimContext, check_address_free
from labctl.sim.equallogic import mib

log = logging.getLogger(__name__)

DEFAULT_PORT = 161
START_TIMEOUT_S = 10.0
WALK_CACHE_WALL_S = 0.1  # a walk's GETNEXT/GETBULK requests within this share one reading
AUTH = {
    "sha": config.USM_AUTH_HMAC96_SHA,
    "md5": config.USM_AUTH_HMAC96_MD5,
    "sha256": config.USM_AUTH_HMAC192_SHA256,
}
PRIV = {"aes": config.USM_PRIV_CFB128_AES, "des": config.USM_PRIV_CBC56_DES, "none": config.USM_PRIV_NONE}


def parse_url(url: str) -> tuple[str, int, dict[str, str]]:
    """``snmp://127.24.0.2:16100?version=3&auth=sha&priv=aes`` -> (host, port, options)."""
    parts = urlsplit(url)
    if parts.scheme != "snmp" or not parts.hostname:
        raise BadInputError(f"{url!r}: an EqualLogic agent's URL is snmp://HOST[:PORT][?version=3]")
    opts = {k: v[-1].lower() for k, v in parse_qs(parts.query).items()}
    return parts.hostname, parts.port or DEFAULT_PORT, opts


class _Objects(instrum.AbstractMibInstrumController):
    """GET / GETNEXT over a sorted (OID, value) list from the twin."""

    def __init__(self, build: Callable[[], list[tuple[tuple[int, ...], Any]]]):
        self._build = build
        self._cache: tuple[float, list[tuple[tuple[int, ...], Any]]] = (float("-inf"), [])

    def _objects(self, fresh: bool) -> list[tuple[tuple[int, ...], Any]]:
        at, objs = self._cache
        if fresh or time.monotonic() - at > WALK_CACHE_WALL_S:
            objs = self._build()
            self._cache = (time.monotonic(), objs)
        return objs

    def read_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        found = dict(self._objects(fresh=True))
        return [(oid, found.get(tuple(oid), rfc1905.noSuchInstance)) for oid, _ in var_binds]

    def read_next_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        objs = self._objects(fresh=False)
        out = []
        for oid, _ in var_binds:
            key = tuple(oid)
            nxt = next(((o, v) for o, v in objs if o > key), None)
            out.append((v2c.ObjectIdentifier(nxt[0]), nxt[1]) if nxt else (oid, rfc1905.endOfMibView))
        return out


class EqualLogicAgent:
    """The SNMP agent of one simulated EqualLogic PS member."""

    def __init__(self, ctx: SimContext, array: StorageArray, twin_array: str | None = None):
        self.ctx = ctx
        self.array = array
        host, port, self.options = parse_url(array.url)
        self.info = EndpointInfo(kind="equallogic", name=array.name, host=host, port=port, protocol="udp")
        self.feed = ArrayFeed(ctx, array, twin_array)
        self._secret = array_password(ctx, array)
        self.version = self.options.get("version", "2c")
        if self.version == "3" and len(self._secret) < 8:
            raise BadInputError(
                f"{array.name}: an SNMPv3 passphrase needs at least 8 characters ({array.password})"
            )
        hw = self.feed.hardware
        self.model = hw.model if hw is not None and hw.model else "PS6010XV"
        self.cache_mb = int((hw.cache_gb if hw is not None else 2.0) * 1024)
        self.tier_drives = {t.name: t.count for t in hw.tiers} if hw is not None else {"15k": 16}
        digest = hashlib.sha256(array.name.encode()).digest()
        self.member_index = 1 + int.from_bytes(digest[:4], "big") % 2_000_000_000
        self.serial = digest[4:10].hex().upper()
        self._started_lab_s = ctx.clock.now()
        self._avg_prev: dict[str, tuple[float, float, float, float]] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: engine.SnmpEngine | None = None
        self._thread: threading.Thread | None = None

    # --- objects ---------------------------------------------------------------------------------
    def state(self) -> mib.MemberState:
        now = self.ctx.clock.now()
        vols = self.feed.volumes()
        avg: dict[str, tuple[int, int]] = {}
        with self._lock:
            for v in vols:
                cur = (v.reads, v.writes, v.read_response_sum_s, v.write_response_sum_s)
                r0, w0, rs0, ws0 = self._avg_prev.get(v.volume, (0.0, 0.0, 0.0, 0.0))
                dr, dw = cur[0] - r0, cur[1] - w0
                avg[v.volume] = (
                    round((cur[2] - rs0) * 1000 / dr) if dr > 0 else 0,
                    round((cur[3] - ws0) * 1000 / dw) if dw > 0 else 0,
                )
                self._avg_prev[v.volume] = cur
        return mib.MemberState(
            name=self.array.name,
            member_index=self.member_index,
            model=self.model,
            serial=self.serial,
            cache_mb=self.cache_mb,
            lab_time_s=now,
            uptime_s=now - self._started_lab_s,
            volumes=vols,
            tiers=self.feed.tiers(),
            tier_drives=self.tier_drives,
            controllers=self.feed.controllers(),
            avg_latency_ms=avg,
        )

    def objects(self) -> list[tuple[tuple[int, ...], Any]]:
        try:
            return mib.objects(self.state())
        except Exception:
            log.exception("equallogic %s: reading the twin failed", self.array.name)
            return []

    # --- lifecycle -------------------------------------------------------------------------------
    def _configure(self, eng: engine.SnmpEngine) -> None:
        config.add_transport(
            eng, udp.DOMAIN_NAME, udp.UdpTransport().open_server_mode((self.info.host, self.info.port))
        )
        view = (1, 3, 6)
        if self.version == "3":
            auth = AUTH.get(self.options.get("auth", "sha"), config.USM_AUTH_HMAC96_SHA)
            priv = PRIV.get(self.options.get("priv", "aes"), config.USM_PRIV_CFB128_AES)
            priv_key = None if priv == config.USM_PRIV_NONE else self._secret
            config.add_v3_user(eng, self.array.user, auth, self._secret, priv, priv_key)
            level = "authNoPriv" if priv_key is None else "authPriv"
            config.add_vacm_user(eng, 3, self.array.user, level, view)
        else:
            config.add_v1_system(eng, "sanhq-area", self._secret)
            config.add_vacm_user(eng, 2, "sanhq-area", "noAuthNoPriv", view)
        snmp_ctx = context.SnmpContext(eng)
        snmp_ctx.unregister_context_name(b"")
        snmp_ctx.register_context_name(b"", _Objects(self.objects))
        cmdrsp.GetCommandResponder(eng, snmp_ctx)
        cmdrsp.NextCommandResponder(eng, snmp_ctx)
        cmdrsp.BulkCommandResponder(eng, snmp_ctx)

    def start(self) -> None:
        """Bind and answer in a background thread with its own event loop; returns once listening."""
        if self._thread is not None:
            return
        check_address_free("equallogic", self.array.name, self.info.host, self.info.port, udp=True)
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                eng = engine.SnmpEngine()
                self._configure(eng)
                eng.transport_dispatcher.job_started(1)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self._loop, self._engine = loop, eng
            ready.set()
            try:
                loop.run_forever()
            finally:
                try:
                    eng.close_dispatcher()
                except Exception:
                    pass
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.close()

        self._thread = threading.Thread(target=run, name=f"sim-equallogic-{self.array.name}", daemon=True)
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S) or failure:
            self._thread = None
            raise BadInputError(
                f"equallogic endpoint for {self.array.name}: cannot listen on udp "
                f"{self.info.host}:{self.info.port}: {failure[0] if failure else 'timed out'}"
            )

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop, self._thread, self._engine = None, None, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
