"""Windows performance counters over SSH with ``typeperf``: command lines and the PDH-CSV parser.

``typeperf`` prints PDH-CSV 4.0: a blank line, a quoted header whose first cell is
``(PDH-CSV 4.0)`` (optionally followed by the time zone name and its bias in minutes, e.g.
``(PDH-CSV 4.0) (W. Europe Standard Time)(-60)``), one column per counter instance (a wildcard
``(*)`` expands into one column per instance), then one row per sample stamped with the server's
local time ``MM/DD/YYYY HH:MM:SS.mmm``, and finally status lines such as ``Exiting, please wait...``
and ``The command completed successfully.``. Those timestamps are the source's own and are kept.

Time zones: console ``typeperf`` prints ``"(PDH-CSV 4.0)"`` and local times with no zone at all;
logs written by Performance Monitor / ``relog`` carry the zone's (localised) name and its bias,
``"(PDH-CSV 4.0) (Pacific Standard Time)(480)"`` (UTC = local + bias minutes; the name can hold
parentheses of its own, ``(Maroc (heure d'été))``). The parser never guesses: a local time becomes
UTC through the zone the inventory declares for the server (``time_zone:``, IANA, DST-correct per
row), else through the header's bias; with neither it refuses (:class:`TimeZoneUnknown`) instead of
taking the local time for UTC, which shifted a Windows server's samples by hours against the
arrays' and vCenter's. When both are there and disagree, it refuses too.

Missing values: PDH leaves a cell it could not compute empty or as ``" "``; those become no reading.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from labctl.drivers.readings import Reading

# What a streaming-server plan reads (CPU, memory, NICs, disks); `labctl check` asks for them.
SERVER_COUNTERS: tuple[str, ...] = (
    r"\Processor(_Total)\% Processor Time",
    r"\Memory\Available MBytes",
    r"\Network Interface(*)\Bytes Sent/sec",
    r"\Network Interface(*)\Bytes Received/sec",
    r"\Network Interface(*)\Current Bandwidth",
    r"\PhysicalDisk(*)\Avg. Disk Queue Length",
    r"\PhysicalDisk(*)\Disk Transfers/sec",
    r"\PhysicalDisk(*)\Avg. Disk sec/Transfer",
)

# (object, counter) -> (metric, unit, factor)
_METRICS: dict[tuple[str, str], tuple[str, str, float]] = {
    ("processor", "% processor time"): ("cpu_pct", "%", 1.0),
    ("processor", "% user time"): ("cpu_user_pct", "%", 1.0),
    ("processor", "% privileged time"): ("cpu_privileged_pct", "%", 1.0),
    ("memory", "available mbytes"): ("memory_available_mb", "MB", 1.0),
    ("memory", "committed bytes"): ("memory_committed_mb", "MB", 1.0 / 2**20),
    ("memory", "% committed bytes in use"): ("memory_committed_pct", "%", 1.0),
    ("memory", "cache bytes"): ("memory_cache_mb", "MB", 1.0 / 2**20),
    ("memory", "pages/sec"): ("memory_pages_per_s", "pages/s", 1.0),
    ("network interface", "bytes sent/sec"): ("nic_sent_bytes_per_s", "B/s", 1.0),
    ("network interface", "bytes received/sec"): ("nic_received_bytes_per_s", "B/s", 1.0),
    ("network interface", "bytes total/sec"): ("nic_total_bytes_per_s", "B/s", 1.0),
    ("network interface", "current bandwidth"): ("nic_bandwidth_bps", "bit/s", 1.0),
    ("physicaldisk", "avg. disk queue length"): ("disk_queue_len", "requests", 1.0),
    ("physicaldisk", "current disk queue length"): ("disk_current_queue_len", "requests", 1.0),
    ("physicaldisk", "disk transfers/sec"): ("disk_iops", "IO/s", 1.0),
    ("physicaldisk", "disk reads/sec"): ("disk_read_iops", "IO/s", 1.0),
    ("physicaldisk", "disk writes/sec"): ("disk_write_iops", "IO/s", 1.0),
    ("physicaldisk", "disk bytes/sec"): ("disk_bytes_per_s", "B/s", 1.0),
    ("physicaldisk", "avg. disk sec/transfer"): ("disk_latency_ms", "ms", 1000.0),
    ("physicaldisk", "% disk time"): ("disk_busy_pct", "%", 1.0),
}

# "(PDH-CSV 4.0)" alone, or with "(zone name)(bias)"; a localised zone name may hold parentheses
_HEADER = re.compile(r"^\(PDH-CSV (?P<version>[\d.]+)\)(?:\s*\((?P<tz>.*)\)\((?P<bias>[-+]?\d+)\))?\s*$")


class TypeperfError(ValueError):
    """The output is not PDH-CSV, or typeperf reported an error instead of data."""


class TimeZoneUnknown(TypeperfError):
    """typeperf's local times cannot be placed in UTC: no zone in the header and none declared."""


