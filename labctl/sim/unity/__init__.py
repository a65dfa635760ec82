"""Simulated Dell EMC Unity management REST APIs, one HTTPS service per ``kind: unity`` array.

``build_endpoints(ctx)`` is what the simulator host calls; each endpoint listens on the array URL's
host and port from the inventory, with a certificate signed by ``<state_dir>/ca.pem``.
"""

from __future__ import annotations

from labctl.inventory.model import StorageKind
from labctl.sim.endpoint import SimContext
from labctl.sim.unity.array import UnityArray


def build_endpoints(ctx: SimContext) -> list[UnityArray]:
    """One :class:`UnityArray` per Unity array in the inventory (not started)."""
    return [UnityArray(ctx, a) for a in ctx.lab.storage.values() if a.kind is StorageKind.UNITY]


__all__ = ["UnityArray", "build_endpoints"]
