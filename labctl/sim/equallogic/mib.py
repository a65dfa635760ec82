"""The EqualLogic PS objects the simulated agent serves, by OID, from the twin's counters.

OIDs and types from the EqualLogic MIBs (EQLMEMBER-MIB, EQLCONTROLLER-MIB, EQLVOLUME-MIB,
EQLDISK-MIB, compiled for pysnmp in DotZero24/pysnmp-mibs ``pysnmp_mibs/EQL*-MIB.py``) and the
columns a published poller walks (Checkmk's ``dell_eql_volume`` check: eqliscsiVolumeName .4,
eqliscsiVolumeStatsTxData .3, RxData .4, ReadLatency .6, WriteLatency .7, ReadOpCount .8,
WriteOpCount .9, with a sample walk in its header):

- SNMPv2-MIB system group: sysDescr, sysObjectID, sysUpTime (hundredths of a second since the agent
  started, lab time), sysName;
- EQLMEMBER-MIB (1.3.6.1.4.1.12740.2), rows indexed (eqlGroupId, eqlMemberIndex):
  eqlMemberTable .1.1: .2 eqlMemberDateAndTime (Counter32, seconds since 1970), .9 eqlMemberName,
  .21/.22/.23 controller firmware major/minor/maintenance (Unsigned32); eqlMemberHealthTable .5.1: .1
  eqlMemberHealthStatus (0 unknown, 1 normal, 2 warning, 3 critical); eqlMemberChassisTable .11.1:
  .1 eqlMemberModel, .2 serial, .3 number of controllers, .4 number of disks, .5 cache MB;
  eqlMemberConnTable .12.1: member-wide cumulative .2/.3 read/write latency (ms), .6/.7 read/write
  op counts, .8 TxData (octets sent: reads), .9 RxData (octets received: writes);
- EQLCONTROLLER-MIB (1.3.6.1.4.1.12740.4) eqlControllerTable .1.1.1, rows (group, member,
  controller 1-2): .2 model, .4 software revision, .6 up time (Counter32, seconds), .9 primary(1) /
  secondary(2). A failed control module's row is gone and the member's health is warning;
- EQLVOLUME-MIB (1.3.6.1.4.1.12740.5) rows (eqliscsiLocalMemberId, eqliscsiVolumeIndex):
  eqliscsiVolumeTable .1.7.1.1: .4 name, .8 size (MB), .9 admin status; eqliscsiVolumeStatisticsTable
  .1.7.34.1: .3 TxData, .4 RxData (octets, Counter64), .6 ReadLatency, .7 WriteLatency (cumulative
  milliseconds, Counter64), .8 ReadOpCount, .9 WriteOpCount (Counter64), .10/.11 average latency
  (Gauge32, ms, since the previous read of the row);
- EQLDISK-MIB (1.3.6.1.4.1.12740.3) rows (group, member, disk): eqlDiskTable .1.1.1: .2 type,
  .6 size (MB), .8 status (1 on-line), .11 slot, .12 type enum (2 sas, 4 sas-ssd), .13 rpm;
  eqlDiskStatusTable .1.2.1: .1 Xfers, .2 BytesRead and .3 BytesWritten in whole **Mbytes**
  (the MIB: "total number of Mbytes read"; MiB, as Centreon's plugin reads them), .4 BusyTime in
  whole **seconds** ("total time in seconds spent busy"), all Counter64. (Bytes and milliseconds
  before: an assumption the driver shared, off by 2^20 and 1,000; ``tests/conformance/snmp`` now
  checks both sides against the MIB text.) ``eqlDiskRPM`` is 1 for an SSD ("non-rotating media").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pysnmp.proto.api import v2c

from labctl.sim.twin.interface import ArrayControllerCounters, ArrayTierCounters, ArrayVolumeCounters

SYS = (1, 3, 6, 1, 2, 1, 1)
SYS_DESCR, SYS_OBJECT_ID, SYS_UPTIME, SYS_NAME = (*SYS, 1, 0), (*SYS, 2, 0), (*SYS, 3, 0), (*SYS, 5, 0)
EQL = (1, 3, 6, 1, 4, 1, 12740)
MEMBER = (*EQL, 2, 1, 1, 1)
MEMBER_HEALTH = (*EQL, 2, 1, 5, 1)
MEMBER_CHASSIS = (*EQL, 2, 1, 11, 1)
MEMBER_CONN = (*EQL, 2, 1, 12, 1)
CONTROLLER = (*EQL, 4, 1, 1, 1)
VOLUME = (*EQL, 5, 1, 7, 1, 1)
VOLUME_STATS = (*EQL, 5, 1, 7, 34, 1)
DISK = (*EQL, 3, 1, 1, 1)
DISK_STATUS = (*EQL, 3, 1, 2, 1)
GROUP_ID = 1
# sysObjectID of a PS Series member, as a real member answers it (LibreNMS' recording; it was
# 12740.1.2 here, which the recording does not show)
SYS_OBJECT_ID_PS = (*EQL, 17, 1)
HEALTH_NORMAL, HEALTH_WARNING = 1, 2
PRIMARY, SECONDARY = 1, 2
DISK_TYPE = {
    "ssd": (4, "SAS SSD", 1),  # eqlDiskRPM 1: non-rotating media
    "15k": (2, "SAS", 15000),
    "10k": (2, "SAS", 10000),
    "nl": (2, "NL-SAS", 7200),
}
FIRMWARE = (5, 2, 4)  # PS Series firmware 5.2.4 (the 2012 paper's generation)
VOLUME_SIZE_MB = 500 * 1024
DISK_MB = 1024 * 1024  # eqlDiskStatusBytesRead/Written count whole Mbytes


@dataclass(frozen=True)
class MemberState:
    """What the agent answers at one lab time."""

    name: str
    member_index: int
    model: str
    serial: str
    cache_mb: int
    lab_time_s: float
    uptime_s: float
    volumes: tuple[ArrayVolumeCounters, ...]
    tiers: tuple[ArrayTierCounters, ...]
    tier_drives: dict[str, int]  # tier name -> drives (the disk table's rows)
    controllers: tuple[ArrayControllerCounters, ...]
    avg_latency_ms: dict[str, tuple[int, int]]  # volume -> (read, write) since the last read


def objects(s: MemberState) -> list[tuple[tuple[int, ...], Any]]:
    """Every (OID, value) the agent answers, sorted by OID."""
    out: list[tuple[tuple[int, ...], Any]] = [
        (SYS_DESCR, v2c.OctetString(f"Storage Array Firmware V{'.'.join(map(str, FIRMWARE))} ({s.model})")),
        (SYS_OBJECT_ID, v2c.ObjectIdentifier(SYS_OBJECT_ID_PS)),
        (SYS_UPTIME, v2c.TimeTicks(int(s.uptime_s * 100) % 2**32)),
        (SYS_NAME, v2c.OctetString(s.name)),
    ]
    m = (GROUP_ID, s.member_index)
    failed = [c for c in s.controllers if c.state == "failed"]
    out += [
        ((*MEMBER, 2, *m), v2c.Counter32(int(s.lab_time_s) % 2**32)),
        ((*MEMBER, 9, *m), v2c.OctetString(s.name)),
        ((*MEMBER, 21, *m), v2c.Unsigned32(FIRMWARE[0])),
        ((*MEMBER, 22, *m), v2c.Unsigned32(FIRMWARE[1])),
        ((*MEMBER, 23, *m), v2c.Unsigned32(FIRMWARE[2])),
        ((*MEMBER_HEALTH, 1, *m), v2c.Integer32(HEALTH_WARNING if failed else HEALTH_NORMAL)),
        ((*MEMBER_CHASSIS, 1, *m), v2c.OctetString(s.model)),
        ((*MEMBER_CHASSIS, 2, *m), v2c.OctetString(s.serial)),
        ((*MEMBER_CHASSIS, 3, *m), v2c.Integer32(len(s.controllers))),
        ((*MEMBER_CHASSIS, 4, *m), v2c.Integer32(sum(s.tier_drives.values()))),
        ((*MEMBER_CHASSIS, 5, *m), v2c.Integer32(s.cache_mb)),
    ]
    tot = [sum(getattr(v, f) for v in s.volumes) for f in ("read_response_sum_s", "write_response_sum_s")]
    ops = [sum(getattr(v, f) for v in s.volumes) for f in ("reads", "writes", "bytes_read", "bytes_written")]
    out += [
        ((*MEMBER_CONN, 1, *m), v2c.Integer32(len(s.volumes))),
        ((*MEMBER_CONN, 2, *m), v2c.Counter64(round(tot[0] * 1000))),
        ((*MEMBER_CONN, 3, *m), v2c.Counter64(round(tot[1] * 1000))),
        ((*MEMBER_CONN, 6, *m), v2c.Counter64(round(ops[0]))),
        ((*MEMBER_CONN, 7, *m), v2c.Counter64(round(ops[1]))),
        ((*MEMBER_CONN, 8, *m), v2c.Counter64(round(ops[2]))),
        ((*MEMBER_CONN, 9, *m), v2c.Counter64(round(ops[3]))),
    ]
    active = next((c.controller for c in s.controllers if c.state == "active"), None)
    for k, c in enumerate(s.controllers, start=1):
        if c.state == "failed":
            continue  # a failed control module answers nothing
        cidx = (*m, k)
        out += [
            ((*CONTROLLER, 2, *cidx), v2c.OctetString("Type 10")),
            ((*CONTROLLER, 4, *cidx), v2c.OctetString(f"V{'.'.join(map(str, FIRMWARE))}")),
            ((*CONTROLLER, 6, *cidx), v2c.Counter32(int(s.uptime_s) % 2**32)),
            ((*CONTROLLER, 9, *cidx), v2c.Integer32(PRIMARY if c.controller == active else SECONDARY)),
        ]
    for j, v in enumerate(s.volumes, start=1):
        idx = (s.member_index, j)
        r_avg, w_avg = s.avg_latency_ms.get(v.volume, (0, 0))
        out += [
            ((*VOLUME, 4, *idx), v2c.OctetString(v.volume)),
            ((*VOLUME, 8, *idx), v2c.Integer32(VOLUME_SIZE_MB)),
            ((*VOLUME, 9, *idx), v2c.Integer32(1)),
            ((*VOLUME_STATS, 3, *idx), v2c.Counter64(round(v.bytes_read))),
            ((*VOLUME_STATS, 4, *idx), v2c.Counter64(round(v.bytes_written))),
            ((*VOLUME_STATS, 5, *idx), v2c.Unsigned32(1)),
            ((*VOLUME_STATS, 6, *idx), v2c.Counter64(round(v.read_response_sum_s * 1000))),
            ((*VOLUME_STATS, 7, *idx), v2c.Counter64(round(v.write_response_sum_s * 1000))),
            ((*VOLUME_STATS, 8, *idx), v2c.Counter64(round(v.reads))),
            ((*VOLUME_STATS, 9, *idx), v2c.Counter64(round(v.writes))),
            ((*VOLUME_STATS, 10, *idx), v2c.Gauge32(r_avg)),
            ((*VOLUME_STATS, 11, *idx), v2c.Gauge32(w_avg)),
        ]
    disk = 0
    by_tier = {t.tier: t for t in s.tiers}
    for tier, drives in s.tier_drives.items():
        enum, label, rpm = DISK_TYPE.get(tier, (2, "SAS", 0))
        t = by_tier.get(tier)
        for _ in range(drives):
            disk += 1
            didx = (*m, disk)
            share = 1.0 / drives
            out += [
                ((*DISK, 2, *didx), v2c.OctetString(label)),
                ((*DISK, 8, *didx), v2c.Integer32(1)),
                ((*DISK, 11, *didx), v2c.Integer32(disk - 1)),
                ((*DISK, 12, *didx), v2c.Integer32(enum)),
                ((*DISK, 13, *didx), v2c.Integer32(rpm)),
                ((*DISK_STATUS, 1, *didx), v2c.Counter64(round((t.reads + t.writes) * share) if t else 0)),
                ((*DISK_STATUS, 2, *didx), v2c.Counter64(int(t.bytes_read * share) // DISK_MB if t else 0)),
                (
                    (*DISK_STATUS, 3, *didx),
                    v2c.Counter64(int(t.bytes_written * share) // DISK_MB if t else 0),
                ),
                ((*DISK_STATUS, 4, *didx), v2c.Counter64(int(t.busy_drive_s * share) if t else 0)),
            ]
    out.sort(key=lambda kv: kv[0])
    return out
