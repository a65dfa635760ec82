"""The names a criteria file may use in its limits and entity patterns, taken from the inventory.

Variables (for the lab's configuration, e.g. standalone or HA):

    write_cache_volume  "pvs-01:cache"   vdisk_volume "pvs-01:system"   (server:volume)
    write_cache_disk    "pvs-01/D:"      vdisk_disk   "pvs-01/C:"       (typeperf entity names)
    streaming_server    "pvs-01"         (the first streaming server)
    streaming_servers   1                (how many)
    nic_count 2   nic_speed_gbps 1.0   ram_mb 4096   cpu_cores 2      (of the streaming server)

Functions: ``spindles(volume)`` (disks in the RAID set), ``nics(server)``, ``nic_bps(server)``
(one NIC's speed in bit/s), ``ram_mb(server)``, ``cores(server)``. A plan adds its own variables
(``group_size``, ``clients``, ...) with :meth:`Names.with_vars`; before the cell runs (to check a
criteria file at collection) it declares them with :meth:`Names.declare`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labctl.criteria.expr import Value
from labctl.inventory.model import Lab, Machine, Volume


@dataclass(frozen=True)
class Names:
    """What a criteria file's patterns and limits may name: variables with their values,
    functions, and variables *declared* whose value comes with each cell (``group_size``)."""

    variables: dict[str, Value] = field(default_factory=dict)
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()

    def with_vars(self, extra: Mapping[str, Value] | None = None, **more: Value) -> Names:
        return Names({**self.variables, **(extra or {}), **more}, dict(self.functions), self.declared)

    def declare(self, *names: str) -> Names:
        """These variables will have values when a cell is judged (checked by name until then)."""
        return Names(dict(self.variables), dict(self.functions), self.declared | frozenset(names))


def _hardware(lab: Lab, server: str) -> Machine:
    m = lab.machine(server)
    if m.server_hardware is None:
        raise ValueError(f"{server} has no hardware section in {lab.source_file}")
    return m


def _volume(lab: Lab, ref: str) -> tuple[Machine, Volume]:
    server, sep, name = ref.partition(":")
    if not sep:
        raise ValueError(f"volume {ref!r} should be server:volume, e.g. pvs-01:cache")
    m = _hardware(lab, server)
    assert m.server_hardware is not None
    for v in m.server_hardware.volumes:
        if v.name == name:
            return m, v
    names = ", ".join(v.name for v in m.server_hardware.volumes) or "none"
    raise ValueError(f"{server} has no volume {name!r} (it has: {names})")


def _disk_entity(lab: Lab, ref: str) -> str:
    m, v = _volume(lab, ref)
    return f"{m.name}/{v.drive}" if v.drive else m.name


def lab_names(lab: Lab) -> Names:
    """Variables and functions for criteria limits from ``lab`` (in its chosen configuration)."""
    funcs: dict[str, Callable[..., Any]] = {
        "spindles": lambda ref: _volume(lab, str(ref))[1].disks,
        "nics": lambda s: _hardware(lab, str(s)).server_hardware.nics.count,  # type: ignore[union-attr]
        "nic_bps": lambda s: _hardware(lab, str(s)).server_hardware.nics.speed_gbps * 1e9,  # type: ignore[union-attr]
        "ram_mb": lambda s: _hardware(lab, str(s)).server_hardware.ram_gb * 1024,  # type: ignore[union-attr]
        "cores": lambda s: (lambda c: c.cores * c.sockets)(_hardware(lab, str(s)).server_hardware.cpu),  # type: ignore[union-attr]
    }
    variables: dict[str, Value] = {"clients_in_lab": len(lab.clients)}
    cfg = lab.configuration
    if cfg is not None:
        wc = f"{cfg.write_cache_server}:{cfg.write_cache_volume}"
        vd = f"{cfg.vdisk_server}:{cfg.vdisk_volume}"
        variables.update(
            write_cache_volume=wc,
            vdisk_volume=vd,
            streaming_servers=len(cfg.streaming_servers),
            configuration=cfg.name,
        )
        try:
            variables["write_cache_disk"] = _disk_entity(lab, wc)
            variables["vdisk_disk"] = _disk_entity(lab, vd)
        except (ValueError, LookupError):
            pass
        if cfg.streaming_servers:
            first = cfg.streaming_servers[0]
            variables["streaming_server"] = first
            hw = lab.machines[first].server_hardware if first in lab.machines else None
            if hw is not None:
                variables.update(
                    nic_count=hw.nics.count,
                    nic_speed_gbps=hw.nics.speed_gbps,
                    ram_mb=hw.ram_gb * 1024,
                    cpu_cores=hw.cpu.cores * hw.cpu.sockets,
                )
    return Names(variables, funcs)
