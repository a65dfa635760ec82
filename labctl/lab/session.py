"""The lab as a test plan speaks to it: a short façade over the lab context and its services.

    with LabSession(lab, clock) as s:
        report = s.power.on("first-25")                 # WoL burst, spread recorded
        ready = s.wait_ready("first-25", timeout_s=600)  # per machine: ready at t / timeout / error
        srcs = s.sources.for_plan()                      # typeperf, PVS, Redfish power, Unity, vCenter
        s.power.off("first-25")

The session builds, once, the :class:`~labctl.lab.context.LabContext` (the lab, clock, timeline,
driver settings and pooled connections) and the services over it, each handed what it needs in
its constructor (as labgrid binds drivers and OpenHTF plugs declare theirs): the site agents
(:class:`Sites`), :class:`Power`, readiness (:class:`ReadyWatch`), the :class:`PowerStrategy`,
:class:`Sources`, :class:`Health` and file copies (:class:`Files`). Nothing here decides anything:
every action is a service's, and :meth:`close` closes the context (which closes what the services
registered with it: metric sources, the link to the agents, then the driver sessions).
"""

from __future__ import annotations

import threading

from labctl.clock import LabClock
from labctl.inventory.model import Lab, Machine
from labctl.lab.context import DriverSettings, LabContext
from labctl.lab.events import Timeline
from labctl.lab.files import Files
from labctl.lab.health import Health
from labctl.lab.launchers import Launchers, open_launchers
from labctl.lab.power import Power
from labctl.lab.ready import Readiness, ReadyWatch
from labctl.lab.sites import Sites
from labctl.lab.sources import Sources
from labctl.lab.strategy import PowerStrategy
from labctl.lab.targets import Selector

__all__ = ["DriverSettings", "LabSession"]


class LabSession:
    def __init__(
        self,
        lab: Lab,
        clock: LabClock | None = None,
        *,
        timeline: Timeline | None = None,
        settings: DriverSettings | None = None,
    ):
        ctx = self.context = LabContext(lab, clock, timeline=timeline, settings=settings)
        self.sites = Sites(ctx)
        agents = self.sites if lab.agents is not None else None
        self.power = Power(ctx, agents)
        self.ready = ReadyWatch(ctx, self.power, agents)
        self.strategy = PowerStrategy(ctx, self.power, self.ready)
        self.sources = Sources(ctx)
        self.health = Health(ctx, self.power, self.ready, agents)
        self.files = Files(ctx)
        # the context's own words, as scenarios and commands have always used them
        self.lab, self.clock, self.timeline, self.settings = ctx.lab, ctx.clock, ctx.timeline, ctx.settings
        self.ssh, self.wol = ctx.ssh, ctx.wol
        self.machines, self.ssh_target, self.wol_target = ctx.machines, ctx.ssh_target, ctx.wol_target
        self.redfish, self.ipmi, self.vcenter, self.storage = ctx.redfish, ctx.ipmi, ctx.vcenter, ctx.storage
        self.state_changed, self.on_close = ctx.state_changed, ctx.on_close

    @property
    def streaming_servers(self) -> list[Machine]:
        return self.context.streaming_servers

    def wait_ready(
        self,
        selector: Selector | list[Machine],
        timeout_s: float | None = None,
        *,
        deadline: float | None = None,
        expect_boot: bool = False,
        stop: threading.Event | None = None,
        answering: bool = False,
    ) -> dict[str, Readiness]:
        """Wait until each machine is up; see :meth:`labctl.lab.ready.ReadyWatch.wait`."""
        return self.ready.wait(
            selector, timeout_s, deadline=deadline, expect_boot=expect_boot, stop=stop, answering=answering
        )

    def launchers(self, pool: str | None = None) -> Launchers:
        """The lab's session launchers (of ``pool`` when given)."""
        return open_launchers(self.context, pool, self.sites)

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> LabSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
