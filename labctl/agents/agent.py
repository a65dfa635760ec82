"""``labctl agent``: one per subnet or site, executing the lab layer's actions where the wire is.

The agent connects to the hub (directly, or through a leaf node it starts when ``--hub`` is a
``nats-leaf://`` URL: the site then needs one outbound port), then:

- answers clock pings on ``labctl.clock.<lab>.<agent>`` (request/reply, stamped on arrival and
  on answer: :mod:`labctl.drivers.hub.clocksync`);
- publishes a heartbeat every ``heartbeat_s`` to ``labctl.heartbeat.<lab>.<agent>`` (version,
  host, what it serves, orders in progress);
- answers the ``labctl-launcher/1`` calls for the session launchers placed at it on
  ``labctl.launcher.<lab>.<agent>`` (request/reply; :mod:`labctl.agents.launchers`, which starts
  the launchers it hosts before the agent answers anything);
- pulls its orders from the durable consumer ``agent-<lab>-<agent>`` of ``LABCTL_ORDERS``, runs
  each on a worker thread (:class:`~labctl.agents.execute.Executor`), publishes each machine's
  result as soon as it is known and then the order's done record, and acks the order last. The
  journal makes a second delivery of an order (a lost ack, a restart) send its results again
  instead of acting again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from labctl import __version__
from labctl.agents.execute import Executor
from labctl.agents.journal import Journal
from labctl.agents.launchers import LauncherHost, too_big
from labctl.agents.nats_server import NatsServer, start_nats_server
from labctl.drivers.hub.clocksync import answer
from labctl.drivers.hub.connection import TRANSIENT, HubConnection
from labctl.drivers.hub.protocol import (
    ORDERS_STREAM,
    Heartbeat,
    LauncherAnswer,
    LauncherCall,
    MachineResult,
    Order,
    OrderDone,
    ResultEnvelope,
    SampleBatch,
    clock_subject,
    consumer_name,
    heartbeat_subject,
    launcher_subject,
    order_subject,
    result_subject,
    sample_subject,
)
from labctl.errors import BadInputError
from labctl.inventory.model import Lab
from labctl.lab.context import DriverSettings

log = logging.getLogger(__name__)

LEAF_SCHEME: Final = "nats-leaf://"
DEFAULT_HUB_DOMAIN: Final = "hub"


@dataclass(frozen=True)
class AgentSettings:
    fetch_wait_s: float = 1.0  # one pull of the order consumer waits this long for orders
    workers: int = 16  # orders executed at once (a readiness watch holds one for its whole wait)
    launcher_workers: int = 8  # launcher calls relayed at once (one launcher is called once at a time)
    ack_wait_s: float = 30.0  # the hub re-delivers an order not acked (or kept in progress) this long
    publish_retry_s: float = 600.0  # a result is re-sent this long across a dropped link
    heartbeat_s: float | None = None  # default: the inventory's agents.heartbeat_s


def default_state_dir(lab: Lab, name: str) -> Path:
    return (
        Path(os.environ.get("LABCTL_AGENT_DIR") or Path.home() / ".labctl" / "agents") / f"{lab.name}-{name}"
    )


class SiteAgent:
    def __init__(
        self,
        lab: Lab,
        name: str,
        *,
        hub: str | None = None,
        hub_domain: str | None = None,
        state_dir: Path | None = None,
        settings: AgentSettings | None = None,
        driver_settings: DriverSettings | None = None,
    ):
        if lab.agents is None:
            raise BadInputError(f"{lab.source_file}: the lab has no agents: section (name the agents there)")
        if name not in lab.agents.sites:
            raise BadInputError(
                f"{lab.source_file}: no agent {name!r} under agents.sites "
                f"(known: {', '.join(lab.agents.sites) or 'none'})"
            )
        self.lab = lab
        self.name = name
        self.site = lab.agents.sites[name]
        self.hub = hub or lab.agents.hub
        self.hub_domain = hub_domain or lab.agents.hub_domain
        self.settings = settings or AgentSettings()
        self.heartbeat_s = self.settings.heartbeat_s or lab.agents.heartbeat_s
        self.state_dir = state_dir or default_state_dir(lab, name)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.executor = Executor(lab, name, driver_settings)
        self.journal = Journal(self.state_dir / "journal.jsonl")
        self.pool = concurrent.futures.ThreadPoolExecutor(self.settings.workers, thread_name_prefix="order")
        self.launchers = LauncherHost(
            lab, name, self.state_dir, lambda spec: self.executor.session(spec).context
        )
        # launcher calls never queue behind long orders (a readiness watch), nor orders behind them
        self.launcher_pool = concurrent.futures.ThreadPoolExecutor(
            self.settings.launcher_workers, thread_name_prefix="launcher"
        )
        self.leaf: NatsServer | None = None
        self.conn: HubConnection | None = None
        self.started_wall = time.time()
        self.executed = 0  # orders executed by this process
        self.answered_again = 0  # deliveries answered from the journal
        self._tasks: list[asyncio.Task[None]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._mine: set[str] = set()  # orders this process is executing
        self._claim = threading.Lock()
        self._ready = threading.Event()

    # --- lifecycle -----------------------------------------------------------------------------
    def _connect(self) -> HubConnection:
        url, domain = self.hub, self.hub_domain
        if url.startswith(LEAF_SCHEME):
            # the site's own leaf node dials out to the hub; the agent talks to it on loopback
            self.leaf = start_nats_server(
                self.state_dir / "leaf",
                name=f"leaf-{self.name}",
                jetstream=False,
                leaf_remotes=[url],
                # a SIGKILLed agent leaves no leaf node behind (one started off the main thread
                # would be stopped when that thread ends, so it is not tied)
                die_with_starter=threading.current_thread() is threading.main_thread(),
            )
            url, domain = self.leaf.url, domain or DEFAULT_HUB_DOMAIN
        return HubConnection(url, name=f"labctl-agent {self.lab.name}/{self.name}", js_domain=domain)

    def start(self) -> None:
        """Start the launchers it hosts, connect, subscribe and start the heartbeat and the order
        loop (returns once it answers)."""
        self.launchers.start()  # their daemons start while the agent connects
        try:
            self.conn = self._connect()
            self.conn.call(self.conn.ensure_streams(), "create the agents' streams")
            self.conn.call(self._subscribe(), "subscribe to orders and clock pings")
        except BaseException:
            self.launchers.close()
            raise
        self.launchers.wait()
        self._ready.set()
        log.info(
            "agent %s of %s on %s: serves %s",
            self.name,
            self.lab.name,
            self.conn.url,
            self.site.serves_text(),
        )

    def run(self, stop: threading.Event) -> None:
        """Start, then serve until ``stop`` is set."""
        self.start()
        try:
            stop.wait()
        finally:
            self.close()

    def close(self) -> None:
        conn, self.conn = self.conn, None
        self.executor.close()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.launcher_pool.shutdown(wait=True, cancel_futures=True)
        self.launchers.close()
        if conn is not None:
            try:
                conn.call(self._cancel_tasks(), "stop", 5.0)
            except Exception as exc:  # closing anyway
                log.debug("stopping tasks: %s", exc)
            conn.close()
        if self.leaf is not None:
            self.leaf.stop()
            self.leaf = None
        self.journal.close()

    async def _cancel_tasks(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- subscriptions -------------------------------------------------------------------------
    async def _subscribe(self) -> None:
        assert self.conn is not None and self.conn.js is not None
        nc, js, lab = self.conn.nc, self.conn.js, self.lab.name

        async def pong(msg: Any) -> None:
            try:
                await msg.respond(answer(self.name, msg.data))
            except (ValidationError, nats.errors.Error) as exc:
                log.debug("clock ping: %s", exc)

        await nc.subscribe(clock_subject(lab, self.name), cb=pong)

        async def relay(msg: Any) -> None:
            # nats-py runs one subscription's callbacks one after the other: a slow launcher must
            # not hold the calls to the others, so each call is a task of its own
            task = asyncio.create_task(self._relay(msg))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

        await nc.subscribe(launcher_subject(lab, self.name), cb=relay)
        sub = await js.pull_subscribe(
            order_subject(lab, self.name),
            durable=consumer_name(lab, self.name),
            stream=ORDERS_STREAM,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.NEW,  # a new agent does not act on yesterday's orders
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.settings.ack_wait_s,
                max_ack_pending=1000,
            ),
        )
        await nc.flush()
        self._tasks = [
            asyncio.create_task(self._heartbeats()),
            asyncio.create_task(self._orders(sub)),
        ]

    async def _heartbeats(self) -> None:
        assert self.conn is not None
        host = socket.gethostname()
        while True:
            beat = Heartbeat(
                lab=self.lab.name,
                agent=self.name,
                version=__version__,
                host=host,
                pid=os.getpid(),
                started_wall=self.started_wall,
                beat_wall=time.time(),
                heartbeat_s=self.heartbeat_s,
                serves=self.site.serves_text(),
                orders_executed=self.executed,
                orders_refused_again=self.answered_again,
                running=self.executor.running()[:20],
                hub=f"leaf node to {self.hub}" if self.leaf is not None else self.conn.url,
            )
            try:
                await self.conn.publish(heartbeat_subject(self.lab.name, self.name), beat.to_bytes(), None)
            except (*TRANSIENT, nats.js.errors.APIError) as exc:
                log.debug("heartbeat: %s", type(exc).__name__)
            await asyncio.sleep(self.heartbeat_s)

    async def _orders(self, sub: Any) -> None:
        while True:
            try:
                msgs = await sub.fetch(16, timeout=self.settings.fetch_wait_s)
            except nats.errors.TimeoutError:
                continue
            except (*TRANSIENT, nats.js.errors.APIError) as exc:  # the hub is away: try again soon
                log.debug("fetch orders: %s", type(exc).__name__)
                await asyncio.sleep(0.2)
                continue
            for msg in msgs:
                task = asyncio.create_task(self._handle(msg))
                self._inflight.add(task)  # held until done: the loop keeps only weak references
                task.add_done_callback(self._inflight.discard)

    # --- one launcher call ----------------------------------------------------------------------
    async def _relay(self, msg: Any) -> None:
        try:
            call = LauncherCall.from_bytes(msg.data)
        except ValidationError as exc:
            answer = LauncherAnswer(
                launcher="?", agent=self.name, ok=False, error=f"unreadable call: {str(exc).splitlines()[0]}"
            )
        else:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(self.launcher_pool, self.launchers.answer, call)
        assert self.conn is not None
        try:
            await msg.respond(too_big(answer, self.conn.nc.max_payload).to_bytes())
        except (*TRANSIENT, nats.errors.Error) as exc:  # the caller's deadline ends its wait
            log.debug("launcher answer: %s", type(exc).__name__)

    # --- one order ----------------------------------------------------------------------------
    async def _handle(self, msg: Any) -> None:
        try:
            order = Order.from_bytes(msg.data)
        except ValidationError as exc:
            log.warning("unreadable order dropped: %s", str(exc).splitlines()[0])
            await msg.term()
            return
        loop = asyncio.get_running_loop()
        # a cancel must not queue behind the long orders it is meant to stop
        fut = loop.run_in_executor(None if order.kind == "cancel" else self.pool, self._execute, order)
        while True:
            done, _ = await asyncio.wait([fut], timeout=self.settings.ack_wait_s / 3)
            if done:
                break
            try:  # a long order (a readiness watch) must not be delivered again meanwhile
                await msg.in_progress()
            except (*TRANSIENT, nats.errors.Error):
                pass
        try:
            await msg.ack()
        except (*TRANSIENT, nats.errors.Error) as exc:  # delivered again later: the journal answers it
            log.debug("ack %s: %s", order.id, type(exc).__name__)

    def _execute(self, order: Order) -> None:
        expired = time.time() > order.expires_at
        with self._claim:  # two deliveries of one order at once: one executes, the other returns
            entry = self.journal.get(order.id) if expired else self.journal.begin(order.id)
            if entry is None and not expired:
                self._mine.add(order.id)
            elif order.id in self._mine:
                self.answered_again += 1
                return  # being executed by this process right now: it will report
        if entry is not None:
            # delivered before: send what was reported then, never act again
            self.answered_again += 1
            results = list(entry.results.values())
            if entry.state == "done" and entry.done is not None:
                done = entry.done.model_copy(update={"redelivered": True})
            else:
                done = OrderDone(
                    order=order.id,
                    agent=self.name,
                    received_wall=time.time(),
                    machines=len(order.machines),
                    reported=len(results),
                    status="interrupted",
                    detail="the agent stopped while executing it; not executed again",
                    redelivered=True,
                )
                self.journal.finish(done)
            self._publish_all(order, results, done)
            return
        if expired:
            done = OrderDone(
                order=order.id,
                agent=self.name,
                received_wall=time.time(),
                machines=len(order.machines),
                status="expired",
                detail=f"arrived {time.time() - order.expires_at:.1f} s after it expired; not executed",
            )
            self.journal.finish(done)
            self._publish_all(order, [], done)
            return
        pending: list[concurrent.futures.Future[bool]] = []
        count = 0

        def emit(r: MachineResult) -> None:
            nonlocal count
            count += 1
            self.journal.result(r)
            pending.append(self._publish_result(order, r))

        def samples(batch: SampleBatch) -> None:
            self._publish_samples(batch)

        try:
            done = self.executor.run(order, emit, samples)
            self.executed += 1
            self._wait(pending)
            done = done.model_copy(update={"reported": count})
            self.journal.finish(done)
            self._wait([self._publish_done(order, done)])
        finally:
            self._mine.discard(order.id)

    # --- publishing ----------------------------------------------------------------------------
    def _submit(self, subject: str, payload: bytes, msg_id: str) -> concurrent.futures.Future[bool]:
        assert self.conn is not None
        retry_until = time.monotonic() + self.settings.publish_retry_s
        return asyncio.run_coroutine_threadsafe(
            self.conn.publish(subject, payload, msg_id, retry_until=retry_until), self.conn.loop.loop
        )

    def _publish_result(self, order: Order, r: MachineResult) -> concurrent.futures.Future[bool]:
        return self._submit(
            result_subject(self.lab.name, self.name, order.id),
            ResultEnvelope(result=r).to_bytes(),
            f"{order.id}/{r.machine}",
        )

    def _publish_done(self, order: Order, done: OrderDone) -> concurrent.futures.Future[bool]:
        return self._submit(
            result_subject(self.lab.name, self.name, order.id),
            ResultEnvelope(done=done).to_bytes(),
            f"{order.id}/{self.name}/done",
        )

    def _publish_all(self, order: Order, results: list[MachineResult], done: OrderDone) -> None:
        self._wait([self._publish_result(order, r) for r in results])
        self._wait([self._publish_done(order, done)])

    def _publish_samples(self, batch: SampleBatch) -> None:
        self._submit(
            sample_subject(self.lab.name, self.name, batch.feed),
            batch.to_bytes(),
            f"{batch.feed}/{batch.seq}",
        )

    def _wait(self, futures: list[concurrent.futures.Future[bool]]) -> None:
        for f in futures:
            try:
                f.result(timeout=self.settings.publish_retry_s + 10)
            except Exception as exc:  # the hub stayed away longer than a result is kept for
                log.warning("a result could not be delivered: %s", exc)
