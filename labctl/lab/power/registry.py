"""Which backend carries which machines: one line per :class:`~labctl.inventory.model.PowerKind`.

A machine's backend is its inventory ``power:`` setting, else its kind's default (client:
wol-ssh, server: redfish, vm: vcenter), as labgrid picks a power driver by the model it is bound
to. Adding a backend (a PDU): a module in this package implementing
:class:`~labctl.lab.power.backend.PowerBackend`, its name in ``PowerKind``, and one line here.
"""

from __future__ import annotations

from collections.abc import Iterable

from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.agent import AgentBackend, AgentPower
from labctl.lab.power.backend import PowerBackend
from labctl.lab.power.clients import WolSshBackend
from labctl.lab.power.ipmi import IpmiBackend
from labctl.lab.power.redfish import RedfishBackend
from labctl.lab.power.vcenter import VCenterBackend

BACKENDS: dict[PowerKind, type[PowerBackend]] = {
    PowerKind.WOL_SSH: WolSshBackend,
    PowerKind.REDFISH: RedfishBackend,
    PowerKind.VCENTER: VCenterBackend,
    PowerKind.IPMI: IpmiBackend,
    PowerKind.AGENT: AgentBackend,  # a site agent serves the machine (inventory agents:)
}


def make_backend(kind: PowerKind, ctx: LabContext, agents: AgentPower | None) -> PowerBackend:
    """The backend for ``kind`` over the lab context; the agent backend also gets the link to the
    site agents (None for a lab without them)."""
    if kind is PowerKind.AGENT:
        return AgentBackend(ctx, agents)
    return BACKENDS[kind](ctx)


def by_backend(machines: Iterable[Machine]) -> dict[PowerKind, list[Machine]]:
    """Machines grouped by the backend that powers them, in first-seen order."""
    out: dict[PowerKind, list[Machine]] = {}
    for m in machines:
        out.setdefault(m.power_kind, []).append(m)
    return out