@dataclass(frozen=True)
class CounterPath:
    host: str  # "" when the path has no \\HOST prefix
    obj: str
    instance: str | None
    counter: str

    @classmethod
    def parse(cls, path: str) -> CounterPath:
        """``\\\\HOST\\Object(Instance)\\Counter`` or ``\\Object\\Counter``."""
        host = ""
        rest = path
        if rest.startswith("\\\\"):
            host, _, rest = rest[2:].partition("\\")
        else:
            rest = rest.lstrip("\\")
        objinst, sep, counter = rest.rpartition("\\")
        if not sep or not objinst or not counter:
            raise TypeperfError(f"malformed counter path {path!r}")
        instance = None
        if objinst.endswith(")") and "(" in objinst:
            i = objinst.index("(")
            instance = objinst[i + 1 : -1]
            objinst = objinst[:i]
        return cls(host, objinst, instance, counter)

    def wildcard(self) -> str:
        """The path as ``typeperf -q`` lists it: no host, instance as ``(*)``."""
        inst = "(*)" if self.instance is not None else ""
        return f"\\{self.obj}{inst}\\{self.counter}"


def entity_instance(obj: str, instance: str | None) -> str | None:
    """The part of an entity name an instance contributes: PhysicalDisk ``1 D:`` -> ``D:``."""
    if instance is None:
        return None
    if obj.lower() == "physicaldisk":
        m = re.search(r"([A-Za-z]:)", instance)
        if m and instance != "_Total":
            return " ".join(re.findall(r"[A-Za-z]:", instance))
    if obj.lower() == "processor" and instance == "_Total":
        return None
    return instance


def metric_for(obj: str, counter: str) -> tuple[str, str, float]:
    known = _METRICS.get((obj.lower(), counter.lower()))
    if known:
        return known
    slug = re.sub(r"[^a-z0-9]+", "_", f"{obj} {counter}".lower().replace("%", "pct ")).strip("_")
    return slug, "", 1.0


@dataclass(frozen=True)
class PdhTable:
    columns: tuple[CounterPath, ...]
    utc_bias_min: int | None  # UTC = local + bias (Windows convention); None: not in the header
    rows: tuple[tuple[datetime, tuple[float | None, ...]], ...]  # naive local timestamps
    zone_name: str | None = None  # the header's (localised) zone name, when it has one


