"""``typeperf``: Windows performance counters in PDH-CSV 4.0, computed from the twin's raw counters.

Output of ``typeperf "<counter>" ... -sc N [-si S]`` (CRLF line ends)::

    <blank line>
    "(PDH-CSV 4.0)","\\\\PVS-01\\Processor(_Total)\\% Processor Time","\\\\PVS-01\\PhysicalDisk(1 D:)\\Avg. Disk Queue Length"
    "05/14/2007 09:00:05.000","43.118411","12.500000"
    ...                                   (N rows, one every S lab seconds; the first after one interval)
    Exiting, please wait...
    The command completed successfully.

- Host in paths: the machine name upper-cased (the NetBIOS name, as PDH writes it).
- ``(*)`` expands to one column per instance, in the provider's order: ``PhysicalDisk`` gets the
  twin's volumes (``0 C:``, ``1 D:``) then ``_Total``; ``Network Interface`` gets, on XP/2003
  machines, ``MS TCP Loopback interface`` first (as those systems list it), then the twin's NICs
  (no ``_Total``: Windows has none for that object); ``Processor`` gets ``0``..``n-1`` then
  ``_Total`` (per-CPU columns report the machine average: the twin models cores as a pool).
- Timestamps: row k is stamped ``start + k * S`` lab seconds (its sample time), in the box's local
  time, ``MM/DD/YYYY HH:MM:SS.mmm``, with no zone in the header, as console typeperf prints them:
  the zone is the server's declared ``time_zone:`` (UTC when it declares none), so a lab with a
  server off UTC exercises the client's conversion instead of hiding it.
- Every row is emitted, even when the simulator was starved (the event loop or the process did
  not run for a while): on waking, the loop writes each row whose time has passed, each stamped
  with its own time and computed from the twin's raw counters at that time. The twin answers only
  "now", so those are interpolated between the two twin readings that bound the row's time
  (:mod:`labctl.sim.catchup`): exact totals, the gap's average rate inside it.
- Values: 6 decimals, quoted; ``" "`` when a value cannot be computed (counter went backwards, as
  after a reboot, or an instance is gone), as PDH leaves it blank.
- Rates are computed as PDH does from two raw readings: ``% Processor Time`` = delta busy
  core-seconds / (delta t * cores) * 100, capped to 0..100; ``Avg. Disk Queue Length`` = delta
  queue-length integral / delta t; ``Avg. Disk sec/Transfer`` = delta response-time sum / delta
  transfers; ``.../sec`` = delta count / delta t; ``Memory\\Available MBytes`` and ``Current
  Bandwidth`` are the instantaneous values of the newer reading.
- Counter paths that do not resolve are skipped; none valid prints ``Error: No valid counters.``
  (exit 1). Without ``-sc`` sampling goes on until the client closes the channel.
- ``typeperf -q [object]`` lists ``\\Object(*)\\Counter`` paths, ``-qx [object]`` lists every
  instance; both end with ``The command completed successfully.``
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from labctl.sim.catchup import boundaries, fraction, interpolate
from labctl.sim.ssh.cmdline import Segment
from labctl.sim.ssh.shell import CRLF, MachineEnv, Shell
from labctl.sim.twin.interface import NicCounters, ServerCounters, VolumeCounters

log = logging.getLogger(__name__)

COMPLETED = "The command completed successfully."
EXITING = "Exiting, please wait..."
NO_VALID_COUNTERS = "Error: No valid counters."
LOOPBACK_NIC = "MS TCP Loopback interface"
LOOPBACK_BANDWIDTH_BPS = 10_000_000.0
TOTAL = "_Total"
# How far behind the clock a twin reading may be and still stand for a row's time, lab seconds: the
# physical twin steps its model only when 0.05 lab s have passed (PhysicalTwin.min_advance_s).
TWIN_LAG_S = 0.1


@dataclass(frozen=True)
class CounterSnapshot:
    counters: ServerCounters
    loopback: bool  # list the XP/2003 loopback interface

    @property
    def t(self) -> float:
        return self.counters.lab_time_s


# A counter's value from (older, newer, instance), or None when PDH would leave it blank.
Compute = Callable[[CounterSnapshot, CounterSnapshot, str], float | None]


def _per_sec(delta: float, dt: float) -> float | None:
    if dt <= 0 or delta < 0:
        return None
    return delta / dt


# --- Processor ---------------------------------------------------------------------------------


def _processor_instances(r: CounterSnapshot) -> list[str]:
    return [str(i) for i in range(r.counters.cpu_cores)] + [TOTAL]


def _pct_processor_time(a: CounterSnapshot, b: CounterSnapshot, _inst: str) -> float | None:
    dt = b.t - a.t
    busy = b.counters.cpu_busy_core_s - a.counters.cpu_busy_core_s
    cores = b.counters.cpu_cores
    if dt <= 0 or busy < 0 or cores <= 0:
        return None
    return min(100.0, max(0.0, busy / (dt * cores) * 100.0))


# --- Memory ------------------------------------------------------------------------------------


def _available_mbytes(_a: CounterSnapshot, b: CounterSnapshot, _inst: str) -> float | None:
    return float(math.floor(b.counters.memory_available_mb))


def _available_kbytes(_a: CounterSnapshot, b: CounterSnapshot, _inst: str) -> float | None:
    return float(math.floor(b.counters.memory_available_mb * 1024))


def _available_bytes(_a: CounterSnapshot, b: CounterSnapshot, _inst: str) -> float | None:
    return float(math.floor(b.counters.memory_available_mb * 1024 * 1024))


# --- Network Interface -------------------------------------------------------------------------


def _nic_instances(r: CounterSnapshot) -> list[str]:
    return ([LOOPBACK_NIC] if r.loopback else []) + [n.name for n in r.counters.nics]


def _nic(r: CounterSnapshot, inst: str) -> NicCounters | None:
    if inst == LOOPBACK_NIC and r.loopback:
        return NicCounters(LOOPBACK_NIC, 0.0, 0.0, LOOPBACK_BANDWIDTH_BPS)
    return next((n for n in r.counters.nics if n.name == inst), None)


def _nic_rate(attr: Callable[[NicCounters], float]) -> Compute:
    def compute(a: CounterSnapshot, b: CounterSnapshot, inst: str) -> float | None:
        na, nb = _nic(a, inst), _nic(b, inst)
        if na is None or nb is None:
            return None
        return _per_sec(attr(nb) - attr(na), b.t - a.t)

    return compute


def _current_bandwidth(_a: CounterSnapshot, b: CounterSnapshot, inst: str) -> float | None:
    n = _nic(b, inst)
    return None if n is None else n.bandwidth_bps


# --- PhysicalDisk ------------------------------------------------------------------------------


def _disk_instances(r: CounterSnapshot) -> list[str]:
    return [v.name for v in r.counters.volumes] + [TOTAL]


def _volume(r: CounterSnapshot, inst: str) -> VolumeCounters | None:
    vols = r.counters.volumes
    if inst == TOTAL:
        return VolumeCounters(
            TOTAL,
            transfers=sum(v.transfers for v in vols),
            reads=sum(v.reads for v in vols),
            writes=sum(v.writes for v in vols),
            bytes_read=sum(v.bytes_read for v in vols),
            bytes_written=sum(v.bytes_written for v in vols),
            queue_length_integral=sum(v.queue_length_integral for v in vols),
            response_time_sum_s=sum(v.response_time_sum_s for v in vols),
        )
    return next((v for v in vols if v.name == inst), None)


def _disk_rate(
    attr: Callable[[VolumeCounters], float], scale: float = 1.0, cap: float | None = None
) -> Compute:
    def compute(a: CounterSnapshot, b: CounterSnapshot, inst: str) -> float | None:
        va, vb = _volume(a, inst), _volume(b, inst)
        if va is None or vb is None:
            return None
        v = _per_sec(attr(vb) - attr(va), b.t - a.t)
        if v is None:
            return None
        v *= scale
        return min(cap, v) if cap is not None else v

    return compute


def _sec_per_transfer(a: CounterSnapshot, b: CounterSnapshot, inst: str) -> float | None:
    va, vb = _volume(a, inst), _volume(b, inst)
    if va is None or vb is None:
        return None
    n = vb.transfers - va.transfers
    rt = vb.response_time_sum_s - va.response_time_sum_s
    if n < 0 or rt < 0:
        return None
    return rt / n if n > 0 else 0.0


@dataclass(frozen=True)
class PerfObject:
    name: str
    instances: Callable[[CounterSnapshot], list[str]] | None  # None: a single-instance object (Memory)
    counters: dict[str, Compute]


OBJECTS: tuple[PerfObject, ...] = (
    PerfObject("Processor", _processor_instances, {"% Processor Time": _pct_processor_time}),
    PerfObject(
        "Memory",
        None,
        {
            "Available Bytes": _available_bytes,
            "Available KBytes": _available_kbytes,
            "Available MBytes": _available_mbytes,
        },
    ),
    PerfObject(
        "Network Interface",
        _nic_instances,
        {
            "Bytes Total/sec": _nic_rate(lambda n: n.bytes_sent + n.bytes_received),
            "Bytes Received/sec": _nic_rate(lambda n: n.bytes_received),
            "Bytes Sent/sec": _nic_rate(lambda n: n.bytes_sent),
            "Current Bandwidth": _current_bandwidth,
        },
    ),
    PerfObject(
        "PhysicalDisk",
        _disk_instances,
        {
            "% Disk Time": _disk_rate(lambda v: v.queue_length_integral, 100.0, cap=100.0),
            "Avg. Disk Queue Length": _disk_rate(lambda v: v.queue_length_integral),
            "Avg. Disk sec/Transfer": _sec_per_transfer,
            "Disk Transfers/sec": _disk_rate(lambda v: v.transfers),
            "Disk Reads/sec": _disk_rate(lambda v: v.reads),
            "Disk Writes/sec": _disk_rate(lambda v: v.writes),
            "Disk Bytes/sec": _disk_rate(lambda v: v.bytes_read + v.bytes_written),
            "Disk Read Bytes/sec": _disk_rate(lambda v: v.bytes_read),
            "Disk Write Bytes/sec": _disk_rate(lambda v: v.bytes_written),
        },
    ),
)
_BY_NAME = {o.name.lower(): o for o in OBJECTS}

_PATH = re.compile(r"^\\(?P<obj>[^\\(]+)(?:\((?P<inst>.*)\))?\\(?P<ctr>[^\\]+)$")


@dataclass(frozen=True)
class Column:
    obj: PerfObject
    instance: str | None
    counter: str

    def path(self, host: str) -> str:
        inst = f"({self.instance})" if self.instance is not None else ""
        return f"\\\\{host}\\{self.obj.name}{inst}\\{self.counter}"

    def value(self, a: CounterSnapshot, b: CounterSnapshot) -> float | None:
        try:
            return self.obj.counters[self.counter](a, b, self.instance or "")
        except (ArithmeticError, ValueError):
            return None


def expand(path: str, env: MachineEnv, reading: CounterSnapshot) -> list[Column]:
    """The columns a counter path stands for on this machine; [] if it does not resolve."""
    p = path.strip()
    if p.startswith("\\\\"):
        host, sep, rest = p[2:].partition("\\")
        if not sep or host.lower() not in (env.name.lower(), env.netbios_name.lower(), ".", "localhost"):
            return []
        p = "\\" + rest
    m = _PATH.match(p)
    if not m:
        return []
    obj = _BY_NAME.get(m["obj"].strip().lower())
    if obj is None:
        return []
    ctr_pat = m["ctr"].strip().lower()
    counters = [c for c in obj.counters if fnmatch.fnmatchcase(c.lower(), ctr_pat)]
    if not counters:
        return []
    inst_pat = m["inst"]
    if obj.instances is None:
        if inst_pat is not None:
            return []
        return [Column(obj, None, c) for c in counters]
    if inst_pat is None:
        return []
    names = obj.instances(reading)
    instances = [n for n in names if fnmatch.fnmatchcase(n.lower(), inst_pat.lower())]
    return [Column(obj, i, c) for c in counters for i in instances]


def _timestamp(lab_time: float, time_zone: str | None = None) -> str:
    """The box's local time with no zone, as console typeperf prints it (UTC when none is declared)."""
    dt = datetime.fromtimestamp(lab_time, tz=ZoneInfo(time_zone) if time_zone else UTC)
    return dt.strftime("%m/%d/%Y %H:%M:%S.") + f"{dt.microsecond // 1000:03d}"


