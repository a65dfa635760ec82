"""One NATS connection to the hub for a controller or an agent: streams, publishing that survives a
dropped link, and a synchronous face over nats-py's asyncio.

The client reconnects forever (a hub restart must not end a run or an agent); a publish that
fails while the link is down is sent again with the *same* ``Nats-Msg-Id`` until it is stored
or its deadline passes, so the server's de-duplication makes it land exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Coroutine, Sequence
from typing import Any, Final, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig

from labctl.drivers.hub.loop import LoopThread
from labctl.drivers.hub.protocol import (
    AGENTS_STREAM,
    DATA_STREAM,
    DEDUP_WINDOW_S,
    KEEP_S,
    MSG_ID,
    ORDERS_STREAM,
    RESULTS_STREAM,
)
from labctl.errors import EndpointError, EndpointTimeout

log = logging.getLogger(__name__)
_USERINFO = re.compile(r"//[^/@\s]*@")


def display_url(servers: Sequence[str]) -> str:
    """The hub URL(s) for messages, without any user:password."""
    return ",".join(_USERINFO.sub("//", s) for s in servers)


T = TypeVar("T")

CALL_TIMEOUT_S: Final = 5.0  # one JetStream request
CONNECT_TIMEOUT_S: Final = 5.0
RETRY_PAUSE_S: Final = 0.2  # between attempts of a publish while the link is down
# what a publish meets while the hub is away (all retried; anything else is a real refusal)
TRANSIENT = (
    TimeoutError,
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    OSError,
)

STREAMS: Final = (
    (ORDERS_STREAM, ["labctl.order.>"], "orders to site agents"),
    (RESULTS_STREAM, ["labctl.result.>"], "agents' per-machine results and done records"),
    (DATA_STREAM, ["labctl.sample.>"], "samples of metric sources the agents run"),
)


def split_servers(servers: str | Sequence[str]) -> list[str]:
    if isinstance(servers, str):
        return [s.strip() for s in servers.split(",") if s.strip()]
    return list(servers)


class HubConnection:
    """A connected client on a private event loop thread; :meth:`call` runs a coroutine on it."""

    def __init__(
        self,
        servers: str | Sequence[str],
        *,
        name: str,
        js_domain: str | None = None,
        call_timeout_s: float = CALL_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ):
        self.servers = split_servers(servers)
        self.url = display_url(self.servers)
        self.js_domain = js_domain
        self.call_timeout_s = call_timeout_s
        self.loop = LoopThread(f"nats {name}")
        self.nc: Any = None
        self.js: JetStreamContext | None = None
        try:
            self.call(self._connect(name, connect_timeout_s), "connect to the hub", connect_timeout_s + 1)
        except BaseException:
            self.loop.close()
            raise

    async def _connect(self, name: str, connect_timeout_s: float) -> None:
        async def quiet(exc: Exception) -> None:  # nats-py logs every reconnect attempt otherwise
            log.debug("%s: %s", self.url, exc)

        try:
            # nats-py retries a first connection as often as later ones: the deadline is ours
            self.nc = await asyncio.wait_for(
                nats.connect(
                    servers=self.servers,
                    name=name,
                    connect_timeout=max(1, math.ceil(connect_timeout_s)),
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.25,
                    error_cb=quiet,
                ),
                connect_timeout_s,
            )
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            why = f"no answer within {connect_timeout_s:g} s" if isinstance(exc, TimeoutError) else str(exc)
            raise EndpointError(
                self.url,
                "connect to the hub",
                why or type(exc).__name__,
                "is nats-server running there? (the inventory's agents.hub, or --hub)",
            ) from None
        self.js = self.nc.jetstream(domain=self.js_domain, timeout=self.call_timeout_s)

    @property
    def connected(self) -> bool:
        return self.nc is not None and self.nc.is_connected

    @property
    def reconnects(self) -> int:
        """How often the client has reconnected (subscriptions to JetStream consumers may need
        making again after a hub restart)."""
        return int(self.nc.stats.get("reconnects", 0)) if self.nc is not None else 0

    def call(self, coro: Coroutine[Any, Any, T], action: str, timeout_s: float | None = None) -> T:
        """Run ``coro`` on the loop; a timeout or NATS error becomes an EndpointError naming the hub."""
        timeout_s = self.call_timeout_s if timeout_s is None else timeout_s
        try:
            return self.loop.run(coro, timeout_s)
        except TimeoutError:
            raise EndpointTimeout(
                self.url, action, f"no answer within {timeout_s:g} s", "is the hub reachable?"
            ) from None
        except (nats.errors.Error, OSError) as exc:
            raise EndpointError(self.url, action, str(exc) or type(exc).__name__) from None

    async def ensure_streams(self) -> None:
        """Create the agents' streams on the hub if they are not there (idempotent, any client)."""
        assert self.js is not None
        wanted = [
            *STREAMS,
            (AGENTS_STREAM, ["labctl.heartbeat.>"], "each agent's last heartbeat"),
        ]
        for name, subjects, what in wanted:
            try:
                await self.js.stream_info(name)
                continue
            except nats.js.errors.NotFoundError:
                pass
            except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError) as exc:
                raise EndpointError(
                    self.url,
                    f"open stream {name}",
                    f"no JetStream answers ({type(exc).__name__})",
                    "start the hub's nats-server with JetStream; through a leaf node give the hub's "
                    "JetStream domain (agents.hub_domain)",
                ) from None
            config = StreamConfig(
                name=name,
                description=f"labctl: {what}",
                subjects=subjects,
                retention=RetentionPolicy.LIMITS,
                storage=StorageType.FILE,
                max_age=KEEP_S,
                duplicate_window=DEDUP_WINDOW_S,
                max_msgs_per_subject=1 if name == AGENTS_STREAM else -1,
            )
            try:
                await self.js.add_stream(config)
            except nats.js.errors.BadRequestError as exc:  # another client made it just now
                log.debug("add stream %s: %s", name, exc)

    async def publish(
        self, subject: str, payload: bytes, msg_id: str | None, *, retry_until: float | None = None
    ) -> bool:
        """Store ``payload`` on ``subject``'s stream once; re-sent with the same id while the link
        is down, until ``retry_until`` (``time.monotonic()``). True if this copy was stored, False
        if the server already had one with this id (a duplicate)."""
        assert self.js is not None
        headers = {MSG_ID: msg_id} if msg_id else None
        while True:
            try:
                ack = await self.js.publish(subject, payload, headers=headers)
                return not ack.duplicate
            except TRANSIENT as exc:
                if retry_until is None or time.monotonic() > retry_until:
                    raise
                log.debug("publish %s: %s; sending again", subject, type(exc).__name__)
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _shutdown(self) -> None:
        # a pending fetch or subscription task would hold nc.close() until its own timeout
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
        await self.nc.close()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop what still runs on the loop, close the connection, then the loop thread. Idempotent."""
        try:
            if self.nc is not None and not self.nc.is_closed:
                try:
                    self.loop.run(self._shutdown(), timeout_s)
                except (TimeoutError, OSError, nats.errors.Error) as exc:
                    log.debug("%s: close: %s", self.url, exc)
        except RuntimeError:  # the loop is closed already
            pass
        finally:
            self.loop.close()
