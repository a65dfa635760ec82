"""The VDI model as the simulators read it: :mod:`labctl.sim.twin.interface` records from model state.

Pure reads of a :class:`~.model.VdiModel` (the caller holds the twin's lock and has moved the model
to the clock's now).
"""

from __future__ import annotations

import numpy as np

from labctl.sim.twin.interface import (
    ArrayControllerCounters,
    ArrayTierCounters,
    ArrayVolumeCounters,
    DatastorePerf,
    DesktopPhase,
    DesktopState,
    HostPerf,
    LunCounters,
    OperationTiming,
    PowerState,
    SessionInfo,
    SessionState,
    VmPerf,
)
from labctl.sim.twin.vdi.arrays import active_controllers
from labctl.sim.twin.vdi.model import SessionRecord, VdiModel
from labctl.sim.twin.vdi.phases import Phase

GB = 1024.0**3
_PHASES = {
    Phase.OFF: DesktopPhase.OFF,
    Phase.POWERING_ON: DesktopPhase.POWERING_ON,
    Phase.BOOT: DesktopPhase.BOOTING,
    Phase.SETTLE: DesktopPhase.SETTLING,
    Phase.IDLE: DesktopPhase.IDLE,
    Phase.LOGIN: DesktopPhase.LOGGING_IN,
    Phase.WORK: DesktopPhase.WORKING,
    Phase.LOGOFF: DesktopPhase.LOGGING_OFF,
    Phase.SHUTDOWN: DesktopPhase.SHUTTING_DOWN,
}
_SESSION_STATES = (
    SessionState.LOGGING_IN,
    SessionState.ACTIVE,
    SessionState.LOGGING_OFF,
    SessionState.ENDED,
    SessionState.FAILED,
)


def generated_ip(i: int) -> str:
    """A DHCP-like address for a desktop the inventory gives none."""
    return f"10.200.{i // 250}.{i % 250 + 1}"


def power_state(m: VdiModel, i: int) -> PowerState:
    return PowerState.OFF if int(m.phase[i]) == Phase.OFF else PowerState.ON


def desktop_states(m: VdiModel, idx: np.ndarray, ips: list[str | None]) -> tuple[DesktopState, ...]:
    topo = m.topo
    up = m.os_up()
    reg = m.registered()
    out = []
    for i in map(int, idx):
        sid = int(m.session_of[i])
        out.append(
            DesktopState(
                name=topo.names[i],
                pool=topo.pools[int(topo.pool_of[i])].name,
                host=topo.hosts[int(topo.host_of[i])].name,
                datastore=topo.datastores[int(topo.ds_of[i])].name,
                power=power_state(m, i),
                phase=_PHASES[Phase(int(m.phase[i]))],
                tools_running=bool(up[i]),
                ip=(ips[i] or generated_ip(i)) if up[i] else None,
                boot_count=int(m.boot_count[i]),
                registered=bool(reg[i]),
                session_id=m.sessions[sid].sid if sid >= 0 else None,
                stunned=bool(m.stunned[i]),
            )
        )
    return tuple(out)


def host_perf(m: VdiModel, h: int) -> HostPerf:
    host = m.topo.hosts[h]
    on = (m.phase != Phase.OFF) & (m.topo.host_of == h)
    return HostPerf(
        host=host.name,
        lab_time_s=m.t,
        cpu_cores=host.total_cores,
        cpu_mhz_per_core=host.ghz * 1000.0,
        cpu_capacity_mhz=host.cpu_mhz,
        cpu_used_mhz_s=float(m.host_cpu[h]),
        mem_total_kb=host.ram_gb * 1024.0 * 1024.0,
        mem_consumed_kb_s=float(m.host_mem_consumed[h]),
        mem_active_kb_s=float(m.host_mem_active[h]),
        mem_balloon_kb_s=float(m.host_balloon[h]),
        net_bytes_rx=float(m.host_rx[h]),
        net_bytes_tx=float(m.host_tx[h]),
        nic_capacity_bps=host.nics.count * host.nics.speed_gbps * 1e9,
        vms_powered_on=int(np.count_nonzero(on)),
        in_maintenance=bool(m.host_maint[h]),
    )


