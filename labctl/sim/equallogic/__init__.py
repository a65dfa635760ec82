"""Simulated Dell EqualLogic PS members: SNMP agents (v2c or v3) answering the EqualLogic MIBs as
SAN HQ polls them, one per ``kind: equallogic`` array."""

from __future__ import annotations

from labctl.inventory.model import StorageKind
from labctl.sim.endpoint import SimContext
from labctl.sim.equallogic.agent import EqualLogicAgent


def build_endpoints(ctx: SimContext) -> list[EqualLogicAgent]:
    """One :class:`EqualLogicAgent` per EqualLogic array in the inventory (not started)."""
    return [EqualLogicAgent(ctx, a) for a in ctx.lab.storage.values() if a.kind is StorageKind.EQUALLOGIC]


__all__ = ["EqualLogicAgent", "build_endpoints"]
