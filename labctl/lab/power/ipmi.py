"""Machines with an IPMI BMC (``power: ipmi``): Chassis Control and Chassis Status over RMCP+.

Arming logs in and reads the chassis power (a machine already where the verb would take it is
reported as such and not fired); firing sends every Chassis Control request at once, one round
trip each. Delivered = the BMC acknowledged the request (its completion code 0).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from labctl.drivers.ipmi import IpmiClient
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.power.backend import Gate, Report, in_pool, outcome, together
from labctl.lab.power.model import STATE_OF_READING, MachineState, State

if TYPE_CHECKING:
    from labctl.lab.session import LabSession

IPMI_WORKERS = 32  # BMCs logged in to at once while arming

# a verb that would not change a machine already in this state
_ALREADY = {
    PowerVerb.ON: PowerReading.ON,
    PowerVerb.GRACEFUL_OFF: PowerReading.OFF,
    PowerVerb.FORCE_OFF: PowerReading.OFF,
}


class IpmiBackend:
    kind: ClassVar[PowerKind] = PowerKind.IPMI

    def __init__(self, session: LabSession):
        self.s = session

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        clock = self.s.clock
        armed: list[tuple[Machine, IpmiClient]] = []
        lock = threading.Lock()

        def arm(m: Machine) -> None:
            try:
                client = self.s.ipmi(m)
                reading = client.power_reading()
            except EndpointError as exc:
                report(outcome(clock, self.kind, m, False, exc.reason, exc.fix))
                return
            if _ALREADY.get(verb) is reading:
                report(outcome(clock, self.kind, m, True, f"already {reading.value}"))
                return
            with lock:
                armed.append((m, client))

        try:
            in_pool(arm, machines, IPMI_WORKERS, "ipmi-arm")
        except BaseException:
            gate.leave(self.kind.value)  # arming crashed: do not hold the other backends
            raise
        gate.pass_(self.kind.value)

        def fire(item: tuple[Machine, IpmiClient]) -> None:
            m, client = item
            sent = time.time()
            try:
                detail = client.act(verb)
            except EndpointError as exc:
                report(outcome(clock, self.kind, m, False, exc.reason, exc.fix, sent_wall=sent))
                return
            report(outcome(clock, self.kind, m, True, detail, sent_wall=sent, delivered_wall=time.time()))

        together(fire, armed, "ipmi")

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        out: dict[str, MachineState] = {}

        def one(m: Machine) -> None:
            try:
                reading = self.s.ipmi(m).power_reading()
            except EndpointError as exc:
                out[m.name] = MachineState(m.name, m.kind.value, State.UNKNOWN, str(exc), "ipmi")
                return
            out[m.name] = MachineState(
                m.name, m.kind.value, STATE_OF_READING[reading], f"chassis power {reading.value}", "ipmi"
            )

        in_pool(one, machines, IPMI_WORKERS, "ipmi-state")
        return out