def _fmt(v: float | None) -> str:
    return '" "' if v is None or math.isnan(v) else f'"{v:.6f}"'


def _interval_s(text: str) -> float:
    """``-si [[hh:]mm:]ss``."""
    parts = [int(p) for p in text.split(":")]
    if not 1 <= len(parts) <= 3 or any(p < 0 for p in parts):
        raise ValueError(text)
    secs = 0
    for p in parts:
        secs = secs * 60 + p
    if secs <= 0:
        raise ValueError(text)
    return float(secs)


def _loopback(env: MachineEnv) -> bool:
    os_name = env.machine.os.lower()
    return "2003" in os_name or "xp" in os_name or "2000" in os_name


def read(env: MachineEnv) -> CounterSnapshot:
    return CounterSnapshot(env.ctx.twin.server_counters(env.name), _loopback(env))


def at_time(older: CounterSnapshot, newer: CounterSnapshot, t: float) -> CounterSnapshot:
    """The reading at lab time ``t`` between two twin readings (see :mod:`labctl.sim.catchup`)."""
    counters = interpolate(older.counters, newer.counters, fraction(older.t, newer.t, t))
    return CounterSnapshot(dataclasses.replace(counters, lab_time_s=t), newer.loopback)


async def _read_off_loop(sh: Shell, last: CounterSnapshot) -> CounterSnapshot:
    """A twin reading taken in a worker thread: a twin busy stepping a storm holds its lock for a
    while, and the event loop serves every simulated box's SSH session meanwhile."""
    try:
        return await asyncio.to_thread(read, sh.env)
    except Exception:
        log.debug("%s: twin reading failed", sh.env.name, exc_info=True)
        return last


