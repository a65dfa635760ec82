"""Servers with a Redfish BMC: ``ComputerSystem.Reset`` (the ResetType is the driver's choice).

Arming opens the BMC session and reads the reset action (which ResetTypes the system allows);
firing sends every reset at once. Delivered = the BMC acknowledged the reset (its 2xx answer):
the request is then the BMC's, which carries it out at once. State = ``PowerState``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.redfish import RedfishClient, ResetPlan, power_reading
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.power.backend import Gate, Report, in_pool, outcome, together
from labctl.lab.power.model import STATE_OF_READING, MachineState, State

if TYPE_CHECKING:
    from labctl.lab.session import LabSession


class RedfishBackend:
    kind: ClassVar[PowerKind] = PowerKind.REDFISH

    def __init__(self, session: LabSession):
        self.s = session

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        clock = self.s.clock
        armed: list[tuple[Machine, RedfishClient, ResetPlan]] = []
        lock = threading.Lock()

        def arm(m: Machine) -> None:
            try:
                rf = self.s.redfish(m)
                plan = rf.plan_reset(verb)
            except EndpointError as exc:
                report(outcome(clock, self.kind, m, False, exc.reason, exc.fix))
                return
            with lock:
                armed.append((m, rf, plan))

        try:
            in_pool(arm, machines, self.s.settings.redfish_workers, "redfish-arm")
        except BaseException:
            gate.leave(self.kind.value)  # arming crashed: do not hold the other backends
            raise
        gate.pass_(self.kind.value)

        def fire(item: tuple[Machine, RedfishClient, ResetPlan]) -> None:
            m, rf, plan = item
            sent = time.time()
            try:
                detail = rf.fire(plan)
            except EndpointError as exc:
                report(outcome(clock, self.kind, m, False, exc.reason, exc.fix, sent_wall=sent))
                return
            report(outcome(clock, self.kind, m, True, detail, sent_wall=sent, delivered_wall=time.time()))

        together(fire, armed, "redfish")

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        out: dict[str, MachineState] = {}

        def one(m: Machine) -> None:
            try:
                ps = self.s.redfish(m).power_state()
            except EndpointError as exc:
                out[m.name] = MachineState(m.name, m.kind.value, State.UNKNOWN, str(exc), "redfish")
                return
            st = STATE_OF_READING[power_reading(ps)]
            out[m.name] = MachineState(m.name, m.kind.value, st, f"PowerState {ps}", "redfish")

        in_pool(one, machines, self.s.settings.redfish_workers, "redfish-state")
        return out