def parse_pdh_csv(text: str) -> PdhTable:
    """Parse typeperf output; tolerant of the leading blank line and the trailing status lines."""
    lines = [ln for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    data_lines = []
    header_seen = False
    for ln in lines:
        stripped = ln.strip()
        if not stripped:
            continue
        if not header_seen:
            if stripped.startswith('"(PDH-CSV'):
                header_seen = True
                data_lines.append(stripped)
            elif stripped.lower().startswith("error") or "no valid counters" in stripped.lower():
                raise TypeperfError(f"typeperf reported: {stripped}")
            continue
        if not stripped.startswith('"'):
            # every data row is quoted; anything else after the header is typeperf's status text,
            # in the server's language ("Exiting, please wait...", "Der Befehl wurde erfolgreich
            # ausgeführt."): English or not, it carries no sample
            continue
        data_lines.append(stripped)
    if not header_seen:
        raise TypeperfError("no PDH-CSV header in typeperf output")
    reader = list(csv.reader(io.StringIO("\n".join(data_lines))))
    header, body = reader[0], reader[1:]
    m = _HEADER.match(header[0])
    if not m:
        raise TypeperfError(f"unexpected first header cell {header[0]!r}")
    bias = int(m["bias"]) if m["bias"] is not None else None
    zone_name = m["tz"] if m["bias"] is not None else None
    columns = tuple(CounterPath.parse(h) for h in header[1:])
    rows = []
    for cells in body:
        if len(cells) != len(header):
            raise TypeperfError(f"row has {len(cells)} cells, header has {len(header)}: {cells[:2]}")
        try:
            ts = datetime.strptime(cells[0], "%m/%d/%Y %H:%M:%S.%f")
        except ValueError:
            raise TypeperfError(f"malformed timestamp {cells[0]!r}") from None
        values: list[float | None] = []
        for c in cells[1:]:
            c = c.strip()
            try:
                values.append(float(c) if c else None)
            except ValueError:
                values.append(None)
        rows.append((ts, tuple(values)))
    return PdhTable(columns, bias, tuple(rows), zone_name)


def to_epoch(local: datetime, utc_bias_min: int) -> float:
    """A PDH local timestamp as seconds since the epoch: UTC = local + bias."""
    return (local + timedelta(minutes=utc_bias_min)).replace(tzinfo=UTC).timestamp()


def zone_epoch(local: datetime, time_zone: str) -> float:
    """A local timestamp in an IANA zone as seconds since the epoch (DST-correct; in the hour a
    clock repeats, the first of the two, as PDH's own local time cannot tell them apart)."""
    return local.replace(tzinfo=ZoneInfo(time_zone), fold=0).timestamp()


def clock(table: PdhTable, machine: str, time_zone: str | None) -> Callable[[datetime], float]:
    """How this table's local times become epoch seconds; refuses to guess (see the module doc)."""
    if time_zone is not None:
        if table.utc_bias_min is not None and table.rows:
            local = table.rows[0][0]
            offset = local.replace(tzinfo=ZoneInfo(time_zone)).utcoffset() or timedelta(0)
            declared = -round(offset.total_seconds() / 60)  # Windows' bias: UTC - local
            if declared != table.utc_bias_min:
                raise TypeperfError(
                    f"{machine}: typeperf's header says ({table.zone_name})({table.utc_bias_min}) but the "
                    f"inventory's time_zone {time_zone} has a bias of {declared} min then; fix the server's "
                    "time_zone: in the inventory (or the server's clock)"
                )
        return lambda local: zone_epoch(local, time_zone)
    if table.utc_bias_min is not None:
        bias = table.utc_bias_min
        return lambda local: to_epoch(local, bias)
    raise TimeZoneUnknown(
        f"{machine}: typeperf printed local times without a zone and the inventory declares none; "
        f"add time_zone: <IANA zone, e.g. America/Los_Angeles or UTC> to server {machine}"
    )


def samples_from_pdh(
    text: str,
    machine: str,
    *,
    time_zone: str | None = None,
    memory_total_mb: float | None = None,
) -> list[Reading]:
    """Readings from typeperf output, one per cell, plus derived NIC utilisation and used memory.

    ``time_zone`` is the server's clock zone as the inventory declares it (IANA); without it the
    header's bias is used, and without either the output is refused (:class:`TimeZoneUnknown`).
    ``memory_total_mb`` (from the inventory) turns ``Available MBytes`` into ``memory_used_mb``.
    """
    table = parse_pdh_csv(text)
    epoch = clock(table, machine, time_zone) if table.rows else (lambda local: 0.0)
    metas = []
    for col in table.columns:
        metric, unit, factor = metric_for(col.obj, col.counter)
        inst = entity_instance(col.obj, col.instance)
        entity = f"{machine}/{inst}" if inst else machine
        metas.append((entity, metric, unit, factor))
    out: list[Reading] = []
    for local, values in table.rows:
        ts = epoch(local)
        by_key: dict[tuple[str, str], float] = {}
        for (entity, metric, unit, factor), v in zip(metas, values, strict=True):
            if v is None:
                continue
            value = v * factor
            by_key[(entity, metric)] = value
            out.append(Reading(entity, metric, unit, ts, value))
        for (entity, metric), sent in list(by_key.items()):
            if metric == "nic_sent_bytes_per_s":
                bw = by_key.get((entity, "nic_bandwidth_bps"))
                if bw:
                    out.append(Reading(entity, "nic_sent_util_pct", "%", ts, sent * 8 / bw * 100))
            if metric == "nic_received_bytes_per_s":
                bw = by_key.get((entity, "nic_bandwidth_bps"))
                if bw:
                    out.append(Reading(entity, "nic_received_util_pct", "%", ts, sent * 8 / bw * 100))
            if metric == "memory_available_mb" and memory_total_mb:
                out.append(Reading(entity, "memory_used_mb", "MB", ts, memory_total_mb - sent))
    return out


# --- command lines -------------------------------------------------------------------------------


def interval_arg(seconds: float) -> str:
    """``-si`` takes ``[[hh:]mm:]ss`` in whole seconds, at least 1."""
    s = max(1, round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h:02d}:{m:02d}:{sec:02d}"
    if m:
        return f"{m:02d}:{sec:02d}"
    return str(sec)


def sample_argv(counters: Sequence[str], samples: int, interval_s: float) -> list[str]:
    """``typeperf "<counter>" ... -sc N -si S`` as an argument list (quoted by the SSH driver)."""
    if samples < 1:
        raise ValueError("samples must be at least 1")
    return ["typeperf", *counters, "-sc", str(samples), "-si", interval_arg(interval_s)]


def query_argv(obj: str | None = None) -> list[str]:
    """``typeperf -q [object]``: list the counters a machine has."""
    return ["typeperf", "-q", *([obj] if obj else [])]


def parse_query(text: str) -> set[str]:
    """Counter paths from ``typeperf -q`` output, normalised (lower case, instances as ``(*)``)."""
    out = set()
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("\\"):
            try:
                out.add(CounterPath.parse(ln).wildcard().lower())
            except TypeperfError:
                continue
    return out


def missing_counters(wanted: Iterable[str], listed: set[str]) -> list[str]:
    """The ``wanted`` counter paths that ``typeperf -q`` did not list."""
    return [w for w in wanted if CounterPath.parse(w).wildcard().lower() not in listed]


def query_objects(counters: Iterable[str]) -> list[str]:
    """The distinct objects of ``counters``, in order (one ``typeperf -q`` per object)."""
    seen: dict[str, None] = {}
    for c in counters:
        seen.setdefault(CounterPath.parse(c).obj, None)
    return list(seen)


class PdhStream:
    """Parse typeperf output one line at a time (``typeperf ... -si S`` without ``-sc`` streams)."""

    def __init__(self, machine: str, *, time_zone: str | None = None, memory_total_mb: float | None = None):
        self.machine = machine
        self.time_zone = time_zone
        self.memory_total_mb = memory_total_mb
        self.header: str | None = None

    def feed(self, line: str) -> list[Reading]:
        s = line.strip()
        if not s:
            return []
        if self.header is None:
            if s.startswith('"(PDH-CSV'):
                self.header = s
            elif s.lower().startswith("error"):
                raise TypeperfError(f"typeperf reported: {s}")
            return []
        if not s.startswith('"'):
            return []  # "Exiting, please wait..." and the like
        return samples_from_pdh(
            self.header + "\n" + s,
            self.machine,
            time_zone=self.time_zone,
            memory_total_mb=self.memory_total_mb,
        )