async def run(sh: Shell, seg: Segment) -> int:
    args = seg.argv[1:]
    counters: list[str] = []
    samples: int | None = None
    interval = 1.0
    sep = ","
    query: str | None = None
    query_object: str | None = None
    i = 0
    try:
        while i < len(args):
            a = args[i]
            opt = a.lower()
            if a.startswith(("-", "/")) and not a.startswith("\\"):
                opt = "-" + opt[1:]
                if opt == "-sc":
                    samples = int(args[i + 1])
                    if samples <= 0:
                        raise ValueError
                    i += 1
                elif opt == "-si":
                    interval = _interval_s(args[i + 1])
                    i += 1
                elif opt == "-f":
                    fmt = args[i + 1].upper()
                    if fmt not in ("CSV", "TSV"):
                        raise ValueError
                    sep = "," if fmt == "CSV" else "\t"
                    i += 1
                elif opt in ("-q", "-qx"):
                    query = opt
                    if i + 1 < len(args) and not args[i + 1].startswith(("-", "/")):
                        query_object = args[i + 1]
                        i += 1
                elif opt == "-s":
                    target = args[i + 1].lstrip("\\").lower()
                    if target not in (sh.env.name.lower(), ".", "localhost"):
                        await sh.out(CRLF + NO_VALID_COUNTERS + CRLF)
                        return 1
                    i += 1
                elif opt == "-y":
                    pass
                elif opt == "-?":
                    await sh.out(_usage())
                    return 0
                else:
                    raise ValueError
            else:
                counters.append(a)
            i += 1
    except (IndexError, ValueError):
        await sh.out(f"Error: Invalid parameter: {args[i] if i < len(args) else ''}{CRLF}{CRLF}{_usage()}")
        return 1

    if query:
        return await _query(sh, query == "-qx", query_object)

    try:
        first = read(sh.env)
    except Exception:
        log.debug("%s: twin has no counters", sh.env.name, exc_info=True)
        await sh.out(CRLF + NO_VALID_COUNTERS + CRLF)
        return 1
    columns = [c for path in counters for c in expand(path, sh.env, first)]
    if not columns:
        await sh.out(CRLF + NO_VALID_COUNTERS + CRLF)
        return 1
    tag = "PDH-CSV 4.0" if sep == "," else "PDH-TSV 4.0"
    host = sh.env.netbios_name
    header = sep.join([f'"({tag})"', *(f'"{c.path(host)}"' for c in columns)])
    await sh.out(CRLF + header + CRLF)

    clock = sh.ctx.clock
    start = clock.now()
    last = first  # the latest twin reading
    prev = first  # the reading behind the previous row, at that row's time
    emitted = 0
    while samples is None or emitted < samples:
        await sh.sleep_until_lab(start + (emitted + 1) * interval)
        cur = await _read_off_loop(sh, last)
        # every row whose time has passed, each at its own time: a starved loop catches up. Rows
        # are computed up to the reading's own time (the twin may lag the clock by a step); when
        # the twin could not be read at all, the rows still come, with the last reading's values.
        until = cur.t + TWIN_LAG_S if cur is not last else clock.now()
        rows = []
        for t in boundaries(start, interval, start + emitted * interval, until):
            if samples is not None and emitted >= samples:
                break
            here = at_time(last, cur, t)
            rows.append(
                sep.join(
                    [
                        f'"{_timestamp(t, sh.env.machine.time_zone)}"',
                        *(_fmt(c.value(prev, here)) for c in columns),
                    ]
                )
                + CRLF
            )
            prev = here
            emitted += 1
        if len(rows) > 1:
            log.info(
                "typeperf on %s: %d rows caught up, %.0f lab s between twin readings (starved)",
                sh.env.name,
                len(rows),
                cur.t - last.t,
            )
        last = cur
        if rows:
            await sh.out("".join(rows))
        else:  # the twin is behind the row's time: ask again shortly
            await sh.sleep_lab(TWIN_LAG_S)
    await sh.out(EXITING + CRLF + COMPLETED + CRLF)
    return 0


