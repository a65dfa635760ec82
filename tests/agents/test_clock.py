"""Clock offsets are measured, used and recorded, not assumed: agents whose clocks are seconds off
get the fire instant on their own clock, and their stamps come back on the controller's.

The two agents here are stand-ins speaking the protocol on a real hub, with clocks set 5 s ahead
and 3 s behind (a real process cannot be given a wrong clock without faking the host's time)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from labctl.agents.nats_server import NatsServer
from labctl.drivers.hub.clocksync import measure
from labctl.drivers.hub.connection import HubConnection
from labctl.drivers.hub.protocol import (
    ORDERS_STREAM,
    MachineResult,
    Order,
    OrderDone,
    Ping,
    Pong,
    ResultEnvelope,
    clock_subject,
    consumer_name,
    order_subject,
    result_subject,
)
from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from labctl.lab.sites import link_for
from tests.agents.labs import clients_of, three_site_lab

pytestmark = pytest.mark.integration

SKEW_S = {"site-1": 5.0, "site-2": -3.0}
LATENCY_S = 0.002  # the stand-in "sends" this long after the instant it was given


class SkewedAgent:
    """Answers pings and power orders like an agent whose clock is ``skew_s`` off."""

    def __init__(self, conn: HubConnection, lab: str, name: str, skew_s: float):
        self.conn, self.lab, self.name, self.skew_s = conn, lab, name, skew_s
        self.orders: list[Order] = []

    def now(self) -> float:
        return time.time() + self.skew_s

    async def start(self) -> None:
        nc, js = self.conn.nc, self.conn.js
        assert js is not None

        async def pong(msg: object) -> None:
            t1 = self.now()
            ping = Ping.from_bytes(msg.data)  # type: ignore[attr-defined]
            await msg.respond(Pong(t0=ping.t0, t1=t1, t2=self.now(), agent=self.name).to_bytes())  # type: ignore[attr-defined]

        await nc.subscribe(clock_subject(self.lab, self.name), cb=pong)
        sub = await js.pull_subscribe(
            order_subject(self.lab, self.name),
            durable=consumer_name(self.lab, self.name),
            stream=ORDERS_STREAM,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.NEW, ack_policy=AckPolicy.EXPLICIT),
        )
        self.task = asyncio.create_task(self.serve(sub))

    async def serve(self, sub: object) -> None:
        while True:
            try:
                msgs = await sub.fetch(1, timeout=0.5)  # type: ignore[attr-defined]
            except Exception:
                continue
            for msg in msgs:
                order = Order.from_bytes(msg.data)
                self.orders.append(order)
                assert order.fire_at is not None
                while self.now() < order.fire_at:
                    await asyncio.sleep(0.0005)
                subject = result_subject(self.lab, self.name, order.id)
                for m in order.machines:
                    r = MachineResult(
                        order=order.id,
                        agent=self.name,
                        machine=m,
                        kind="client",
                        ok=True,
                        detail="magic packet x3",
                        backend="wol-ssh",
                        sent_wall=order.fire_at + LATENCY_S,
                    )
                    await self.conn.publish(subject, ResultEnvelope(result=r).to_bytes(), f"{order.id}/{m}")
                done = OrderDone(order=order.id, agent=self.name, received_wall=self.now(), late_s=0.0)
                await self.conn.publish(
                    subject, ResultEnvelope(done=done).to_bytes(), f"{order.id}/{self.name}/done"
                )
                await msg.ack()


@pytest.fixture
def skewed(nats_hub: NatsServer, tmp_path: Path) -> Iterator[tuple[Path, dict[str, SkewedAgent]]]:
    lab_file, _ = three_site_lab(tmp_path, nats_hub.url)
    lab = load_lab(lab_file)
    conn = HubConnection(nats_hub.url, name="skewed agents")
    conn.call(conn.ensure_streams(), "streams")
    agents = {n: SkewedAgent(conn, lab.name, n, s) for n, s in SKEW_S.items()}
    for a in agents.values():
        conn.call(a.start(), "start")
    try:
        yield lab_file, agents
    finally:
        conn.close()


def test_clock_offsets_are_measured_over_nats_within_half_a_round_trip(skewed) -> None:
    lab_file, _ = skewed
    lab = load_lab(lab_file)
    conn = HubConnection(lab.agents.hub, name="measure")  # type: ignore[union-attr]
    try:
        for name, skew in SKEW_S.items():
            off = conn.call(measure(conn.nc, clock_subject(lab.name, name), name), "measure")
            assert off is not None and off.samples > 1
            assert abs(off.offset_s - skew) <= off.uncertainty_s + 1e-3, (off, skew)
        assert (
            conn.call(measure(conn.nc, clock_subject(lab.name, "site-3"), "site-3", pings=2), "measure")
            is None
        )
    finally:
        conn.close()


def test_each_agent_gets_the_instant_on_its_own_clock_and_its_stamps_come_back_on_ours(skewed) -> None:
    lab_file, agents = skewed
    names = clients_of(1, 3) + clients_of(2, 3)
    with LabSession(load_lab(lab_file)) as s:
        report = s.power.on(names)
        assert report.ok, report.failed
        d = link_for(s).last_dispatch  # type: ignore[attr-defined]
        for name, agent in agents.items():
            (order,) = agent.orders
            off = d.agents[name].offset_s
            assert abs(off - SKEW_S[name]) < 0.05
            # the order named the instant on the agent's clock: ours plus its measured offset
            assert order.fire_at == pytest.approx(d.fire_at_wall + off, abs=1e-6)
        for n in names:  # the agents' stamps, turned back into ours: right after our instant
            sent = report.outcomes[n].sent_wall
            assert sent is not None and abs(sent - (d.fire_at_wall + LATENCY_S)) < 0.05, n
        # what the run records: each offset, and a spread across the agents near zero, not 8 s
        (event,) = s.timeline.events("agent.dispatch")
        assert event.detail["agents"]["site-1"]["clock_offset_s"] == pytest.approx(5.0, abs=0.05)
        assert event.detail["agents"]["site-2"]["clock_offset_s"] == pytest.approx(-3.0, abs=0.05)
        assert event.detail["cross_agent_spread_wall_s"] < 0.05
        assert len(s.timeline.events("agent.clock")) >= 2
