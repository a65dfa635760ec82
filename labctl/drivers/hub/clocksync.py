"""Clock offsets between a controller and its agents, measured the NTP way over NATS request/reply.

The controller sends ``t0`` (its clock); the agent stamps ``t1`` on arrival and ``t2`` as it
answers (its clock); the controller stamps ``t3`` on the answer (RFC 5905, section 8):

    offset = ((t1 - t0) + (t2 - t3)) / 2       the agent's clock minus the controller's
    delay  = (t3 - t0) - (t2 - t1)             the round trip, without the agent's own time

Of several exchanges the one with the shortest round trip is kept (the least queued); the offset
is then known to within half its round trip (``uncertainty_s``). Nothing is assumed about the
hosts' clocks: every fan-out measures and records what it used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

import nats.errors

from labctl.drivers.hub.protocol import Ping, Pong

PINGS: Final = 7  # exchanges per measurement
PING_TIMEOUT_S: Final = 1.0


@dataclass(frozen=True)
class ClockOffset:
    agent: str
    offset_s: float  # agent clock - controller clock
    rtt_s: float  # round trip of the exchange kept
    samples: int  # exchanges answered
    measured_wall: float  # controller clock

    @property
    def uncertainty_s(self) -> float:
        return self.rtt_s / 2

    def to_controller(self, agent_wall: float) -> float:
        return agent_wall - self.offset_s

    def to_agent(self, controller_wall: float) -> float:
        return controller_wall + self.offset_s


def answer(agent: str, data: bytes) -> bytes:
    """The agent's reply to a ping (``t1`` as early, ``t2`` as late as possible)."""
    t1 = time.time()
    ping = Ping.from_bytes(data)
    return Pong(t0=ping.t0, t1=t1, t2=time.time(), agent=agent).to_bytes()


async def measure(
    nc: Any, subject: str, agent: str, *, pings: int = PINGS, timeout_s: float = PING_TIMEOUT_S
) -> ClockOffset | None:
    """Measure ``agent``'s offset over ``subject``; None if it answered no ping."""
    best: tuple[float, float] | None = None  # (rtt, offset)
    answered = 0
    for _ in range(pings):
        t0 = time.time()
        try:
            msg = await nc.request(subject, Ping(t0=t0).to_bytes(), timeout=timeout_s)
        except (nats.errors.Error, TimeoutError, OSError):  # no answer, or the link is down
            if answered == 0:
                return None  # nobody there: do not wait out every ping
            continue
        t3 = time.time()
        pong = Pong.from_bytes(msg.data)
        answered += 1
        rtt = (t3 - t0) - (pong.t2 - pong.t1)
        offset = ((pong.t1 - t0) + (pong.t2 - t3)) / 2
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    if best is None:
        return None
    return ClockOffset(agent, best[1], max(0.0, best[0]), answered, time.time())
