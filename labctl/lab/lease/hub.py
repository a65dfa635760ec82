"""The shared lease store: a JetStream key-value bucket on the site's NATS hub.

Every controller and agent of a site sees the same leases. One key per resource (``lab:sim-2007``
is the key ``lab.sim-2007``) holds the same JSON record as the file store. Each change is a
compare-and-set on the key's last revision (``Nats-Expected-Last-Subject-Sequence``): a take
creates the key only if it is absent (revision 0 or a delete marker), a renewal and a release
write over exactly the revision they read, so two takers can never both win. Expiry is the
server's: every write carries a per-message TTL (``Nats-TTL``, NATS 2.11) of the record's longest
remaining reference, and the bucket's ``max_age`` (a week) caps them all, so the lease of a holder
that died without releasing disappears from the bucket on its own. References of a shared
resource lapse one by one by their own TTL (judged by the wall clocks of the hosts: keep them in
NTP; ``clock_grace_s`` absorbs small offsets).

nats-py is asyncio: the store runs its client on a private event loop thread and gives the
synchronous lease interface on top; every call has a deadline (``call_timeout_s``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import re
import time
from collections.abc import Sequence
from typing import Any, Final

import nats
import nats.errors
import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType

from labctl.drivers.hub.connection import display_url
from labctl.drivers.hub.loop import LoopThread
from labctl.errors import BadInputError, EndpointError, EndpointTimeout
from labctl.lab.lease.model import MAX_TTL_S, MIN_TTL_S
from labctl.lab.lease.record import KEEP, LeaseRecord, LeaseStoreError, RecordLeaseStore, T, Transaction

log = logging.getLogger(__name__)

DEFAULT_BUCKET: Final = "labctl-leases"
CALL_TIMEOUT_S: Final = 5.0  # one JetStream request, or one whole lease operation from a caller
CONNECT_TIMEOUT_S: Final = 5.0
# Hosts' clocks differ a little: a shared reference counts as lapsed only this long after its TTL.
CLOCK_GRACE_S: Final = 1.0
CAS_ATTEMPTS: Final = 50  # holders of one shared resource write one key: retries after a lost race
_CAS_BACKOFF_S: Final = 0.01
# A released key's delete marker goes after a minute (not the bucket's week), so listing reads
# only keys in use; watchers of the bucket have long seen it by then.
DELETE_MARKER_TTL_S: Final = 60
# headers of the KV convention (what `nats kv` and every client understand)
_KV_OP: Final = "KV-Operation"
_DELETED_OPS: Final = ("DEL", "PURGE")
_MARKER_REASON: Final = "Nats-Marker-Reason"  # a server-placed marker: the key expired
_EXPECTED_LAST: Final = "Nats-Expected-Last-Subject-Sequence"
_WRONG_LAST_SEQUENCE: Final = (10071, 10164)  # JetStream error codes of a failed compare-and-set
_BUCKET = re.compile(r"[A-Za-z0-9_-]+")


def resource_key(resource: str) -> str:
    """``kind:name`` -> the key ``kind.name`` (a resource's kind never has a dot, so it is one-to-one)."""
    return resource.replace(":", ".", 1)


class NatsLeaseStore(RecordLeaseStore):
    """Leases in the JetStream key-value bucket ``bucket`` of the hub at ``servers``.

    ``js_domain``: the JetStream domain of the hub, when the client connects through a leaf node
    that runs a JetStream of its own (the leases must live at the hub, shared by every site).
    """

    clock_grace_s = CLOCK_GRACE_S

    def __init__(
        self,
        servers: str | Sequence[str],
        bucket: str = DEFAULT_BUCKET,
        *,
        js_domain: str | None = None,
        call_timeout_s: float = CALL_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        name: str = "labctl-lease",
    ):
        super().__init__()
        if not _BUCKET.fullmatch(bucket):
            raise BadInputError(f"lease bucket {bucket!r}: letters, digits, - and _ only")
        if isinstance(servers, str):
            servers = [s.strip() for s in servers.split(",") if s.strip()]
        self.servers = list(servers)
        self.bucket = bucket
        self.stream = f"KV_{bucket}"
        self._prefix = f"$KV.{bucket}."
        self.call_timeout_s = call_timeout_s
        self._url = display_url(self.servers)
        self._loop = LoopThread(f"nats {self._url}")
        self._nc: Any = None
        self._js: JetStreamContext | None = None
        try:
            self._call(
                self._connect(name, js_domain, connect_timeout_s),
                "connect to the lease hub",
                timeout_s=connect_timeout_s + call_timeout_s,
            )
        except BaseException:
            self.close()
            raise

    @property
    def where(self) -> str:
        return f"{self._url} bucket {self.bucket}"

    # connection -------------------------------------------------------------------------------------
    async def _connect(self, name: str, js_domain: str | None, connect_timeout_s: float) -> None:
        async def quiet(exc: Exception) -> None:  # nats-py logs every reconnect attempt otherwise
            log.debug("%s: %s", self._url, exc)

        try:
            # nats-py retries a first connection as often as later ones (forever, below): the
            # deadline is ours
            self._nc = await asyncio.wait_for(
                nats.connect(
                    servers=self.servers,
                    name=name,
                    connect_timeout=max(1, math.ceil(connect_timeout_s)),
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,  # a hub restart must not end a run's renewals for good
                    reconnect_time_wait=0.5,
                    error_cb=quiet,
                ),
                connect_timeout_s,
            )
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            reason = (
                f"no answer within {connect_timeout_s:g} s" if isinstance(exc, TimeoutError) else str(exc)
            )
            raise EndpointError(
                self._url,
                "connect to the lease hub",
                reason or type(exc).__name__,
                "is nats-server running there? (the hub comes from --hub, else the inventory's "
                "agents.hub, else LABCTL_HUB; a lab without agents and without LABCTL_HUB uses this "
                "machine's leases)",
            ) from None
        self._js = self._nc.jetstream(domain=js_domain, timeout=self.call_timeout_s)
        # Writes reach another domain's stream through its API prefix, as every NATS client's KV
        # does ($JS.hub.API.$KV.<bucket>.<key>; the servers map it back onto the bucket's subject).
        self._put_prefix = (f"$JS.{js_domain}.API." if js_domain else "") + self._prefix
        await self._bind_bucket()

    async def _bind_bucket(self) -> None:
        assert self._js is not None
        try:
            info = await self._js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            config = KeyValueConfig(
                bucket=self.bucket,
                description="labctl leases: one key per leased lab, group or shared resource",
                history=1,
                ttl=MAX_TTL_S,  # the ceiling; each lease's own TTL rides on its message
                storage=StorageType.FILE,
            )
            await self._js.create_key_value(config)  # idempotent if another client just made it
            self.max_ttl_s = MAX_TTL_S
            return
        except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError) as exc:
            raise EndpointError(
                self._url,
                "open the lease bucket",
                f"no JetStream answers ({type(exc).__name__})",
                "start the hub's nats-server with JetStream; through a leaf node, name the hub's "
                "JetStream domain: --hub-domain or LABCTL_HUB_DOMAIN",
            ) from None
        if not info.config.allow_msg_ttl:
            raise LeaseStoreError(
                f"{self.where}: the bucket does not allow per-message TTLs (made by another tool? "
                f"delete its stream {self.stream} and labctl makes it again)"
            )
        if info.config.max_age:
            self.max_ttl_s = min(MAX_TTL_S, info.config.max_age)

    def close(self) -> None:
        """Release what this store still holds, then close the connection and the loop thread."""
        try:
            if self._nc is not None and not self._nc.is_closed:
                super().close()
                try:
                    self._loop.run(self._nc.close(), self.call_timeout_s)
                except (TimeoutError, OSError, nats.errors.Error) as exc:  # the hub is gone already
                    log.debug("%s: close: %s", self._url, exc)
        finally:
            self._loop.close()

    # the backend ---------------------------------------------------------------------------------
    def _call(self, coro: Any, action: str, timeout_s: float | None = None) -> Any:
        timeout_s = self.call_timeout_s if timeout_s is None else timeout_s
        try:
            return self._loop.run(coro, timeout_s)
        except TimeoutError:
            raise EndpointTimeout(
                self._url, action, f"no answer within {timeout_s:g} s", "is the hub reachable?"
            ) from None
        except (nats.errors.Error, OSError) as exc:
            raise EndpointError(self._url, action, str(exc) or type(exc).__name__) from None

    async def _get(self, key: str, tolerate_corrupt: bool) -> tuple[LeaseRecord | None, int, bool]:
        """The key's record (None: absent, deleted, or unreadable and ``tolerate_corrupt``), its
        revision (0: no message at all), which the next write must name, and whether a value
        (not a delete marker) is stored."""
        assert self._js is not None
        try:
            msg = await self._js.get_msg(self.stream, subject=self._prefix + key)
        except nats.js.errors.NotFoundError:
            return None, 0, False
        revision = msg.seq or 0
        headers = msg.headers or {}
        if headers.get(_KV_OP) in _DELETED_OPS or _MARKER_REASON in headers:
            return None, revision, False
        try:
            return LeaseRecord.from_json(msg.data or b"", f"{self.where} key {key}"), revision, True
        except LeaseStoreError:
            if tolerate_corrupt:
                return None, revision, True
            raise

    async def _put(self, key: str, record: LeaseRecord | None, revision: int) -> None:
        """Write ``record`` (None: a delete marker) if the key is still at ``revision``."""
        assert self._js is not None
        headers = {_EXPECTED_LAST: str(revision)}
        if record is None:
            headers[_KV_OP] = "DEL"
            await self._js.publish(
                self._put_prefix + key, b"", headers=headers, stream=self.stream, msg_ttl=DELETE_MARKER_TTL_S
            )
            return
        ttl_s = max(MIN_TTL_S, math.ceil(record.expires_at() - time.time()))
        await self._js.publish(
            self._put_prefix + key, record.to_json(), headers=headers, stream=self.stream, msg_ttl=ttl_s
        )

    async def _atransact(self, resource: str, fn: Transaction[T], tolerate_corrupt: bool) -> T:
        key = resource_key(resource)
        for attempt in range(CAS_ATTEMPTS):
            record, revision, stored = await self._get(key, tolerate_corrupt)
            if record is not None and record.resource != resource:
                raise LeaseStoreError(f"{self.where} key {key}: holds {record.resource}, not {resource}")
            new, result = fn(record)
            if new is KEEP or (new is None and not stored):
                return result
            assert new is None or isinstance(new, LeaseRecord)
            try:
                await self._put(key, new, revision)
                return result
            except nats.js.errors.APIError as exc:
                if exc.err_code not in _WRONG_LAST_SEQUENCE:
                    raise
            # another writer got in between: read again, after a short random pause
            await asyncio.sleep(random.uniform(0, _CAS_BACKOFF_S * (attempt + 1)))
        raise LeaseStoreError(
            f"{self.where} key {key}: {CAS_ATTEMPTS} conflicting writes in a row (too many holders "
            f"renewing one shared resource at once?)"
        )

    def _transact(self, resource: str, fn: Transaction[T], *, tolerate_corrupt: bool = False) -> T:
        return self._call(self._atransact(resource, fn, tolerate_corrupt), f"lease {resource}")

    async def _arecords(self) -> list[LeaseRecord]:
        assert self._js is not None
        info = await self._js.stream_info(self.stream, subjects_filter=self._prefix + ">")
        records = []
        for subject in sorted(info.state.subjects or {}):
            try:
                record, _, _ = await self._get(subject.removeprefix(self._prefix), tolerate_corrupt=False)
            except LeaseStoreError as exc:
                log.warning("%s", exc)
                continue
            if record is not None:
                records.append(record)
        return records

    def _records(self) -> list[LeaseRecord]:
        return self._call(self._arecords(), "list leases")
