"""Machines with an IPMI BMC (``power: ipmi``): Chassis Control and Chassis Status over RMCP+.

Arming logs in and reads the chassis power (a machine already where the verb would take it is
reported as such and not fired); firing sends every Chassis Control request at once, one round
trip each. Delivered = the BMC acknowledged the request (its completion code 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from labctl.drivers.ipmi import IpmiClient
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.backend import Gate, Report, arm_then_fire, outcome, read_states
from labctl.lab.power.model import STATE_OF_READING, MachineState, State

IPMI_WORKERS = 32  # BMCs logged in to at once while arming

# a verb that would not change a machine already in this state
_ALREADY = {
    PowerVerb.ON: PowerReading.ON,
    PowerVerb.GRACEFUL_OFF: PowerReading.OFF,
    PowerVerb.FORCE_OFF: PowerReading.OFF,
}


class IpmiBackend:
    kind: ClassVar[PowerKind] = PowerKind.IPMI

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        def arm(m: Machine) -> IpmiClient | None:
            client = self.ctx.ipmi(m)
            reading = client.power_reading()
            if _ALREADY.get(verb) is reading:
                report(outcome(self.ctx.clock, self.kind, m, True, f"already {reading.value}"))
                return None
            return client

        arm_then_fire(
            self.ctx.clock,
            self.kind,
            machines,
            gate,
            report,
            arm=arm,
            fire=lambda _m, client: client.act(verb),
            workers=IPMI_WORKERS,
        )

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        def read(m: Machine) -> tuple[State, str]:
            reading = self.ctx.ipmi(m).power_reading()
            return STATE_OF_READING[reading], f"chassis power {reading.value}"

        return read_states(machines, "ipmi", read, IPMI_WORKERS)
