"""Machines served by a site agent: their power goes to that agent, which runs the machine's own
backend (Wake-on-LAN on its segment, Redfish or IPMI to a BMC only it reaches, SSH) where the wire
is, at the instant the controller chose for every agent (a timed fan-out).

The registry picks this backend for every machine the inventory's ``agents:`` section puts under
an agent (``Machine.agent``; see :attr:`labctl.inventory.model.Machine.power_kind`). The outcomes
come back per machine with the agent's send and delivery stamps turned into this controller's
clock by the offset measured just before the fan-out; ``backend`` reads ``wol-ssh@site-a``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from labctl.drivers.power_verbs import PowerVerb
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.power.backend import Gate, Report
from labctl.lab.power.model import MachineState

if TYPE_CHECKING:
    from labctl.lab.session import LabSession


class AgentBackend:
    kind: ClassVar[PowerKind] = PowerKind.AGENT

    def __init__(self, session: LabSession):
        self.s = session

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        from labctl.lab.sites import link_for  # sites imports this package's backend module

        link_for(self.s).act(verb, machines, gate, report)

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        from labctl.lab.sites import link_for  # as above

        return link_for(self.s).states(machines)
