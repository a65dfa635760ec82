"""What a virtual desktop lab's vCenters say is wrong with the desktops of a cell, read at once: its
ESXi hosts in maintenance mode, its datastores out of space or unreachable, and its desktops stunned
on a question (ESXi's "There is no more space for virtual disk ..."). A VDI storm reads it when its
measured phases end, so a lab fault names the host or datastore, not the sessions that could not
log off because of it.

    state = read_vdi_state(session, desktops)
    state.faults()   # ["ESXi host esx-vdi-02 entered maintenance mode (its desktops moved)", ...]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from labctl.errors import EndpointError
from labctl.lab.context import HasContext, LabContext, context_of

FULL_FREE_SHARE = 0.01  # a datastore with less than 1 % of its capacity free is full (VMs stun)


@dataclass
class VdiState:
    """The lab's state as its vCenters report it, for the cell's desktops."""

    maintenance: list[str] = field(default_factory=list)  # ESXi hosts in maintenance mode
    full: dict[str, str] = field(default_factory=dict)  # datastore -> what is wrong with it
    stunned: dict[str, str] = field(default_factory=dict)  # desktop -> the question it waits on
    unread: dict[str, str] = field(default_factory=dict)  # vCenter -> why it could not be read

    def faults(self) -> list[str]:
        """One line per thing, naming it."""
        out = [
            f"ESXi host {h} entered maintenance mode (its desktops moved to the others)"
            for h in self.maintenance
        ]
        out += [f"datastore {name} {why}" for name, why in sorted(self.full.items())]
        if self.stunned:
            names = sorted(self.stunned)
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            first = self.stunned[names[0]]
            out.append(
                f"{len(names)} desktop(s) stunned by ESXi ({', '.join(names[:5])}{more}): {first[:160]}"
            )
        return out


def read_vdi_state(owner: LabContext | HasContext, desktops: Sequence[str]) -> VdiState:
    """The hosts, datastores and desktops of ``desktops`` as their vCenters report them now. A
    vCenter that cannot be read is in ``unread`` (the recorder names it as a failing source too)."""
    ctx = context_of(owner)
    vdi = ctx.lab.vdi
    state = VdiState()
    if vdi is None or not desktops:
        return state
    hosts = {vdi.placement[d][1] for d in desktops if d in vdi.placement}
    stores = {vdi.placement[d][2] for d in desktops if d in vdi.placement}
    mine = set(desktops)
    vcenters = sorted({vdi.hosts[h].vcenter for h in hosts if h in vdi.hosts})
    for name in vcenters:
        try:
            vc = ctx.vcenter(name)
            state.maintenance += [h for h in vc.hosts_in_maintenance() if h in hosts]
            for ds in vc.datastores().values():
                if ds.name not in stores:
                    continue
                if not ds.accessible:
                    state.full[ds.name] = "is not accessible"
                elif ds.capacity_bytes > 0 and ds.free_bytes < FULL_FREE_SHARE * ds.capacity_bytes:
                    state.full[ds.name] = (
                        f"is full ({ds.free_bytes / 2**30:.1f} of {ds.capacity_bytes / 2**30:.0f} GiB free)"
                    )
            state.stunned.update({vm: q for vm, q in vc.vm_questions().items() if vm in mine})
        except (EndpointError, OSError) as exc:  # a vCenter that died mid-read can raise its socket's error
            state.unread[name] = (
                str(exc) if isinstance(exc, EndpointError) else f"{name}: {type(exc).__name__}: {exc}"
            )
    state.maintenance.sort()
    return state
