"""A desktop's life in phases, and what each phase asks of storage, CPU, memory and network.

A desktop is OFF, POWERING_ON (VM start, BIOS), in BOOT (to VMware Tools running and an IP),
SETTLE (services and the broker agent; the boot storm's I/O continues), IDLE (booted, no session),
LOGIN, WORK (the workload loop; the first loop launches applications for the first time), LOGOFF,
or SHUTDOWN. The I/O phases are closed loops: :class:`Templates` gives, per pool and phase, the
guest I/O (counts and sizes by kind), local time, CPU, network and memory, from the twin parameters
(:mod:`labctl.inventory.vdi_params`); the model turns them into rates given the response times.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from labctl.inventory.vdi import DesktopPool, EsxiHost
from labctl.inventory.vdi_params import GuestPhase, VdiTwinParameters, Workload


class Phase(IntEnum):
    OFF = 0
    POWERING_ON = 1
    BOOT = 2
    SETTLE = 3
    IDLE = 4
    LOGIN = 5
    WORK = 6
    LOGOFF = 7
    SHUTDOWN = 8


OS_UP = (Phase.SETTLE, Phase.IDLE, Phase.LOGIN, Phase.WORK, Phase.LOGOFF)
IO_PHASES = (Phase.BOOT, Phase.SETTLE, Phase.IDLE, Phase.LOGIN, Phase.WORK, Phase.LOGOFF)


class T(IntEnum):
    """Template rows: the I/O phases, with the first workload loop apart."""

    BOOT = 0
    SETTLE = 1
    IDLE = 2
    LOGIN = 3
    WORK_FIRST = 4
    WORK = 5
    LOGOFF = 6


N_T = len(T)
# desktop phase -> template row (non-I/O phases map to IDLE and are masked out)
PHASE_T = np.array(
    [T.IDLE, T.IDLE, T.BOOT, T.SETTLE, T.IDLE, T.LOGIN, T.WORK, T.LOGOFF, T.IDLE], dtype=np.int64
)

_FIELDS = (
    "n_img",  # image reads per pass of the phase (one loop for WORK, one local_s cycle for IDLE)
    "kb_img",
    "n_priv",  # private reads
    "kb_priv",
    "n_w",  # writes
    "kb_w",
    "local_s",  # local work per pass, s
    "cpu_bound",  # share of local_s that is CPU work
    "cpu_mhz",  # CPU demand while in the phase, MHz
    "net_kb_s",  # guest network other than image streaming, KB/s
    "in_use_mb",
    "active_mb",
)


@dataclass
class Templates:
    """Arrays of shape (pools, N_T) per field; ``ops_*`` per pool for the workload's operations."""

    n_img: np.ndarray
    kb_img: np.ndarray
    n_priv: np.ndarray
    kb_priv: np.ndarray
    n_w: np.ndarray
    kb_w: np.ndarray
    local_s: np.ndarray
    cpu_bound: np.ndarray
    cpu_mhz: np.ndarray
    net_kb_s: np.ndarray
    in_use_mb: np.ndarray
    active_mb: np.ndarray
    footprint_cap_mb: np.ndarray  # (pools,) the workload's write footprint
    # operations, padded to the longest workload: (pools, max_ops)
    op_count: np.ndarray  # (pools,)
    op_at: np.ndarray  # loop progress (0..1) at which each operation starts
    op_cpu_s: np.ndarray  # CPU time of the operation on one free core of the pool's hosts, s
    op_img: np.ndarray
    op_priv: np.ndarray
    op_w: np.ndarray
    op_names: list[list[str]]

    @property
    def n_io(self) -> np.ndarray:
        return self.n_img + self.n_priv + self.n_w


def _phase_row(g: GuestPhase) -> dict[str, float]:
    return {
        "n_img": g.image_read_mb * 1024.0 / g.image_read_kb,
        "kb_img": g.image_read_kb,
        "n_priv": g.private_read_mb * 1024.0 / g.private_read_kb,
        "kb_priv": g.private_read_kb,
        "n_w": g.write_mb * 1024.0 / g.write_kb,
        "kb_w": g.write_kb,
        "local_s": g.local_s,
        "cpu_bound": g.cpu_bound_share,
        "cpu_mhz": g.cpu_mhz,
        "net_kb_s": g.network_kb_s,
        "in_use_mb": g.in_use_mem_mb,
        "active_mb": g.active_mem_mb,
    }


