"""Simulated Redfish BMCs (iDRAC9), one HTTPS service per server that has a ``bmc``.

``build_endpoints(ctx)`` is what the simulator host calls; each endpoint listens on the BMC URL's
host and port from the inventory, with a certificate signed by ``<state_dir>/ca.pem``.
"""

from __future__ import annotations

from labctl.sim.endpoint import SimContext
from labctl.sim.redfish.idrac import IdracService


def build_endpoints(ctx: SimContext) -> list[IdracService]:
    """One :class:`IdracService` per server with a BMC (not started)."""
    return [IdracService(ctx, m, m.bmc) for m in ctx.lab.servers if m.bmc is not None]


__all__ = ["IdracService", "build_endpoints"]
