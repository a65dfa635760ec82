"""Scale-out and write-cache cells: the VDI storm on part of a lab, seen the way each comparison needs.

- :class:`ScaleOut` (2012 paper 5.6, table 5): the storm on the desktops whose disks live on the
  first ``arrays`` arrays of the inventory. In the paper's two-array lab the first array's desktops
  sit on half the hosts (placement is round-robin over hosts and datastores), so one array and two
  are the paper's 8-host/630 and 16-host/1,270 configurations out of one lab. The linear-scaling
  check compares the cells' steady-state IOPS per desktop (:func:`scaling`).
- :class:`WriteCacheModes` (the 2014 post): the storm on one pool; its write cache mode is the
  pool's (``provisioning.write_cache`` in the inventory: one pool per mode). Host IOPS per user are
  the pool's datastores' IOPS in steady state over its users (what the hosts issue to disk: a RAM
  cache absorbs the rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labctl.inventory.model import Lab
from labctl.lab.session import LabSession
from labctl.records.run_record import PhaseFigures
from labctl.scenarios import vdi_derive as D
from labctl.scenarios import vdi_metrics as M
from labctl.scenarios.base import CellContext
from labctl.scenarios.vdi_storm import VdiStorm, VdiStormResult, VdiStormSettings


class ScaleOut(VdiStorm):
    """The storm on the first ``arrays`` arrays. ``baseline_per_desktop``: the smallest cell's steady
    IOPS per desktop; each array's ``scaling_ratio`` is its own against it (the smallest cell is its
    own baseline: 1.0), for the near-linear criterion. Without one the ratio is left out."""

    name = "scale_out"
    title = "VDI scale-out"

    def __init__(
        self,
        arrays: int,
        settings: VdiStormSettings | None = None,
        prebooted_pct: float = 100.0,
        *,
        baseline_per_desktop: float | None = None,
        smallest: bool = False,
    ):
        super().__init__(prebooted_pct, settings, arrays=arrays, cell_params={"array_count": arrays})
        self.baseline_per_desktop = baseline_per_desktop
        self.smallest = smallest

    def run(self, lab: LabSession, ctx: CellContext) -> VdiStormResult:
        result = super().run(lab, ctx)
        whole = result.figure("steady")
        base = whole.iops_per_desktop if self.smallest and whole is not None else self.baseline_per_desktop
        for a in result.arrays:
            c = result.clients.get(a)
            if c is None:
                continue
            if base and c.steady_iops_per_desktop is not None:
                c = c.model_copy(update={"scaling_ratio": c.steady_iops_per_desktop / base})
            elif not base:
                c = c.model_copy(update={"detail": c.detail + "; no smaller cell ran to scale against"})
            result.clients[a] = c
        return result


@dataclass(frozen=True)
class Scaling:
    """One cell against the smallest: how near linear the steady state grew."""

    arrays: int
    desktops: int
    steady_iops: float
    per_desktop: float
    expected_iops: float  # the smallest cell's per-desktop IOPS x this cell's desktops
    ratio: float  # measured / expected (1.0: linear)


def scaling(cells: list[tuple[int, int, float]]) -> list[Scaling]:
    """``(arrays, desktops, steady IOPS)`` per cell -> each against the smallest (linear = 1.0)."""
    cells = sorted(cells)
    _, n0, i0 = cells[0]
    per0 = i0 / n0 if n0 else 0.0
    return [
        Scaling(a, n, i, i / n if n else 0.0, per0 * n, (i / (per0 * n)) if per0 * n > 0 else 0.0)
        for a, n, i in cells
    ]


class WriteCacheModes(VdiStorm):
    name = "write_cache_modes"
    title = "PVS write-cache modes"

    def __init__(self, pool: str, settings: VdiStormSettings | None = None):
        st = (settings or VdiStormSettings()).model_copy(update={"pool": pool})
        super().__init__(100.0, st, cell_params={"pool": pool})
        self.pool = pool

    def run(self, lab: LabSession, ctx: CellContext) -> VdiStormResult:
        result = super().run(lab, ctx)
        fig = self._host_iops(lab, ctx, result)
        if fig is not None:
            result.figures.append(fig)
        return result

    def _host_iops(self, lab: LabSession, ctx: CellContext, result: VdiStormResult) -> PhaseFigures | None:
        vdi = lab.lab.vdi
        steady = next((p for p in result.phases if p.name == "steady" and p.end_ts_s is not None), None)
        if vdi is None or steady is None or steady.end_ts_s is None:
            return None
        stores = sorted({vdi.placement[d][2] for d in result.desktops})
        parts = []
        for ds in stores:
            d = vdi.datastores[ds]
            kind = lab.lab.storage[d.array].kind.value
            found = {}
            for metric in (M.READ_IOPS, M.WRITE_IOPS, M.READ_MB_S, M.WRITE_MB_S, M.LATENCY_MS):
                got = ctx.series(source=kind, entity=f"{d.array}/{d.volume}", metric=metric)
                found[metric] = got[0] if got else None
            s = D.array_series(found)
            if s.ts:
                parts.append(s)
        if not parts:
            return None
        total = D.summed(parts, self.settings.poll_interval_s) if len(parts) > 1 else parts[0]
        t0 = min(steady.start_ts_s + self.settings.steady_settle_s, steady.end_ts_s)
        users = result.users or len(result.desktops)
        return D.figures(total, "steady", (t0, steady.end_ts_s), users, array=f"pool:{self.pool}")


def pool_mode(lab: Lab, pool: str) -> dict[str, Any]:
    """The pool's write-cache mode and RAM cache as the inventory gives them (for the report)."""
    p = lab.vdi.pools[pool] if lab.vdi is not None else None
    if p is None:
        return {}
    prov = p.provisioning
    mode = prov.write_cache.value if prov.write_cache is not None else prov.kind.value
    return {"write_cache": mode, "ram_cache_mb": prov.ram_cache_mb, "workload": p.workload}