def _work_row(
    w: Workload, core_mhz: float, first: GuestPhase | None = None, factor: float = 1.0
) -> dict[str, float]:
    """One workload loop: the background over the think times plus the operations' own work.

    The first loop of a session (``first`` given) launches every application for the first time: it
    reads ``factor`` times the image data, and writes ``factor - 1`` times the loop's writes more,
    in the logon's pattern (small writes of caches, prefetch and profile data, some read back).
    """
    think = sum(op.think_s for op in w.operations)
    op_cpu_s = sum(op.cpu_mhz_s for op in w.operations) / core_mhz
    local = think + op_cpu_s
    n_img = w.image_read_iops * think + sum(op.image_reads for op in w.operations)
    n_priv = w.private_read_iops * think + sum(op.private_reads for op in w.operations)
    n_w = w.write_iops * think + sum(op.writes for op in w.operations)
    kb_priv, kb_w = w.private_read_kb, w.write_kb
    if first is not None:
        extra_w = (factor - 1.0) * n_w
        extra_priv = (
            extra_w
            * first.private_read_mb
            / first.private_read_kb
            / max(first.write_mb / first.write_kb, 1e-9)
        )
        kb_w = (n_w * kb_w + extra_w * first.write_kb) / (n_w + extra_w)
        kb_priv = (n_priv * kb_priv + extra_priv * first.private_read_kb) / max(n_priv + extra_priv, 1e-9)
        n_img, n_priv, n_w = n_img * factor, n_priv + extra_priv, n_w + extra_w
    return {
        "n_img": n_img,
        "kb_img": w.image_read_kb,
        "n_priv": n_priv,
        "kb_priv": kb_priv,
        "n_w": n_w,
        "kb_w": kb_w,
        "local_s": local,
        "cpu_bound": op_cpu_s / local if local > 0 else 0.0,
        "cpu_mhz": (w.cpu_mhz * think + sum(op.cpu_mhz_s for op in w.operations)) / local,
        "net_kb_s": w.network_kb_s,
        "in_use_mb": w.in_use_mem_mb,
        "active_mb": w.active_mem_mb,
    }


def build_templates(pools: list[DesktopPool], hosts: dict[str, EsxiHost], p: VdiTwinParameters) -> Templates:
    n_pools = len(pools)
    fields = {f: np.zeros((n_pools, N_T)) for f in _FIELDS}
    max_ops = max((len(p.workloads[pl.workload].operations) for pl in pools), default=1)
    op_count = np.zeros(n_pools, dtype=np.int64)
    op_at = np.ones((n_pools, max_ops)) * 2.0  # never reached when padded
    op_cpu_s = np.zeros((n_pools, max_ops))
    op_img = np.zeros((n_pools, max_ops))
    op_priv = np.zeros((n_pools, max_ops))
    op_w = np.zeros((n_pools, max_ops))
    op_names: list[list[str]] = []
    cap = np.zeros(n_pools)
    for i, pool in enumerate(pools):
        w = p.workloads[pool.workload]
        host = hosts[pool.hosts[0]] if pool.hosts else next(iter(hosts.values()))
        core_mhz = host.ghz * 1000.0
        rows = {
            T.BOOT: _phase_row(p.boot),
            T.SETTLE: _phase_row(p.settle),
            T.IDLE: _phase_row(p.idle),
            T.LOGIN: _phase_row(p.login),
            T.WORK_FIRST: _work_row(w, core_mhz, p.login, p.first_loop_io_factor),
            T.WORK: _work_row(w, core_mhz),
            T.LOGOFF: _phase_row(p.logoff),
        }
        for t, row in rows.items():
            for f, v in row.items():
                fields[f][i, t] = v
        # every phase has at least one I/O so progress is defined by completions
        fields["n_w"][i] = np.maximum(fields["n_w"][i], 1e-3)
        cap[i] = w.write_footprint_mb
        ops = w.operations
        op_count[i] = len(ops)
        local = rows[T.WORK]["local_s"]
        at = 0.0
        for j, op in enumerate(ops):
            op_at[i, j] = at / local
            cpu_s = op.cpu_mhz_s / core_mhz
            op_cpu_s[i, j] = cpu_s
            op_img[i, j], op_priv[i, j], op_w[i, j] = op.image_reads, op.private_reads, op.writes
            at += cpu_s + op.think_s
        op_names.append([op.name for op in ops])
    return Templates(
        **fields,
        footprint_cap_mb=cap,
        op_count=op_count,
        op_at=op_at,
        op_cpu_s=op_cpu_s,
        op_img=op_img,
        op_priv=op_priv,
        op_w=op_w,
        op_names=op_names,
    )