async def _query(sh: Shell, expand_instances: bool, object_name: str | None) -> int:
    objs = list(OBJECTS)
    if object_name:
        want = object_name.strip().strip("\\").lower()
        objs = [o for o in OBJECTS if o.name.lower() == want]
        if not objs:
            await sh.out(f"Error: The specified object was not found on the computer.{CRLF}")
            return 1
    reading: CounterSnapshot | None = None
    if expand_instances:
        try:
            reading = read(sh.env)
        except Exception:
            reading = None
    lines: list[str] = []
    for o in objs:
        for c in o.counters:
            if o.instances is None:
                lines.append(f"\\{o.name}\\{c}")
            elif not expand_instances:
                lines.append(f"\\{o.name}(*)\\{c}")
            elif reading is not None:
                lines.extend(f"\\{o.name}({i})\\{c}" for i in o.instances(reading))
    await sh.out("".join(line + CRLF for line in lines) + COMPLETED + CRLF)
    return 0


def _usage() -> str:
    return CRLF.join(
        [
            "Microsoft (R) TypePerf.exe (5.1.2600.2180)",
            "",
            "Typeperf writes performance data to the command window or to a log file. To",
            "stop Typeperf, press CTRL+C.",
            "",
            "Usage:",
            "typeperf { <counter [counter ...]> | -cf <filename> | -q [object] | -qx [object] } [options]",
            "",
            "Options:",
            "  -f <CSV|TSV|BIN|SQL>          Output file format. Default is CSV.",
            "  -si <[[hh:]mm:]ss>            Time between samples. Default is 1 second.",
            "  -sc <samples>                 Number of samples to collect.",
            "  -q [object]                   List installed counters (no instances).",
            "  -qx [object]                  List installed counters with instances.",
            "",
        ]
    )
