"""Simulated Dell SC / Compellent Data Collector REST APIs, one HTTPS service per ``kind: sc`` array."""

from __future__ import annotations

from labctl.inventory.model import StorageKind
from labctl.sim.endpoint import SimContext
from labctl.sim.sc.collector import DataCollector


def build_endpoints(ctx: SimContext) -> list[DataCollector]:
    """One :class:`DataCollector` per SC array in the inventory (not started)."""
    return [DataCollector(ctx, a) for a in ctx.lab.storage.values() if a.kind is StorageKind.SC]


__all__ = ["DataCollector", "build_endpoints"]
