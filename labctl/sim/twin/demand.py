"""What one request costs at each station: CPU cycles, bytes on each port, disk time.

:func:`request_costs` is the single place where the protocol and the hardware meet:

- a **read** served by the streaming server costs its CPU ``cycles_per_request + cycles per packet
  sent x packets + cycles_per_byte x bytes``, puts the payload plus a header per packet on its NIC
  port and on the client's switch uplink, and, when the chunk is not in the server's file cache,
  a disk read on the vDisk volume (or, for HA, a round trip to the NAS and maybe its disk);
- a **write** crosses the same ports inbound, costs CPU per packet received and per disk I/O, and
  lands on the write-cache volume: acknowledged from the controller's write-back cache while it
  has room, else after the spindles wrote it (``penalty`` disk writes of ``positioning + size /
  media rate`` each, spread over the volume's spindles);
- TFTP blocks (the PXE bootstrap) and SMB reads/writes (file copies to a share) likewise.

Costs are linear in three things that change during a run: ``miss`` (disk visits per read at the
streaming server's backing store), ``miss_far`` (disk visits per read on the vDisk volume itself)
and ``full`` (how full the write-cache controller is, 0..1). The model evaluates this function once
per (route, phase) at build time and combines the results linearly each step (fast), and calls it
directly for the rare clients doing something else (file copies).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labctl.inventory.twin_params import TwinParameters
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.topology import N_ROLES, Role
from labctl.sim.twin.workload import DST_WC, SRC_SMB, SRC_TFTP, SRC_VDISK

KB = 1024.0


@dataclass
class Costs:
    work_r: np.ndarray  # (roles, A) seconds of one server at the station
    work_w: np.ndarray
    lat_r: np.ndarray  # (roles, A) in-service time, s (visit-weighted)
    lat_w: np.ndarray
    visit_r: np.ndarray  # (roles, A)
    visit_w: np.ndarray
    fixed_r: np.ndarray  # (A,) s
    fixed_w: np.ndarray
    # disk reads per read request at each role (the visits, plus read-ahead I/Os nobody waits for)
    io_r: np.ndarray | None = None

    def stack(self) -> np.ndarray:
        """The six (roles, A) arrays as one (6, roles, A) array to gather from (not the fixed rows)."""
        return np.stack([self.work_r, self.work_w, self.lat_r, self.lat_w, self.visit_r, self.visit_w])


@dataclass
class StationFacts:
    """Per-station constants the costs need (arrays over stations)."""

    rate: np.ndarray  # NIC/uplink counted bytes/s (1 elsewhere)
    hz: np.ndarray  # CPU Hz per core (1 elsewhere)
    pos_s: np.ndarray  # volume positioning time, s
    media: np.ndarray  # volume media rate, bytes/s
    penalty: np.ndarray  # RAID write penalty
    parallel: np.ndarray  # spindles / cores / 1
    dummy: int  # the station of roles a client's path does not have


def request_costs(
    p: TwinParameters,
    fx: StationFacts,
    st: np.ndarray,  # (roles, A) station per role
    src: np.ndarray,  # (A,) SRC_*
    dst: np.ndarray,  # (A,) DST_*
    read_b: np.ndarray,  # (A,) bytes per read
    write_b: np.ndarray,  # (A,) bytes per write
    miss: np.ndarray,  # (A,) disk-store visits per read at the streaming server (vDisk reads)
    miss_far: np.ndarray,  # (A,) disk visits per read on the vDisk volume
    miss_share: np.ndarray,  # (A,) disk visits per read on the share volume (SMB reads)
    full: np.ndarray,  # (A,) controller fullness of the write's volume, 0..1
    vd_remote: np.ndarray,  # (A,) bool: the vDisk is on another server (HA NAS)
    wc_remote: np.ndarray,  # (A,) bool
    link_rate: np.ndarray,  # (A,) client port, counted bytes/s
    seek_r: np.ndarray | None = None,  # (A,) positionings per disk read on a miss (1: random)
    seek_w: np.ndarray | None = None,  # (A,) positionings per disk write (1: random)
    read_ahead: np.ndarray | None = None,  # (A,) bool: the source is read ahead (sequential)
) -> Costs:
    a = src.size
    # A random I/O pays a whole positioning; a sequential stream pays one per contiguous run it
    # reaches the disk in, i.e. io / run of one for each I/O (the caller knows the run).
    one = np.ones(a)
    seek_r = one if seek_r is None else seek_r
    seek_w = one if seek_w is None else seek_w
    is_tftp = src == SRC_TFTP
    is_vd = src == SRC_VDISK
    is_smb_r = src == SRC_SMB
    on_ss = ~is_smb_r
    rb = np.where(is_tftp, float(p.tftp_block_bytes), read_b)
    wb = write_b
    req = float(p.request_bytes)
    io_b = p.cache_read_io_kb * KB
    wire_rb, wire_wb, wire_io = hwm.wire_bytes(rb, p), hwm.wire_bytes(wb, p), float(hwm.wire_bytes(io_b, p))
    remote_rd = (vd_remote & is_vd).astype(float)
    to_wc = dst == DST_WC
    to_smb = ~to_wc
    wc_rem = (wc_remote & to_wc).astype(float)
    rate = fx.rate
    hz_ss, hz_bk, hz_sh = fx.hz[st[Role.SS_CPU]], fx.hz[st[Role.BK_CPU]], fx.hz[st[Role.SH_CPU]]
    rate_ss = rate[st[Role.SS_OUT]]

    w_r = np.zeros((N_ROLES, a))
    w_w = np.zeros((N_ROLES, a))
    v_r = np.zeros((N_ROLES, a))
    v_w = np.zeros((N_ROLES, a))
    l_r = np.zeros((N_ROLES, a))
    l_w = np.zeros((N_ROLES, a))

    # --- reads ---------------------------------------------------------------------------------
    miss = miss * is_vd
    miss_far = miss_far * is_vd
    cyc_read = np.where(
        is_tftp,
        p.cpu_cycles_per_tftp_block,
        p.cpu_cycles_per_request
        + p.cpu_cycles_per_packet_received
        + p.cpu_cycles_per_packet_sent * hwm.packets(rb, p)
        + p.cpu_cycles_per_byte * rb,
    )
    # a cache miss: a local disk I/O, or (HA) an SMB request to the NAS and its answer
    cyc_miss = np.where(
        remote_rd > 0,
        p.cpu_cycles_per_request + p.cpu_cycles_per_packet_received * hwm.packets(io_b, p),
        p.cpu_cycles_per_disk_io,
    )
    w_r[Role.SS_CPU] = on_ss * (cyc_read + miss * cyc_miss) / hz_ss
    w_r[Role.SS_OUT] = on_ss * (wire_rb + remote_rd * miss * req) / rate_ss
    w_r[Role.SS_IN] = on_ss * (req + remote_rd * miss * wire_io) / rate[st[Role.SS_IN]]
    w_r[Role.UP_DOWN] = wire_rb / rate[st[Role.UP_DOWN]]
    w_r[Role.UP_UP] = req / rate[st[Role.UP_UP]]
    vd = st[Role.VD_VOL]
    t_io = fx.pos_s[vd] * seek_r + io_b / fx.media[vd]
    w_r[Role.VD_VOL] = miss_far * t_io
    v_r[Role.VD_VOL] = miss_far
    w_r[Role.BK_CPU] = (
        remote_rd
        * (
            miss * (p.cpu_cycles_per_request + p.cpu_cycles_per_packet_sent * hwm.packets(io_b, p))
            + miss_far * p.cpu_cycles_per_disk_io
        )
        / hz_bk
    )
    w_r[Role.BK_OUT] = remote_rd * miss * wire_io / rate[st[Role.BK_OUT]]
    w_r[Role.BK_IN] = remote_rd * miss * req / rate[st[Role.BK_IN]]
    for role in (Role.BK_CPU, Role.BK_OUT, Role.BK_IN):
        v_r[role] = remote_rd * miss
    cyc_smb = (
        p.cpu_cycles_per_request
        + p.cpu_cycles_per_packet_received
        + p.cpu_cycles_per_packet_sent * hwm.packets(rb, p)
        + p.cpu_cycles_per_byte * rb
        + miss_share * p.cpu_cycles_per_disk_io
    )
    w_r[Role.SH_CPU] = is_smb_r * cyc_smb / hz_sh
    w_r[Role.SH_OUT] = is_smb_r * wire_rb / rate[st[Role.SH_OUT]]
    w_r[Role.SH_IN] = is_smb_r * req / rate[st[Role.SH_IN]]
    sh = st[Role.SH_VOL]
    w_r[Role.SH_VOL] = is_smb_r * miss_share * (fx.pos_s[sh] * seek_r + io_b / fx.media[sh])
    v_r[Role.SH_VOL] = is_smb_r * miss_share

    # --- writes --------------------------------------------------------------------------------
    cyc_w = (
        p.cpu_cycles_per_request
        + p.cpu_cycles_per_packet_received * hwm.packets(wb, p)
        + p.cpu_cycles_per_byte * wb
        + p.cpu_cycles_per_packet_sent
    )
    w_w[Role.SS_CPU] = (
        to_wc
        * (
            cyc_w
            + np.where(
                wc_rem > 0, p.cpu_cycles_per_packet_sent * hwm.packets(wb, p), p.cpu_cycles_per_disk_io
            )
        )
        / hz_ss
    )
    w_w[Role.SS_IN] = to_wc * wire_wb / rate[st[Role.SS_IN]]
    w_w[Role.SS_OUT] = to_wc * (req + wc_rem * wire_wb) / rate_ss
    w_w[Role.UP_UP] = wire_wb / rate[st[Role.UP_UP]]
    w_w[Role.UP_DOWN] = req / rate[st[Role.UP_DOWN]]
    w_w[Role.BK_CPU] = wc_rem * (cyc_w + p.cpu_cycles_per_disk_io) / hz_bk
    w_w[Role.BK_IN] = wc_rem * wire_wb / rate[st[Role.BK_IN]]
    w_w[Role.BK_OUT] = wc_rem * req / rate[st[Role.BK_OUT]]
    for role in (Role.BK_CPU, Role.BK_OUT, Role.BK_IN):
        v_w[role] = wc_rem
    w_w[Role.SH_CPU] = to_smb * (cyc_w + p.cpu_cycles_per_disk_io) / hz_sh
    w_w[Role.SH_IN] = to_smb * wire_wb / rate[st[Role.SH_IN]]
    w_w[Role.SH_OUT] = to_smb * req / rate[st[Role.SH_OUT]]
    # The volume a write lands on. While the controller's cache has room the write is acknowledged
    # from it (controller_write_ms); once full, every host write waits for the spindles: `penalty`
    # disk writes of positioning + size / media rate, spread over `parallel` spindles.
    ctrl = p.controller_write_ms / 1e3
    for role, sel in ((Role.WC_VOL, to_wc), (Role.SH_VOL, to_smb)):
        vs = st[role]
        t_disk = fx.pos_s[vs] * seek_w + wb / fx.media[vs]
        w_w[role] = sel * ((1.0 - full) * ctrl * fx.parallel[vs] + full * fx.penalty[vs] * t_disk)
        l_w[role] = sel * ((1.0 - full) * ctrl + full * t_disk)
        v_w[role] = sel * 1.0

    # --- visits and in-service times of CPUs and ports: one visit, served in its own work -----
    for role in (
        Role.SS_CPU,
        Role.SS_OUT,
        Role.SS_IN,
        Role.UP_DOWN,
        Role.UP_UP,
        Role.SH_CPU,
        Role.SH_OUT,
        Role.SH_IN,
    ):
        v_r[role] = (w_r[role] > 0) * 1.0
        v_w[role] = (w_w[role] > 0) * 1.0
    l_r[:] = w_r  # reads: in service for their own work everywhere (a disk read uses one spindle)
    for role in Role:
        if role not in (Role.WC_VOL, Role.SH_VOL):
            l_w[role] = w_w[role]

    # a role the client's path lacks (no uplink on the primary switch, no NAS) costs nothing
    absent = st == fx.dummy
    for arr in (w_r, w_w, v_r, v_w, l_r, l_w):
        arr[absent] = 0.0

    # no-queue delays: the wire round trip (twice when the data sits on the NAS), and the client's
    # port when it is slower than the server's (a 1 GbE client behind a 10 GbE server)
    rtt = p.network_latency_ms / 1e3
    fixed_r = rtt * (1.0 + remote_rd * miss) + np.maximum(0.0, wire_rb / link_rate - wire_rb / rate_ss)
    fixed_w = rtt * (1.0 + wc_rem) + np.maximum(0.0, wire_wb / link_rate - wire_wb / rate_ss)
    io_r = v_r.copy()
    if read_ahead is not None and read_ahead.any():
        # A file read sequentially is read ahead: the server's cache manager fetches the next view
        # while the client is served the current one, so the disk (or, in HA, the NAS) is busy
        # with it but the request does not wait for it, unless the disk cannot keep up (the
        # solver then holds the reader to the disk's pace).
        for role in (Role.VD_VOL, Role.SH_VOL, Role.BK_CPU, Role.BK_OUT, Role.BK_IN):
            v_r[role, read_ahead] = 0.0
            l_r[role, read_ahead] = 0.0
        fixed_r = np.where(
            read_ahead, rtt + np.maximum(0.0, wire_rb / link_rate - wire_rb / rate_ss), fixed_r
        )
    return Costs(w_r, w_w, l_r, l_w, v_r, v_w, fixed_r, fixed_w, io_r)
