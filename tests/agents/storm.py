"""A boot storm scripted on the lab layer alone (what the boot_storm scenario does, minus the plan):
require the agents, wake the group in one burst, wait until every client is ready, keep the
window, restore (every client off), and the per-client outcomes the run would record.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from labctl.inventory.model import Lab
from labctl.lab.power.model import PowerReport
from labctl.lab.ready import Readiness
from labctl.lab.session import LabSession
from labctl.lab.sites import link_for, require_agents
from labctl.records.run_record import ClientOutcome


@dataclass
class Storm:
    on: PowerReport
    ready: dict[str, Readiness]
    off: PowerReport
    clients: list[ClientOutcome]
    dispatch: object | None  # labctl.lab.sites.link.Dispatch of the wake, when agents carried it

    def outcome(self, name: str) -> ClientOutcome:
        return next(c for c in self.clients if c.name == name)


def storm(
    session: LabSession,
    names: list[str],
    *,
    ready_timeout_s: float = 600.0,
    window_s: float = 0.0,
    during_ready: threading.Event | None = None,
    excluded: dict[str, str] | None = None,
) -> Storm:
    """``during_ready`` is set once the wake is sent and the wait for readiness begins (a test
    kills an agent then)."""
    lab: Lab = session.lab
    require_agents(lab, [lab.machine(n) for n in names])
    on = session.power.on(names)
    dispatch = link_for(session).last_dispatch if lab.agents is not None else None  # type: ignore[attr-defined]
    if during_ready is not None:
        during_ready.set()
    woken = [n for n in names if on.outcomes[n].ok]
    ready = session.wait_ready(woken, timeout_s=ready_timeout_s) if woken else {}
    if window_s:
        session.clock.sleep(window_s)
    off = session.power.off(names)  # restore: every client back to S5
    clients = []
    for n in names:
        o = on.outcomes[n]
        r = ready.get(n)
        if not o.ok:
            clients.append(ClientOutcome(name=n, outcome="error", sent_ts_s=o.sent_lab, detail=o.detail))
            continue
        assert r is not None
        clients.append(
            ClientOutcome(
                name=n,
                outcome=r.state,
                boot_time_s=r.boot_time_s,
                retries=r.retries,
                time_to_ready_s=(r.at - o.sent_lab) if r.at is not None and o.sent_lab is not None else None,
                sent_ts_s=o.sent_lab,
                detail=r.detail,
            )
        )
    for n, why in (excluded or {}).items():
        clients.append(ClientOutcome(name=n, outcome="excluded", detail=why))
    return Storm(on, ready, off, clients, dispatch)
