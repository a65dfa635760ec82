"""Is the lab (or a group of it) leased by someone else? The check behind `labctl power`.

A run holds a lease on its lab while it measures; a power command from another shell would
change the machines under it. The check reads the lab's own lease store
(:func:`labctl.lab.lease.open.lease_store_for`: its hub, else ``$LABCTL_HUB``, else this machine's
files). A lease held by this process, or reserved by this user on this host (`labctl lease take`),
is the caller's own: its power actions go ahead under it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from labctl.errors import BadInputError
from labctl.inventory.model import Lab, Machine
from labctl.lab.lease.model import LeaseInfo, LeaseStore, clean_note, format_duration, this_host, this_user
from labctl.lab.lease.open import lease_store_for


class LabLeased(BadInputError):
    """The lab or one of the target's groups is leased by someone else (exit 2, one line)."""

    def __init__(self, lease: LeaseInfo, what: str):
        self.lease = lease
        left = format_duration(lease.expires_at - time.time())
        renewed = ", renewed while that run lives" if lease.holder_pid is not None else ""
        super().__init__(
            f"{lease.resource} is leased by {clean_note(lease.holder)} ({left} left{renewed}): {what} "
            "refused (add --force to act anyway, or wait for the lease to end)"
        )


def resources(lab: Lab, machines: Iterable[Machine]) -> set[str]:
    """The lease resources a power action on ``machines`` touches: the lab and every group of it
    holding one of them."""
    names = {m.name for m in machines}
    out = {f"lab:{lab.name}"}
    out.update(f"group:{lab.name}/{g.name}" for g in lab.groups.values() if names & set(g.members))
    return out


def is_ours(lease: LeaseInfo) -> bool:
    """Held by this process, or reserved by hand by this user on this host."""
    if lease.holder_pid == os.getpid() and lease.holder_host == this_host():
        return True
    return f"{this_user()}@{this_host()}" in lease.reserved_by


def check_not_leased(
    lab: Lab, machines: Iterable[Machine], what: str, *, store: LeaseStore | None = None
) -> None:
    """Raise :class:`LabLeased` naming the holder if someone else leases what ``machines`` belong
    to; ``store`` defaults to the lab's own (:func:`lease_store_for`)."""
    own = store is None
    leases = lease_store_for(lab) if store is None else store
    try:
        wanted = resources(lab, machines)
        for lease in leases.list():
            if lease.resource in wanted and not is_ours(lease):
                raise LabLeased(lease, what)
    finally:
        if own:
            leases.close()
