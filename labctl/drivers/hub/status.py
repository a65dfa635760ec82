"""Is each agent up? Its last heartbeat (from the hub) and a clock ping (it answers now, and how far
its clock is from ours): what `labctl agents` shows and what a run checks before it starts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import nats.js.errors

from labctl.drivers.hub.clocksync import ClockOffset, measure
from labctl.drivers.hub.protocol import AGENTS_STREAM, Heartbeat, clock_subject, heartbeat_subject
from labctl.inventory.agents import Agent


@dataclass(frozen=True)
class AgentStatus:
    agent: Agent
    heartbeat: Heartbeat | None  # the last one on the hub, None: never
    clock: ClockOffset | None  # None: it did not answer a ping

    @property
    def up(self) -> bool:
        return self.clock is not None

    def heartbeat_age_s(self, now: float | None = None) -> float | None:
        """Seconds since its last heartbeat, on our clock (its stamp corrected by the measured
        offset when it answered a ping)."""
        if self.heartbeat is None:
            return None
        beat = self.heartbeat.beat_wall - (self.clock.offset_s if self.clock is not None else 0.0)
        return max(0.0, (time.time() if now is None else now) - beat)

    def down_reason(self, hub: str, lab_file: str) -> str:
        """Why the agent counts as down, and how to start it, in one line."""
        a = self.agent
        start = f"start it on its site: labctl agent --lab {lab_file} --name {a.name}"
        if self.heartbeat is None:
            return f"agent {a.name} ({a.serves_text()}) has never reported to the hub {hub}: {start}"
        hb = self.heartbeat
        age = self.heartbeat_age_s()
        return (
            f"agent {a.name} ({a.serves_text()}) is down: no answer to a clock ping, last heartbeat "
            f"{age:.0f} s ago from {hb.host} pid {hb.pid}: {start}"
        )


async def read_heartbeats(js: Any, lab: str, agents: Sequence[str]) -> dict[str, Heartbeat]:
    out: dict[str, Heartbeat] = {}

    async def one(name: str) -> None:
        try:
            msg = await js.get_msg(AGENTS_STREAM, subject=heartbeat_subject(lab, name))
        except nats.js.errors.NotFoundError:
            return
        try:
            out[name] = Heartbeat.from_bytes(msg.data or b"")
        except ValueError:
            return

    await asyncio.gather(*(one(n) for n in agents))
    return out


async def measure_all(
    nc: Any, lab: str, agents: Sequence[str], *, timeout_s: float
) -> dict[str, ClockOffset]:
    """Clock offsets of every agent that answers, measured at once."""
    got = await asyncio.gather(*(measure(nc, clock_subject(lab, a), a, timeout_s=timeout_s) for a in agents))
    return {a: off for a, off in zip(agents, got, strict=True) if off is not None}


async def statuses(
    nc: Any, js: Any, lab: str, agents: Sequence[Agent], *, ping_timeout_s: float = 1.0
) -> list[AgentStatus]:
    names = [a.name for a in agents]
    beats, clocks = await asyncio.gather(
        read_heartbeats(js, lab, names), measure_all(nc, lab, names, timeout_s=ping_timeout_s)
    )
    return [AgentStatus(a, beats.get(a.name), clocks.get(a.name)) for a in agents]
