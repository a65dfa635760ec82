"""Simulated Dell PowerStore management REST APIs, one HTTPS service per ``kind: powerstore`` array."""

from __future__ import annotations

from labctl.inventory.model import StorageKind
from labctl.sim.endpoint import SimContext
from labctl.sim.powerstore.array import PowerStoreArray


def build_endpoints(ctx: SimContext) -> list[PowerStoreArray]:
    """One :class:`PowerStoreArray` per PowerStore array in the inventory (not started)."""
    return [PowerStoreArray(ctx, a) for a in ctx.lab.storage.values() if a.kind is StorageKind.POWERSTORE]


__all__ = ["PowerStoreArray", "build_endpoints"]
