"""Machines served by a site agent: their power goes to that agent, which runs the machine's own
backend (Wake-on-LAN on its segment, Redfish or IPMI to a BMC only it reaches, SSH) where the wire
is, at the instant the controller chose for every agent (a timed fan-out).

The registry picks this backend for every machine the inventory's ``agents:`` section puts under
an agent (``Machine.agent``; see :attr:`labctl.inventory.model.Machine.power_kind`). It is handed
the lab's link to its agents (:class:`AgentPower`, which :class:`labctl.lab.sites.Sites` is) when
the session builds the power service. The outcomes come back per machine with the agent's send and
delivery stamps turned into this controller's clock by the offset measured just before the
fan-out; ``backend`` reads ``wol-ssh@site-a``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from labctl.drivers.power_verbs import PowerVerb
from labctl.errors import BadInputError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.backend import Gate, Report
from labctl.lab.power.model import MachineState


class AgentPower(Protocol):
    """What the agent backend needs of the link to the site agents."""

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        """A timed fan-out: every agent fires at one instant (after ``gate``); one report per machine."""

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]: ...


class AgentBackend:
    kind: ClassVar[PowerKind] = PowerKind.AGENT

    def __init__(self, ctx: LabContext, agents: AgentPower | None = None):
        self.ctx = ctx
        self.agents = agents

    def _link(self, machines: Sequence[Machine]) -> AgentPower:
        if self.agents is None:
            first = machines[0].name if machines else "?"
            raise BadInputError(
                f"{first}: served by a site agent, but this session of lab {self.ctx.lab.name} "
                "was built without the link to its agents"
            )
        return self.agents

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        self._link(machines).act(verb, machines, gate, report)

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        return self._link(machines).states(machines)
