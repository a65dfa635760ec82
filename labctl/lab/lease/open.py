"""The one way to open the lease store: the inventory's hub, else ``$LABCTL_HUB``, else the file store.

Every user of leases (the pytest plugin for a run, `labctl nightly`, `labctl power`, `labctl lease`)
calls :func:`lease_store_for` with the lab, or :func:`open_lease_store` when there is no lab (a
resource named by hand), so a lab whose inventory names a site-agent hub is leased on that hub
whichever command looks, and a lab without one on this machine's file store.
"""

from __future__ import annotations

import os
from pathlib import Path

from labctl.inventory.model import Lab
from labctl.lab.lease.file import FileLeaseStore
from labctl.lab.lease.model import HUB_DOMAIN_VAR, HUB_VAR, LEASE_BUCKET_VAR, LeaseStore


def open_lease_store(
    hub: str | None = None, *, hub_domain: str | None = None, lease_dir: Path | None = None
) -> LeaseStore:
    """The lease store at ``hub`` (else ``$LABCTL_HUB``) when one is given, else the single-machine
    file store (``lease_dir``, ``$LABCTL_LEASE_DIR``, or ``.labctl/leases``). ``hub_domain`` (or
    ``$LABCTL_HUB_DOMAIN``): the hub's JetStream domain, when ``hub`` is a leaf node (a site's
    server) rather than the hub itself. ``$LABCTL_LEASE_BUCKET`` names another bucket than
    ``labctl-leases`` (two lab fleets on one hub, tests)."""
    hub = hub or os.environ.get(HUB_VAR) or None
    if hub:
        # imported here: nats-py is loaded only by a process that leases on a hub
        from labctl.lab.lease.hub import DEFAULT_BUCKET, NatsLeaseStore

        return NatsLeaseStore(
            hub,
            bucket=os.environ.get(LEASE_BUCKET_VAR) or DEFAULT_BUCKET,
            js_domain=hub_domain or os.environ.get(HUB_DOMAIN_VAR) or None,
        )
    return FileLeaseStore(lease_dir)


def lease_store_for(lab: Lab, *, lease_dir: Path | None = None) -> LeaseStore:
    """The store that holds ``lab``'s leases: its inventory's site-agent hub (``agents.hub``, with
    its JetStream domain), else ``$LABCTL_HUB``, else this machine's file store."""
    agents = lab.agents
    if agents is not None:
        return open_lease_store(agents.hub, hub_domain=agents.hub_domain, lease_dir=lease_dir)
    return open_lease_store(lease_dir=lease_dir)