def vm_perf(m: VdiModel, idx: np.ndarray) -> tuple[VmPerf, ...]:
    topo = m.topo
    return tuple(
        VmPerf(
            vm=topo.names[i],
            host=topo.hosts[int(topo.host_of[i])].name,
            lab_time_s=m.t,
            vcpus=int(m.vcpus[i]),
            mem_configured_kb=float(m.ram_mb[i] * 1024.0),
            cpu_used_mhz_s=float(m.vm_cpu[i]),
            mem_active_kb_s=float(m.vm_mem_active[i]),
            mem_consumed_kb_s=float(m.vm_mem_consumed[i]),
            mem_balloon_kb_s=float(m.vm_balloon[i]),
            net_bytes_rx=float(m.vm_rx[i]),
            net_bytes_tx=float(m.vm_tx[i]),
            disk_reads=float(m.vm_reads[i]),
            disk_writes=float(m.vm_writes[i]),
            disk_bytes_read=float(m.vm_rbytes[i]),
            disk_bytes_written=float(m.vm_wbytes[i]),
            disk_read_latency_sum_s=float(m.vm_rlat[i]),
            disk_write_latency_sum_s=float(m.vm_wlat[i]),
        )
        for i in map(int, idx)
    )


def datastore_used_gb(m: VdiModel) -> np.ndarray:
    """Allocated space per datastore: each desktop's disk plus shared image copies."""
    topo = m.topo
    nd = len(topo.datastores)
    per_desktop = (
        np.array([topo.pools[int(p)].provisioning.disk_gb() for p in topo.pool_of]) if m.n else np.zeros(0)
    )
    used = np.bincount(topo.ds_of, per_desktop, nd) if m.n else np.zeros(nd)
    for pool in topo.pools:
        if pool.provisioning.kind.value in ("linked_clone", "mcs"):
            for ds in pool.datastores:
                j = next(k for k, d in enumerate(topo.datastores) if d.name == ds)
                used[j] += pool.provisioning.image_gb
    return used


def datastore_perf(m: VdiModel, h: int | None) -> tuple[DatastorePerf, ...]:
    topo = m.topo
    nd = len(topo.datastores)
    used = datastore_used_gb(m)
    out = []
    for j, ds in enumerate(topo.datastores):
        if h is None:
            c = {k: float(v[j]) for k, v in m.ds_tot.items()}
        else:
            c = {k: float(v[h * nd + j]) for k, v in m.hd.items()}
        cap = ds.capacity_gb * GB
        free = 0.0 if m.ds_full[j] else max(0.0, cap - used[j] * GB)
        out.append(
            DatastorePerf(
                datastore=ds.name,
                host=None if h is None else topo.hosts[h].name,
                lab_time_s=m.t,
                reads=c["reads"],
                writes=c["writes"],
                bytes_read=c["rbytes"],
                bytes_written=c["wbytes"],
                read_latency_sum_s=c["rlat"],
                write_latency_sum_s=c["wlat"],
                capacity_bytes=cap,
                free_bytes=free,
            )
        )
    return tuple(out)


def volume_counters(m: VdiModel, a: int) -> tuple[ArrayVolumeCounters, ...]:
    topo = m.topo
    am = topo.arrays[a]
    v = m.vol
    return tuple(
        ArrayVolumeCounters(
            array=am.hw.name,
            volume=ds.volume,
            controller=am.hw.controllers[int(topo.ds_ctrl[j])],
            lab_time_s=m.t,
            reads=float(v["reads"][j]),
            writes=float(v["writes"][j]),
            bytes_read=float(v["rbytes"][j]),
            bytes_written=float(v["wbytes"][j]),
            read_response_sum_s=float(v["rresp"][j]),
            write_response_sum_s=float(v["wresp"][j]),
            queue_integral=float(v["queue"][j]),
        )
        for j, ds in enumerate(topo.datastores)
        if int(topo.ds_array[j]) == a
    )


