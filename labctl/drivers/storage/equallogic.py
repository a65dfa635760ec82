"""Dell EqualLogic PS over SNMP, as SAN HQ polls it (the PS Series has no REST API): pysnmp.

The inventory's URL says how to reach the member's agent: ``snmp://HOST[:PORT]`` is SNMPv2c with the
array's credential as the community; ``?version=3`` is SNMPv3 with the array's ``user`` as the USM
user and the credential as its authentication and privacy passphrase (``auth=sha|sha256|md5``,
``priv=aes|des|none``; default SHA, AES-128).

What is read (EqualLogic MIBs; OIDs as Checkmk's ``dell_eql_volume`` check and the compiled MIBs in
DotZero24/pysnmp-mibs give them):

- EQLVOLUME-MIB ``eqliscsiVolumeStatisticsTable`` (1.3.6.1.4.1.12740.5.1.7.34.1), per volume:
  .3 TxData / .4 RxData (octets read / written), .6 ReadLatency / .7 WriteLatency (cumulative
  milliseconds), .8 ReadOpCount / .9 WriteOpCount, all Counter64; names from
  ``eqliscsiVolumeTable`` .4. The volumes' rows are read in as few GETs as fit a PDU
  (``VOLUMES_PER_GET``), each with ``sysUpTime`` (hundredths of a second), so the rates are from one
  consistent reading: delta(counter) / delta(uptime), and the latency of a read is
  delta(ReadLatency) / delta(ReadOpCount), as SAN HQ computes them. The volumes of one poll are
  reported at the poll's last uptime, so the array's totals add up every volume of the poll.
- EQLDISK-MIB ``eqlDiskStatusTable`` per disk (.1 Xfers; .2 BytesRead and .3 BytesWritten, which
  the MIB counts in **Mbytes** despite their names, "total number of Mbytes read", Centreon's
  EqualLogic plugin multiplies them by 1024 * 1024; .4 BusyTime in **seconds**, "total time in
  seconds spent busy") summed per drive class (``eqlDiskTypeEnum`` SSD or not, ``eqlDiskRPM``: 1
  is non-rotating media): the tiers of a hybrid member (PS6010XVS: SSD and 15K SAS). Every column's
  unit is in ``COLUMN_UNITS``, which ``tests/conformance/snmp`` checks against the MIB's text.
- EQLMEMBER-MIB: name, model, firmware (``eqlMemberControllerMajor/Minor/MaintenanceVersion``),
  ``eqlMemberDateAndTime`` (the member's clock), number of controllers; EQLCONTROLLER-MIB
  ``eqlControllerPrimaryOrSecondary``: the primary control module is active, the secondary standby,
  one that no longer answers has failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_walk_cmd,
    get_cmd,
    usmAesCfb128Protocol,
    usmDESPrivProtocol,
    usmHMAC192SHA256AuthProtocol,
    usmHMACMD5AuthProtocol,
    usmHMACSHAAuthProtocol,
    usmNoPrivProtocol,
)

from labctl.drivers.storage.base import (
    BLOCK_BYTES,
    MB,
    ArrayInfo,
    ControllerMetrics,
    LunCounters,
    MetricBatch,
    RateTracker,
    StorageDriver,
    TierMetrics,
)
from labctl.errors import BadInputError, EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import StorageArray

DEFAULT_PORT = 161
SYS_DESCR, SYS_UPTIME = (1, 3, 6, 1, 2, 1, 1, 1, 0), (1, 3, 6, 1, 2, 1, 1, 3, 0)
EQL = (1, 3, 6, 1, 4, 1, 12740)
MEMBER = (*EQL, 2, 1, 1, 1)
MEMBER_HEALTH = (*EQL, 2, 1, 5, 1)
MEMBER_CHASSIS = (*EQL, 2, 1, 11, 1)
CONTROLLER = (*EQL, 4, 1, 1, 1)
VOLUME = (*EQL, 5, 1, 7, 1, 1)
VOLUME_STATS = (*EQL, 5, 1, 7, 34, 1)
DISK = (*EQL, 3, 1, 1, 1)
DISK_STATUS = (*EQL, 3, 1, 2, 1)
# eqliscsiVolumeStatisticsEntry columns: TxData, RxData, ReadLatency, WriteLatency, ReadOpCount, WriteOpCount
STATS_COLUMNS = {
    3: "tx_octets",
    4: "rx_octets",
    6: "read_latency_ms",
    7: "write_latency_ms",
    8: "reads",
    9: "writes",
}
DISK_STATUS_COLUMNS = {1: "xfers", 2: "read_mb", 3: "written_mb", 4: "busy_s"}
DISK_MB = (
    1024 * 1024
)  # eqlDiskStatusBytesRead/Written count Mbytes (EQLDISK-MIB), binary as Centreon reads them
SSD_TYPES = {3, 4, 6}  # eqlDiskTypeEnum: sata-ssd, sas-ssd, sas-sed-ssd
SSD_RPM = 1  # eqlDiskRPM: "if 1, disk is non-rotating media - SSD"
RPM_TIER = {15000: "15k", 10000: "10k", 7200: "nl", 5400: "nl"}
# The unit this driver reads each column in, as the MIB defines it (UNITS clause or DESCRIPTION);
# the conformance suite compiles the vendor's MIBs and checks every row of this table.
COLUMN_UNITS: dict[tuple[int, ...], tuple[str, str]] = {
    (*VOLUME_STATS, 3): ("eqliscsiVolumeStatsTxData", "octets"),
    (*VOLUME_STATS, 4): ("eqliscsiVolumeStatsRxData", "octets"),
    (*VOLUME_STATS, 6): ("eqliscsiVolumeStatsReadLatency", "ms"),
    (*VOLUME_STATS, 7): ("eqliscsiVolumeStatsWriteLatency", "ms"),
    (*VOLUME_STATS, 8): ("eqliscsiVolumeStatsReadOpCount", "operations"),
    (*VOLUME_STATS, 9): ("eqliscsiVolumeStatsWriteOpCount", "operations"),
    (*DISK_STATUS, 1): ("eqlDiskStatusXfers", "transfers"),
    (*DISK_STATUS, 2): ("eqlDiskStatusBytesRead", "Mbytes"),
    (*DISK_STATUS, 3): ("eqlDiskStatusBytesWritten", "Mbytes"),
    (*DISK_STATUS, 4): ("eqlDiskStatusBusyTime", "s"),
}
AUTH = {"sha": usmHMACSHAAuthProtocol, "md5": usmHMACMD5AuthProtocol, "sha256": usmHMAC192SHA256AuthProtocol}
PRIV = {"aes": usmAesCfb128Protocol, "des": usmDESPrivProtocol, "none": usmNoPrivProtocol}
CONTROLLER_NAMES = ("cm0", "cm1")
# Volume rows per GET: 6 columns each plus sysUpTime stay well inside a 1,472-byte UDP PDU (about 30
# bytes per Counter64 binding), as SAN HQ batches its polls; one GET per volume cost a round trip each.
VOLUMES_PER_GET = 6
# The disk table is four Counter64 per drive, most of a poll's bytes (and of pysnmp's decoding time):
# read at most once per this many seconds of the member's clock; the volumes every poll.
TIERS_EVERY_S = 60.0


class EqualLogicError(EndpointError):
    pass


def parse_url(url: str) -> tuple[str, int, dict[str, str]]:
    parts = urlsplit(url)
    if parts.scheme != "snmp" or not parts.hostname:
        raise BadInputError(f"{url!r}: an EqualLogic member's URL is snmp://HOST[:PORT][?version=3]")
    return (
        parts.hostname,
        parts.port or DEFAULT_PORT,
        {k: v[-1].lower() for k, v in parse_qs(parts.query).items()},
    )


class EqualLogicDriver(StorageDriver):
    def __init__(self, array: StorageArray, *, timeout_s: float = 5.0, retries: int = 1):
        self.array = array
        self.timeout_s = timeout_s
        self.retries = retries
        self.host, self.port, self.options = parse_url(array.url)
        self.version = self.options.get("version", "2c")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: SnmpEngine | None = None
        self._auth: CommunityData | UsmUserData | None = None
        self._target: UdpTransportTarget | None = None
        self.member: tuple[int, int] | None = None  # (eqlGroupId, eqlMemberIndex)
        self._volumes: dict[tuple[int, ...], str] = {}  # (member id, volume index) -> name
        self._disks: dict[tuple[int, ...], str] = {}  # disk row index (group, member, disk) -> tier
        self._clock_base = 0.0  # member clock at sysUpTime 0
        self._rates = RateTracker()
        self._tiers_prev: dict[str, tuple[float, list[float]]] = {}
        self._slots = len(CONTROLLER_NAMES)  # control module rows asked for in each poll
        self._started = False

    # --- SNMP plumbing ---------------------------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, Any], action: str) -> Any:
        if self._loop is None:
            coro.close()
            raise EqualLogicError(self.endpoint, action, "not connected", "call open() first")
        deadline = self.timeout_s * (self.retries + 1) + 5.0
        try:
            return self._loop.run_until_complete(asyncio.wait_for(coro, deadline))
        except TimeoutError:
            raise EndpointTimeout(
                self.endpoint, action, f"no SNMP answer within {deadline:g} s", "check the member's address"
            ) from None

    def _check(self, error_indication: Any, error_status: Any, action: str) -> None:
        if error_indication:
            text = str(error_indication)
            if "timeout" in text.lower() or "no snmp response" in text.lower():
                who = (
                    f"the community {self.array.password}"
                    if self.version != "3"
                    else f"the SNMPv3 user {self.array.user!r} and passphrase {self.array.password}"
                )
                raise EndpointTimeout(
                    self.endpoint,
                    action,
                    f"no SNMP answer within {self.timeout_s:g} s x {self.retries + 1} tries",
                    f"check the agent's address and {who}: an agent ignores a wrong one",
                )
            fix = (
                f"check the SNMPv3 user {self.array.user!r} and passphrase {self.array.password}"
                if self.version == "3"
                else ""
            )
            raise EqualLogicError(self.endpoint, action, text, fix)
        if error_status:
            raise EqualLogicError(self.endpoint, action, f"SNMP error {error_status.prettyPrint()}")

    def _get(self, oids: list[tuple[int, ...]], action: str) -> dict[tuple[int, ...], Any]:
        assert self._engine is not None and self._auth is not None and self._target is not None
        coro = get_cmd(
            self._engine,
            self._auth,
            self._target,
            ContextData(),
            *(ObjectType(ObjectIdentity(o)) for o in oids),
            lookupMib=False,  # numeric OIDs in, raw values out: resolving answers through MIBs costs a poll
        )
        ei, es, _idx, var_binds = self._run(coro, action)
        self._check(ei, es, action)
        out = {}
        for vb in var_binds:
            oid, value = tuple(vb[0]), vb[1]
            if value.__class__.__name__ not in ("NoSuchObject", "NoSuchInstance", "EndOfMibView"):
                out[oid] = value
        return out

    def _walk(self, base: tuple[int, ...], action: str) -> dict[tuple[int, ...], Any]:
        """Every object under ``base``, keyed by the OID's suffix (the row index with the column)."""
        assert self._engine is not None and self._auth is not None and self._target is not None

        async def walk() -> dict[tuple[int, ...], Any]:
            got: dict[tuple[int, ...], Any] = {}
            async for ei, es, _idx, var_binds in bulk_walk_cmd(
                self._engine,
                self._auth,
                self._target,
                ContextData(),
                0,
                50,
                ObjectType(ObjectIdentity(base)),
                lexicographicMode=False,
                lookupMib=False,
            ):
                self._check(ei, es, action)
                for vb in var_binds:
                    got[tuple(vb[0])[len(base) :]] = vb[1]
            return got

        return dict(self._run(walk(), action))

    # --- session -------------------------------------------------------------------------------
    def open(self) -> EqualLogicDriver:
        if self._loop is not None:
            return self
        secret = resolve_credential(self.array.password, self.endpoint)
        if self.version == "3":
            priv = PRIV.get(self.options.get("priv", "aes"), usmAesCfb128Protocol)
            self._auth = UsmUserData(
                self.array.user,
                secret,
                None if priv is usmNoPrivProtocol else secret,
                authProtocol=AUTH.get(self.options.get("auth", "sha"), usmHMACSHAAuthProtocol),
                privProtocol=priv,
            )
        else:
            self._auth = CommunityData(secret, mpModel=1)
        self._loop = asyncio.new_event_loop()
        try:
            self._engine = SnmpEngine()
            self._target = self._run(
                UdpTransportTarget.create(
                    (self.host, self.port), timeout=self.timeout_s, retries=self.retries
                ),
                "open the SNMP transport",
            )
            rows = self._walk((*MEMBER, 9), "find the member")
            if not rows:
                raise EqualLogicError(
                    self.endpoint,
                    "find the member",
                    "the agent answers no EQLMEMBER-MIB eqlMemberName",
                    "point the URL at a PS Series group or member address",
                )
            idx = next(iter(rows))
            self.member = (int(idx[0]), int(idx[1]))
        except BaseException:
            self.close()
            raise
        return self

    @property
    def is_open(self) -> bool:
        return self._loop is not None and self.member is not None

    def close(self) -> None:
        loop, eng = self._loop, self._engine
        self._loop, self._engine, self._target, self.member = None, None, None, None
        self._started = False
        if eng is not None:
            try:
                eng.close_dispatcher()
            except Exception:
                pass
        if loop is not None:
            # let the dispatcher's timer task see its cancellation before the loop goes
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    # --- what the array is ----------------------------------------------------------------------
    def info(self) -> ArrayInfo:
        assert self.member is not None
        m = self.member
        got = self._get(
            [
                (*MEMBER, 9, *m),
                (*MEMBER_CHASSIS, 1, *m),
                (*MEMBER, 21, *m),
                (*MEMBER, 22, *m),
                (*MEMBER, 23, *m),
            ],
            "read the member",
        )
        firmware = ".".join(str(int(got.get((*MEMBER, c, *m), 0))) for c in (21, 22, 23))
        return ArrayInfo(
            name=str(got.get((*MEMBER, 9, *m), "")),
            model=str(got.get((*MEMBER_CHASSIS, 1, *m), "")),
            software_version=f"V{firmware}",
            api_version=f"SNMPv{self.version}",
        )

    def volume_names(self) -> dict[str, str]:
        rows = self._walk((*VOLUME, 4), "list volumes")
        self._volumes = {idx: str(v) for idx, v in rows.items()}
        return {".".join(map(str, idx)): name for idx, name in self._volumes.items()}

    def missing_metrics(self) -> list[str]:
        if not self._volumes:
            self.volume_names()
        if not self._volumes:
            return []
        idx = next(iter(self._volumes))
        got = self._get([(*VOLUME_STATS, c, *idx) for c in STATS_COLUMNS], "read volume statistics")
        return [
            f"EQLVOLUME-MIB eqliscsiVolumeStatistics.{c} ({name})"
            for c, name in STATS_COLUMNS.items()
            if (*VOLUME_STATS, c, *idx) not in got
        ]

    # --- metrics --------------------------------------------------------------------------------
    def start_metrics(self, interval_s: float) -> None:
        """SNMP has no collection to start: learn the volumes, the disks and the member's clock."""
        assert self.member is not None
        self.volume_names()
        types = self._walk((*DISK, 12), "list disks")
        rpms = self._walk((*DISK, 13), "list disks")
        # a walk keys rows by the OID after its base: (group, member, disk) for one column
        self._disks = {
            idx: "ssd"
            if int(v) in SSD_TYPES or int(rpms.get(idx, 0)) == SSD_RPM
            else RPM_TIER.get(int(rpms.get(idx, 0)), "hdd")
            for idx, v in types.items()
        }
        clock = self._get([SYS_UPTIME, (*MEMBER, 2, *self.member)], "read the member's clock")
        self._clock_base = (
            float(clock.get((*MEMBER, 2, *self.member), 0)) - float(clock.get(SYS_UPTIME, 0)) / 100.0
        )
        self._slots = max(len(CONTROLLER_NAMES), len(self.controllers()))
        self._rates = RateTracker()
        self._tiers_prev = {}
        # the baseline reading: the first read_metrics already has an interval to report
        self._rates.feed(self.read_counters())
        self.read_tiers()
        self._started = True

    def _ts(self, uptime: Any) -> float:
        return self._clock_base + float(uptime) / 100.0

    def read_counters(self, primary: str | None = None) -> list[LunCounters]:
        """Every volume's counters, ``VOLUMES_PER_GET`` rows per GET, each GET with its sysUpTime."""
        if primary is None:
            primary = next((c.controller for c in self.controllers() if c.state == "active"), None)
        _, out = self._poll(primary)
        return out

    def _poll(self, primary: str | None = None) -> tuple[list[ControllerMetrics], list[LunCounters]]:
        """One poll in as few round trips as fit: the first GET carries the member's controller
        count and roles with the first volumes' rows (``primary`` None: the active one of them)."""
        assert self.member is not None
        m = self.member
        head = [(*MEMBER_CHASSIS, 3, *m), *((*CONTROLLER, 9, *m, k) for k in range(1, self._slots + 1))]
        rows = list(self._volumes.items())
        chunks = [rows[k : k + VOLUMES_PER_GET] for k in range(0, len(rows), VOLUMES_PER_GET)] or [[]]
        ctrls: list[ControllerMetrics] = []
        out: list[LunCounters] = []
        for n, chunk in enumerate(chunks):
            vols = [(*VOLUME_STATS, c, *idx) for idx, _ in chunk for c in STATS_COLUMNS]
            action = f"read volumes {chunk[0][1]}..{chunk[-1][1]}" if chunk else "read the member"
            got = self._get([SYS_UPTIME, *(head if n == 0 else []), *vols], action)
            if SYS_UPTIME not in got:
                continue
            ts = self._ts(got[SYS_UPTIME])
            if n == 0:
                ctrls = self._controller_states(got, ts)
                if primary is None:
                    primary = next((c.controller for c in ctrls if c.state == "active"), None)
            for idx, name in chunk:
                if any((*VOLUME_STATS, c, *idx) not in got for c in STATS_COLUMNS):
                    continue  # a volume deleted since the list was read
                col = {f: float(got[(*VOLUME_STATS, c, *idx)]) for c, f in STATS_COLUMNS.items()}
                rt, wt = col["read_latency_ms"] * 1000.0, col["write_latency_ms"] * 1000.0
                out.append(
                    LunCounters(
                        name,
                        ts,
                        col["reads"],
                        col["writes"],
                        col["tx_octets"] / BLOCK_BYTES,
                        col["rx_octets"] / BLOCK_BYTES,
                        rt + wt,
                        read_time_us=rt,
                        write_time_us=wt,
                        controller=primary,
                    )
                )
        return ctrls, out

    def _controller_states(self, got: dict[tuple[int, ...], Any], ts: float) -> list[ControllerMetrics]:
        """Control modules from one GET of the chassis count and the role column (a module that no
        longer answers has no row: failed)."""
        assert self.member is not None
        m = self.member
        n = int(got.get((*MEMBER_CHASSIS, 3, *m), self._slots))
        out = []
        for k in range(1, n + 1):
            name = CONTROLLER_NAMES[k - 1] if k <= len(CONTROLLER_NAMES) else f"cm{k - 1}"
            role = got.get((*CONTROLLER, 9, *m, k))
            state = "failed" if role is None else ("active" if int(role) == 1 else "standby")
            out.append(ControllerMetrics(name, ts, state))
        return out

    def read_tiers(self) -> list[TierMetrics]:
        """Disk counters summed per drive class, as rates since the previous read."""
        uptime = self._get([SYS_UPTIME], "read the member's clock").get(SYS_UPTIME, 0)
        rows = self._walk(DISK_STATUS, "read disk statistics")
        ts = self._ts(uptime)
        sums: dict[str, list[float]] = {}
        drives: dict[str, int] = {}
        for disk, tier in self._disks.items():
            s = sums.setdefault(tier, [0.0, 0.0, 0.0, 0.0])
            drives[tier] = drives.get(tier, 0) + 1
            for k, col in enumerate((1, 2, 3, 4)):
                s[k] += float(rows.get((col, *disk), 0))
        out = []
        for tier, cur in sums.items():
            prev = self._tiers_prev.get(tier)
            self._tiers_prev[tier] = (ts, cur)
            if prev is None or ts <= prev[0]:
                continue
            dt = ts - prev[0]
            d = [c - p for c, p in zip(cur, prev[1], strict=True)]
            if min(d) < 0:
                continue
            out.append(
                TierMetrics(
                    tier=tier,
                    ts=ts,
                    interval_s=dt,
                    iops=d[0] / dt,
                    read_mb_s=d[1] * DISK_MB / dt / MB,
                    write_mb_s=d[2] * DISK_MB / dt / MB,
                    busy_pct=100.0 * d[3] / dt / drives[tier],  # BusyTime counts seconds
                )
            )
        return out

    def controllers(self) -> list[ControllerMetrics]:
        assert self.member is not None
        m = self.member
        roles = self._walk((*CONTROLLER, 9), "read the control modules")
        count = self._get([(*MEMBER_CHASSIS, 3, *m), SYS_UPTIME], "read the member")
        n = int(count.get((*MEMBER_CHASSIS, 3, *m), len(roles)))
        ts = self._ts(count.get(SYS_UPTIME, 0))
        by_index = {int(idx[-1]): int(v) for idx, v in roles.items() if tuple(idx[:2]) == m}
        out = []
        for k in range(1, n + 1):
            name = CONTROLLER_NAMES[k - 1] if k <= len(CONTROLLER_NAMES) else f"cm{k - 1}"
            role = by_index.get(k)
            state = "failed" if role is None else ("active" if role == 1 else "standby")
            out.append(ControllerMetrics(name, ts, state))
        return out

    def read_metrics(self) -> MetricBatch:
        if not self._started:
            raise EqualLogicError(
                self.endpoint, "read metrics", "metrics not started", "call start_metrics()"
            )
        ctrls, counters = self._poll()
        rates = self._rates.feed(counters)
        # one poll, one time: the array's totals group volumes by timestamp (MetricBatch.readings)
        end = max((v.ts for v in rates), default=0.0)
        volumes = tuple(replace(v, ts=end) for v in rates)
        last_tiers = max((prev[0] for prev in self._tiers_prev.values()), default=None)
        due = last_tiers is None or end == 0.0 or end - last_tiers >= TIERS_EVERY_S - 1e-6
        tiers = tuple(self.read_tiers()) if due else ()
        return MetricBatch(volumes=volumes, tiers=tiers, controllers=tuple(ctrls))

    def stop_metrics(self) -> None:
        self._started = False
