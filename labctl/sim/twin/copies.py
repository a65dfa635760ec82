"""The copy/reboot matrix (2007, scenario 2) in fast-forward, and what the physics says to expect.

``run_copy_cell(lab, "local_to_share", copiers=25, rebooters=25)`` boots every client, lets the
storm pass, then starts the copies and the reboots at the same moment, samples the servers like
perfmon and returns per-client copy times, retries and the series. ``copy_limits(lab, path, n)``
is the back-of-the-envelope answer the twin is checked against: for each resource a copy uses,
how many copy bytes per second it can carry, and so the least time ``n`` simultaneous copies can
take (the bottleneck bound of a closed system: the most loaded resource, or one client's own
request loop when it copies alone).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from labctl.inventory.model import Lab
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.demand import Costs, request_costs
from labctl.sim.twin.interface import CopyLocation, PowerAction
from labctl.sim.twin.model import TwinModel
from labctl.sim.twin.storm import Sampler, warm_caches
from labctl.sim.twin.topology import Role, StationKind
from labctl.sim.twin.workload import DST_SMB, DST_WC, SRC_SMB, SRC_VDISK, Phase

KB = 1024.0
COPY_BYTES = 512 * 1024 * 1024  # the paper's 512 MB file
PATHS: dict[str, tuple[CopyLocation, CopyLocation]] = {
    "local_to_local": (CopyLocation.LOCAL, CopyLocation.LOCAL),
    "local_to_share": (CopyLocation.LOCAL, CopyLocation.SHARE),
    "share_to_local": (CopyLocation.SHARE, CopyLocation.LOCAL),
    "share_to_share": (CopyLocation.SHARE, CopyLocation.SHARE),
}


@dataclass
class CopyCellResult:
    path: str
    copiers: int
    rebooters: int
    t: np.ndarray  # sample times, lab s after the copies started
    cpu_pct: dict[str, np.ndarray]
    nic_out_pct: dict[str, np.ndarray]
    nic_in_pct: dict[str, np.ndarray]
    disk_queue: dict[str, np.ndarray]
    mem_available_mb: dict[str, np.ndarray]
    copy_s: np.ndarray  # per copier (nan: did not finish)
    copier_retries: np.ndarray  # session retries each copier added during the cell
    boot_s: np.ndarray  # per rebooter (nan: did not boot)
    rebooter_retries: np.ndarray  # session retries of each rebooter's new session
    wall_s: float
    steps: int
    notes: list[str] = field(default_factory=list)


def run_copy_cell(
    lab: Lab,
    path: str,
    copiers: int,
    rebooters: int = 0,
    *,
    size_bytes: int = COPY_BYTES,
    sample_s: float = 1.0,
    settle_s: float = 420.0,
    timeout_s: float = 3600.0,
    tail_s: float = 30.0,
) -> CopyCellResult:
    """Boot every client, wait ``settle_s``, then copy and reboot; sample until all is done."""
    started = time.perf_counter()
    if copiers + rebooters > len(lab.clients):
        raise ValueError(f"{copiers} copiers + {rebooters} rebooters > {len(lab.clients)} clients")
    source, destination = PATHS[path]
    model = TwinModel(lab, start_t=0.0)
    warm_caches(model)
    names = model.topo.client_names
    for name in names:
        model.power(name, PowerAction.ON)
    model.advance_to(settle_s)
    t0 = model.t
    retries0 = model.retries.copy()
    recs = [model.start_copy(f"copy-{i}", names[i], source, destination, size_bytes) for i in range(copiers)]
    reboot = np.arange(copiers, copiers + rebooters)
    boots0 = model.boot_count[reboot].copy()
    for i in reboot:
        model.power(names[i], PowerAction.RESTART)
    sampler = Sampler(model)
    sampler.sample()
    t = t0
    done_at: float | None = None
    while t < t0 + timeout_s:
        t += sample_s
        model.advance_to(t)
        sampler.sample()
        copies_done = all(r.finished is not None or r.failed for r in recs)
        reboots_done = bool(np.all(model.boot_count[reboot] > boots0)) and bool(
            np.all(model.phase[reboot] == Phase.IDLE)
        )
        if copies_done and reboots_done and done_at is None:
            done_at = t
        if done_at is not None and t >= done_at + tail_s:
            break
    copy_s = np.array([(r.finished - r.started) if r.finished is not None else np.nan for r in recs])
    boot_s = np.where(model.boot_count[reboot] > boots0, model.last_boot_s[reboot], np.nan)
    return CopyCellResult(
        path=path,
        copiers=copiers,
        rebooters=rebooters,
        t=np.asarray(sampler.times) - t0,
        cpu_pct=sampler.series("cpu"),
        nic_out_pct=sampler.series("nic"),
        nic_in_pct=sampler.series("nicin"),
        disk_queue=sampler.series("queue"),
        mem_available_mb=sampler.series("mem"),
        copy_s=copy_s,
        copier_retries=(model.retries[:copiers] - retries0[:copiers]).astype(float),
        boot_s=boot_s,
        rebooter_retries=model.retries[reboot].astype(float),
        wall_s=time.perf_counter() - started,
        steps=model.steps,
    )


# --- what to expect -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    resource: str
    capacity_mb_s: float  # copy payload (MB/s) the resource carries for these copiers
    load_mb: float  # copy payload that must pass it (MB), less what a write-behind buffer holds
    time_s: float  # least time there: load / capacity


def copy_limits(lab: Lab, path: str, copiers: int, size_bytes: int = COPY_BYTES) -> list[Limit]:
    """Per resource: the least time ``copiers`` simultaneous copies along ``path`` need there.

    The bottleneck bound of a closed system, from the same per-request costs the twin runs on
    (:func:`.demand.request_costs`): a copied byte costs every station it crosses some busy time
    (CPU cycles, wire bytes, disk transfer and one positioning per buffered run); summed over the
    copiers and divided by the station's parallel servers it is the least time the station needs.
    A volume's write-behind buffer (controller cache, file-server dirty pages) absorbs its size
    first. The ``client`` row is one copier's own request loop with nothing queued: the copy
    time alone. The expected copy time is the largest row (:func:`expected_copy_s`).
    """
    model = TwinModel(lab, start_t=0.0)  # topology and station constants only
    p, topo = lab.twin, model.topo
    src, dst = PATHS[path]
    n = copiers
    idx = np.arange(n)
    r_local, w_local = src is CopyLocation.LOCAL, dst is CopyLocation.LOCAL
    b_r = (p.io_burst_kb if r_local else p.smb_io_kb) * KB
    b_w = (p.io_burst_kb if w_local else p.smb_io_kb) * KB
    vol = topo.role_station[Role.WC_VOL if w_local else Role.SH_VOL, idx]
    run_b = np.maximum(b_w, model.ctrl_cap[vol] / n)
    zeros, ones = np.zeros(n), np.ones(n)

    def costs(full: float) -> Costs:
        return request_costs(
            p,
            model.fx,
            topo.role_station[:, idx],
            np.full(n, SRC_VDISK if r_local else SRC_SMB),
            np.full(n, DST_WC if w_local else DST_SMB),
            np.full(n, b_r),
            np.full(n, b_w),
            zeros,  # the source is read once from disk and then from the server's cache
            zeros,
            zeros,
            ones * full,
            topo.vdisk_remote[idx],
            topo.wc_remote[idx],
            topo.client_link_rate[idx],
            seek_w=b_w / run_b,
        )

    steady = costs(full=1.0)  # a long copy writes at the spindles' pace once the buffers are full
    per_byte = steady.work_r / b_r + steady.work_w / b_w  # (roles, copiers) busy s per copied byte
    st = topo.role_station[:, idx]
    live = st != topo.dummy
    busy = np.bincount(st[live], weights=(per_byte * size_bytes)[live], minlength=topo.n_stations)
    out: list[Limit] = []
    for s_i in np.flatnonzero(busy > 0):
        load_b = float(n * size_bytes)
        if model.is_volume[s_i]:
            load_b = max(0.0, load_b - float(model.ctrl_cap[s_i]))
        time_s = busy[s_i] * load_b / (n * size_bytes) / topo.m[s_i]
        cap_b = n * size_bytes / (busy[s_i] / topo.m[s_i])
        out.append(Limit(_station_name(model, int(s_i)), cap_b / hwm.MB, load_b / hwm.MB, time_s))
    alone = costs(full=0.0)
    out.append(
        Limit("one client's request loop", *_alone(model, alone, r_local, w_local, b_r, b_w, size_bytes))
    )
    return out


def expected_copy_s(limits: list[Limit]) -> tuple[float, str]:
    worst = max(limits, key=lambda lim: lim.time_s)
    return worst.time_s, worst.resource


def _alone(
    model: TwinModel, c: Costs, r_local: bool, w_local: bool, b_r: float, b_w: float, size_b: int
) -> tuple[float, float, float]:
    """One copier alone: requests in flight over their unqueued round trip (client 0's route)."""
    p = model.p
    resp_r = float(c.fixed_r[0] + c.lat_r[:, 0].sum())
    resp_w = float(c.fixed_w[0] + c.lat_w[:, 0].sum())
    local_per_b = p.copy_local_s_per_gb / 1e9
    smb = float(min(p.copy_smb_requests_in_flight, p.smb_max_mpx_count))
    if r_local and w_local:  # one streaming request in flight: a read, then a write, per 32 KB
        bps = b_r / (resp_r + resp_w + b_r * local_per_b)
    else:
        k_r = 1.0 if r_local else smb
        k_w = 1.0 if w_local else smb
        bps = min(k_r * b_r / (resp_r + k_r * b_r * local_per_b), k_w * b_w / resp_w)
    return bps / hwm.MB, size_b / hwm.MB, size_b / bps


def _station_name(model: TwinModel, s: int) -> str:
    topo = model.topo
    kind = StationKind(int(topo.kind[s]))
    owner = topo.owner[s]
    if kind is StationKind.VOLUME:
        v = next(v for v in topo.volumes if v.station == s)
        return f"{owner}:{v.volume.name} volume"
    if kind is StationKind.CPU:
        return f"{owner} CPU"
    if kind is StationKind.UPLINK:
        return f"{owner} uplink"
    node = topo.servers[owner]
    ports = node.nic_out if kind is StationKind.NIC_OUT else node.nic_in
    return f"{owner} port {ports.index(s) + 1} {'out' if kind is StationKind.NIC_OUT else 'in'}"


__all__ = [
    "COPY_BYTES",
    "PATHS",
    "CopyCellResult",
    "Limit",
    "copy_limits",
    "expected_copy_s",
    "run_copy_cell",
]
