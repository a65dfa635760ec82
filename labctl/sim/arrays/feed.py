"""The lab twin's counters of one storage array, whatever twin the simulator runs.

The VDI twin (:class:`~labctl.sim.twin.interface.VdiTwin`) keeps per-volume counters with response
times and queue integrals, back-end counters per tier and each controller's state; a lab twin
without virtual desktops (the placeholder) keeps only Unity-style LUN counters per storage processor.
:class:`ArrayFeed` answers the VDI twin's records in both cases, so every array simulator (Unity,
PowerStore, SC, EqualLogic) serves the same numbers for the same twin state, each in its own API's
shape and units.
"""

from __future__ import annotations

from collections import defaultdict

from labctl.inventory.model import StorageArray
from labctl.sim.endpoint import SimContext
from labctl.sim.twin.interface import (
    ArrayControllerCounters,
    ArrayTierCounters,
    ArrayVolumeCounters,
    VdiTwin,
)

# Controller names as each kind reports them, when the inventory describes no hardware for the array.
DEFAULT_CONTROLLERS: dict[str, tuple[str, str]] = {
    "unity": ("spa", "spb"),
    "powerstore": ("node_a", "node_b"),
    "sc": ("ctrl_a", "ctrl_b"),
    "equallogic": ("cm0", "cm1"),
}


class ArrayFeed:
    """Cumulative counters of one array from the twin, as :mod:`labctl.sim.twin.interface` records."""

    def __init__(self, ctx: SimContext, array: StorageArray, twin_array: str | None = None):
        self.ctx = ctx
        self.array = array
        # the twin's name for the array (a test may serve one twin array through several kinds)
        self.twin_array = twin_array or array.name
        vdi = ctx.lab.vdi
        hw = vdi.arrays.get(self.twin_array) if vdi is not None else None
        self.hardware = hw
        self.controller_names: tuple[str, ...] = (
            hw.controllers if hw is not None else DEFAULT_CONTROLLERS.get(array.kind.value, ("a", "b"))
        )

    def _vdi(self) -> VdiTwin | None:
        twin = self.ctx.twin
        return twin if isinstance(twin, VdiTwin) else None

    def now(self) -> float:
        return self.ctx.clock.now()

    def volumes(self) -> tuple[ArrayVolumeCounters, ...]:
        """Every volume of the array (the inventory's LUN list), cumulative, at the twin's time."""
        vdi = self._vdi()
        got: tuple[ArrayVolumeCounters, ...] = ()
        if vdi is not None:
            try:
                got = vdi.array_volume_counters(self.twin_array)
            except KeyError:
                got = ()  # no desktop uses this array: fall back to the LUN counters
        if not got:
            got = self._from_lun_counters()
        by_name = {v.volume: v for v in got}
        t = got[0].lab_time_s if got else self.now()
        owner = self.controller_names[0]
        out = [by_name.get(name) or _idle(self.array.name, name, owner, t) for name in self.array.luns]
        out += [v for v in got if v.volume not in set(self.array.luns)]
        return tuple(out)

    def _from_lun_counters(self) -> tuple[ArrayVolumeCounters, ...]:
        """Unity-style per-SP LUN counters summed into volume counters (one busy-time sum: the
        read and write shares of it follow the I/O counts; the owner is the SP that counted most)."""
        try:
            luns = self.ctx.twin.lun_counters(self.twin_array)
        except KeyError:
            return ()
        t = self.now()
        acc: dict[str, list[float]] = defaultdict(lambda: [0.0] * 5)
        best: dict[str, tuple[float, str]] = {}
        for c in luns:
            a = acc[c.lun]
            a[0] += c.reads
            a[1] += c.writes
            a[2] += c.read_blocks * 512.0
            a[3] += c.write_blocks * 512.0
            a[4] += c.total_io_time_us / 1e6
            if c.reads + c.writes > best.get(c.lun, (-1.0, ""))[0]:
                best[c.lun] = (c.reads + c.writes, c.sp)
        names = dict(zip(DEFAULT_CONTROLLERS["unity"], self.controller_names, strict=False))
        out = []
        for lun, (r, w, rb, wb, busy_s) in acc.items():
            ios = r + w
            rs = busy_s * r / ios if ios > 0 else 0.0
            out.append(
                ArrayVolumeCounters(
                    array=self.array.name,
                    volume=lun,
                    controller=names.get(best[lun][1], best[lun][1]),
                    lab_time_s=t,
                    reads=r,
                    writes=w,
                    bytes_read=rb,
                    bytes_written=wb,
                    read_response_sum_s=rs,
                    write_response_sum_s=busy_s - rs,
                    queue_integral=busy_s,
                )
            )
        return tuple(out)

    def tiers(self) -> tuple[ArrayTierCounters, ...]:
        vdi = self._vdi()
        if vdi is None:
            return ()
        try:
            return vdi.array_tier_counters(self.twin_array)
        except KeyError:
            return ()

    def controllers(self) -> tuple[ArrayControllerCounters, ...]:
        """Each controller's state; without a VDI twin every controller is up and idle."""
        vdi = self._vdi()
        if vdi is not None:
            try:
                got = vdi.array_controller_counters(self.twin_array)
            except KeyError:
                got = ()
            if got:
                return got
        t = self.now()
        return tuple(
            ArrayControllerCounters(self.array.name, c, "active", t, 0.0, 0.0, 0.0, 0.0, False)
            for c in self.controller_names
        )


def _idle(array: str, volume: str, controller: str, t: float) -> ArrayVolumeCounters:
    return ArrayVolumeCounters(array, volume, controller, t, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
