"""Is the lab (or a group of it) leased by another run? The check behind `labctl power`.

A run holds a lease on its lab while it measures; a power command from another shell would
change the machines under it (issue truthful-runs). The lease store is
:mod:`labctl.lab.lease` (``open_lease_store()``, ``LeaseStore.list() -> [LeaseInfo]``); this
adapter only lists leases, so it works with any store that can. Until that module is in the tree
there is no store and nothing is refused.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from labctl.errors import BadInputError
from labctl.inventory.model import Lab, Machine

LEASE_MODULE = "labctl.lab.lease"


class LeaseLike(Protocol):
    resource: str  # "lab:sim-2007", "group:sim-2007/first-25"
    holder: str  # "user@host pid 1234 (labctl run boot_storm)"
    holder_pid: int | None
    holder_host: str


class LeaseLister(Protocol):
    def list(self) -> Sequence[Any]: ...


class LabLeased(BadInputError):
    """The lab or one of the target's groups is leased by someone else (exit 2, one line)."""

    def __init__(self, lease: LeaseLike, what: str):
        self.lease = lease
        super().__init__(
            f"{lease.resource} is leased by {lease.holder}: {what} refused "
            "(add --force to act anyway, or wait for that run to end)"
        )


def open_store() -> LeaseLister | None:
    """The lab's lease store, or None while :mod:`labctl.lab.lease` is not in the tree."""
    try:
        # imported here: the lease module lands with another branch; without it nothing is leased
        lease = importlib.import_module(LEASE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name == LEASE_MODULE:
            return None
        raise
    store: LeaseLister = lease.open_lease_store()
    return store


def resources(lab: Lab, machines: Iterable[Machine]) -> set[str]:
    """The lease resources a power action on ``machines`` touches: the lab and every group of it
    holding one of them."""
    names = {m.name for m in machines}
    out = {f"lab:{lab.name}"}
    out.update(f"group:{lab.name}/{g.name}" for g in lab.groups.values() if names & set(g.members))
    return out


def _ours(lease: LeaseLike) -> bool:
    return lease.holder_pid == os.getpid() and lease.holder_host == socket.gethostname()


def check_not_leased(
    lab: Lab, machines: Iterable[Machine], what: str, *, store: LeaseLister | None = None
) -> None:
    """Raise :class:`LabLeased` naming the holder if another process leases what ``machines``
    belong to; ``store`` defaults to :func:`open_store` (none yet: nothing to check)."""
    store = store if store is not None else open_store()
    if store is None:
        return
    wanted = resources(lab, machines)
    for lease in store.list():
        if lease.resource in wanted and not _ours(lease):
            raise LabLeased(lease, what)
