"""Servers with a Redfish BMC: ``ComputerSystem.Reset`` (the ResetType is the driver's choice).

Arming opens the BMC session and reads the reset action (which ResetTypes the system allows);
firing sends every reset at once. Delivered = the BMC acknowledged the reset (its 2xx answer):
the request is then the BMC's, which carries it out at once. State = ``PowerState``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.redfish import RedfishClient, ResetPlan, power_reading
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.backend import Gate, Report, arm_then_fire, read_states
from labctl.lab.power.model import STATE_OF_READING, MachineState, State


class RedfishBackend:
    kind: ClassVar[PowerKind] = PowerKind.REDFISH

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        def arm(m: Machine) -> tuple[RedfishClient, ResetPlan]:
            rf = self.ctx.redfish(m)
            return rf, rf.plan_reset(verb)

        def fire(_m: Machine, armed: tuple[RedfishClient, ResetPlan]) -> str:
            rf, plan = armed
            return rf.fire(plan)

        arm_then_fire(
            self.ctx.clock,
            self.kind,
            machines,
            gate,
            report,
            arm=arm,
            fire=fire,
            workers=self.ctx.settings.redfish_workers,
        )

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        def read(m: Machine) -> tuple[State, str]:
            ps = self.ctx.redfish(m).power_state()
            return STATE_OF_READING[power_reading(ps)], f"PowerState {ps}"

        return read_states(machines, "redfish", read, self.ctx.settings.redfish_workers)