def tier_counters(m: VdiModel, a: int) -> tuple[ArrayTierCounters, ...]:
    am = m.topo.arrays[a]
    return tuple(
        ArrayTierCounters(
            array=am.hw.name,
            tier=t.name,
            drives=t.drives,
            lab_time_s=m.t,
            reads=float(m.st_reads[st]),
            writes=float(m.st_writes[st]),
            bytes_read=float(m.st_rbytes[st]),
            bytes_written=float(m.st_wbytes[st]),
            busy_drive_s=float(m.st_busy[st]) * t.drives / max(t.servers, 1),
        )
        for t, st in zip(am.tiers, am.tier_st, strict=False)
    )


def controller_counters(m: VdiModel, a: int) -> tuple[ArrayControllerCounters, ...]:
    am = m.topo.arrays[a]
    failed = m.ctrl_failed[a]
    active = active_controllers(am.hw)
    owners = {int(c) for j, c in enumerate(m.topo.ds_ctrl) if int(m.topo.ds_array[j]) == a}
    out = []
    for k, (name, st) in enumerate(zip(am.hw.controllers, am.ctrls, strict=True)):
        if failed[k]:
            state = "failed"
        elif k < active or k in owners:
            state = "active"
        else:
            state = "standby"
        out.append(
            ArrayControllerCounters(
                array=am.hw.name,
                controller=name,
                state=state,
                lab_time_s=m.t,
                ios=float(m.st_reads[st] + m.st_writes[st]),
                busy_s=float(m.st_busy[st]),
                write_cache_dirty_bytes=float(m.dirty[a]) / max(active, 1) if state == "active" else 0.0,
                write_cache_bytes=float(m.wc_cap[a]) / max(active, 1),
                write_through=bool(m.write_through[a]),
            )
        )
    return tuple(out)


def lun_counters(m: VdiModel, a: int) -> tuple[LunCounters, ...]:
    """Unity-style LUN counters per storage processor: the owner reports the I/O, the peer zero."""
    out = []
    for v in volume_counters(m, a):
        am = m.topo.arrays[a]
        for sp in am.hw.controllers[:2]:
            own = sp == v.controller
            f = 1.0 if own else 0.0
            out.append(
                LunCounters(
                    v.volume,
                    sp,
                    reads=v.reads * f,
                    writes=v.writes * f,
                    read_blocks=v.bytes_read * f / 512.0,
                    write_blocks=v.bytes_written * f / 512.0,
                    total_io_time_us=(v.read_response_sum_s + v.write_response_sum_s) * 1e6 * f,
                )
            )
    return tuple(out)


def session_info(m: VdiModel, rec: SessionRecord) -> SessionInfo:
    pool = m.topo.pools[int(m.topo.pool_of[rec.desktop])]
    return SessionInfo(
        session_id=rec.sid,
        desktop=m.topo.names[rec.desktop],
        user=rec.user,
        workload=pool.workload,
        state=_SESSION_STATES[rec.state],
        requested_lab_s=rec.requested,
        logged_in_lab_s=rec.logged_in,
        login_duration_s=None if rec.logged_in is None else rec.logged_in - rec.requested,
        ended_lab_s=rec.ended,
        failed=rec.failed,
        operations=rec.operations,
        loops=rec.loops,
    )


def session_operations(m: VdiModel, sid: int, since: int) -> tuple[OperationTiming, ...]:
    log = m.ops
    n = log.n
    sel = np.flatnonzero((log.session[:n] == sid) & (log.index[:n] >= since))
    rec = m.sessions[sid]
    names = m.tm.op_names[int(m.topo.pool_of[rec.desktop])]
    return tuple(
        OperationTiming(
            session_id=rec.sid,
            index=int(log.index[k]),
            name=names[int(log.op[k])],
            started_lab_s=float(log.start[k]),
            response_s=float(log.response[k]),
        )
        for k in sel
    )
