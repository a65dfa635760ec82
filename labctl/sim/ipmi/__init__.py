"""Simulated IPMI BMCs, one UDP service per machine whose inventory entry has ``ipmi:``.

``build_endpoints(ctx)`` is what the simulator host calls; each BMC listens on the ``ipmi:``
endpoint's host and port and answers from the lab twin.
"""

from __future__ import annotations

from labctl.sim.endpoint import SimContext
from labctl.sim.ipmi.bmc import SimBmc


def build_endpoints(ctx: SimContext) -> list[SimBmc]:
    """One :class:`SimBmc` per machine with an ``ipmi:`` endpoint (not started)."""
    return [SimBmc(ctx, m, m.ipmi) for m in ctx.lab.machines.values() if m.ipmi is not None]


__all__ = ["SimBmc", "build_endpoints"]
