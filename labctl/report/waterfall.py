"""The logon waterfall of a VDI cell, for every report (issue 24): each phase's percentiles over the
cell's logons, the same against concurrency, and the phases the mechanism could not measure, with
the launchers' reason. Pure: the charts (:mod:`labctl.report.figures_vdi_waterfall`) and the
certificate (:mod:`labctl.report.certify.kinds.vdi`) draw and word what this computes.

What a run folder holds of a logon (:mod:`labctl.scenarios.vdi_logons`): in ``series.csv``, source
``sessions``, entity the pool, one sample per measured phase of each session, metric
``logon_<phase>_s``, stamped with the session's launch (``logon_total_s``: launch to the first
workload operation); in the cell summary's ``extra``, ``logon_<phase>_unmeasured`` (the reason) for
each phase no session measured and ``logon_connectors`` (the launchers' connectors). A session's
samples share its launch time, which is how they are put back together.

Concurrency of a logon: the storm's sessions logged on (their workload reported in: launch + total -
first operation) before that logon's launch. Sessions that log off are not subtracted: a storm's
logons come before its logoff.

Percentiles are :func:`labctl.records.rt_index.quantile` (linear between ranks), the summary's own,
so the report's p50/p95 are the summary's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from labctl.records import rt_index
from labctl.records.series import Series

SOURCE = "sessions"
TOTAL = "total"
UNACCOUNTED = "unaccounted"
FIRST_OPERATION = "first_operation"
# The launchers' order (labctl/launcher/waterfall.py), the twin's one-phase ``logon`` (labctl/sim/sessions/
# waterfall.py) where the real ones split it, then the time no phase covers. Unknown names go last.
ORDER = (
    "brokering",
    "machine_ready",
    "protocol_connect",
    "authentication",
    "profile_load",
    "group_policy",
    "shell_ready",
    "logon",
    FIRST_OPERATION,
    UNACCOUNTED,
)
WORDS = {
    "brokering": "brokering",
    "machine_ready": "machine power-on / ready",
    "protocol_connect": "protocol connect",
    "authentication": "authentication",
    "profile_load": "profile load",
    "group_policy": "group policy",
    "shell_ready": "shell ready",
    "logon": "logon (one phase)",
    FIRST_OPERATION: "first workload operation",
    UNACCOUNTED: "unaccounted",
    TOTAL: "total: launch to first operation",
}
MAX_BINS = 8  # concurrency bins on a chart: more would leave a few logons per bar
TIME_BINS = 60  # launch-time spans of a storm too large to draw logon by logon
_METRIC = re.compile(r"^logon_(?P<phase>.+)_s$")
_UNMEASURED = re.compile(r"^logon_(?P<phase>.+)_unmeasured$")


def words(phase: str) -> str:
    return WORDS.get(phase, phase.replace("_", " "))


@dataclass(frozen=True)
class Logon:
    """One session's logon: its launch (lab seconds), its measured phases' durations (``total``
    included) and the sessions logged on when it launched."""

    launch_ts: float
    phases_s: Mapping[str, float]
    concurrency: int = 0

    @property
    def logged_on_ts(self) -> float:
        """When its workload reported in: the end of the logon, before the first operation."""
        total = self.phases_s.get(TOTAL, 0.0)
        return self.launch_ts + total - self.phases_s.get(FIRST_OPERATION, 0.0)


@dataclass(frozen=True)
class PhaseStats:
    """One row of the waterfall: a measured phase's percentiles, or why it was not measured."""

    name: str
    n: int
    p50_s: float | None = None
    p95_s: float | None = None
    max_s: float | None = None
    unmeasured: str = ""  # "not measured by rdp: direct RDP has no broker ..." when n == 0

    @property
    def measured(self) -> bool:
        return self.n > 0


@dataclass(frozen=True)
class Bin:
    """The logons launched with ``lo``..``hi`` sessions logged on, and each phase's p50/p95 among them."""

    lo: int
    hi: int
    n: int
    p50_s: Mapping[str, float]
    p95_s: Mapping[str, float]

    @property
    def label(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


@dataclass(frozen=True)
class Waterfall:
    """A cell's logons phase by phase. ``phases``: in order, measured or not, ``total`` last."""

    connector: str
    logons: tuple[Logon, ...]
    phases: tuple[PhaseStats, ...]
    reasons: Mapping[str, str] = field(default_factory=dict)  # phase -> the launchers' reason, unmeasured

    def phase(self, name: str) -> PhaseStats | None:
        return next((p for p in self.phases if p.name == name), None)

    @property
    def measured(self) -> list[str]:
        """The measured phases in order, without the total."""
        return [p.name for p in self.phases if p.measured and p.name != TOTAL]

    @property
    def unmeasured(self) -> list[PhaseStats]:
        return [p for p in self.phases if not p.measured]

    def bins(self, max_bins: int = MAX_BINS) -> list[Bin]:
        return by_concurrency(self.logons, [*self.measured, TOTAL], max_bins)


def unmeasured_text(connector: str, why: str) -> str:
    """``not measured by rdp: direct RDP has no broker``: never a blank or a zero."""
    return f"not measured by {connector or 'the launchers'}: {why or 'no reason given'}"


def stats(name: str, values: Sequence[float], why: str = "", connector: str = "") -> PhaseStats:
    if not values:
        return PhaseStats(name, 0, unmeasured=unmeasured_text(connector, why))
    return PhaseStats(
        name,
        len(values),
        rt_index.quantile(values, 0.5),
        rt_index.quantile(values, 0.95),
        max(values),
    )


def logons(series: Sequence[Series]) -> list[Logon]:
    """The sessions' logons from their phases' samples (source ``sessions``, ``logon_<phase>_s``):
    a session's samples share its launch time and entity; two sessions launched at the same instant
    are told apart by the order their samples were written in."""
    by_key: dict[tuple[str, float], list[dict[str, float]]] = {}
    phase_series = [
        (m.group("phase"), s) for s in series if s.source == SOURCE and (m := _METRIC.match(s.metric))
    ]
    phase_series.sort(key=lambda x: x[0] != TOTAL)  # the totals first: one per session
    for phase, s in phase_series:
        for ts, v in zip(s.ts, s.values, strict=True):
            if not math.isfinite(v):
                continue
            at = by_key.setdefault((s.entity, ts), [])
            slot = next((d for d in at if phase not in d), None)
            if slot is None:
                slot = {}
                at.append(slot)
            slot[phase] = v
    out = [Logon(ts, d) for (_, ts), ds in by_key.items() for d in ds]
    out.sort(key=lambda w: w.launch_ts)
    done = sorted(w.logged_on_ts for w in out)
    # sessions logged on before this one launched (itself never: its logon ends after its launch)
    return [Logon(w.launch_ts, w.phases_s, _count_before(done, w.launch_ts, w)) for w in out]


def _count_before(done: Sequence[float], ts: float, w: Logon) -> int:
    lo, hi = 0, len(done)
    while lo < hi:  # the number of logged-on instants strictly before ts
        mid = (lo + hi) // 2
        if done[mid] < ts:
            lo = mid + 1
        else:
            hi = mid
    return lo - (1 if w.logged_on_ts < ts else 0)


def reasons(extra: Mapping[str, object]) -> dict[str, str]:
    """Phase -> why no session measured it, from a summary's ``extra``."""
    return {m.group("phase"): str(v) for k, v in extra.items() if (m := _UNMEASURED.match(k))}


def connector(extra: Mapping[str, object]) -> str:
    c = extra.get("logon_connectors")
    return str(c) if c else ""


def _order(names: set[str]) -> list[str]:
    known = [n for n in ORDER if n in names]
    return known + sorted(names - set(ORDER) - {TOTAL})


def waterfall(extra: Mapping[str, object], series: Sequence[Series]) -> Waterfall | None:
    """The cell's waterfall from its summary's ``extra`` and its series; ``None``: no launcher timed
    a logon in this cell (launchers that only report a session's state, or no logon at all)."""
    ws = logons(series)
    why = reasons(extra)
    if not ws and not why:
        return None
    conn = connector(extra)
    names = {p for w in ws for p in w.phases_s} | set(why)
    rows = [
        stats(name, [w.phases_s[name] for w in ws if name in w.phases_s], why.get(name, "no milestone"), conn)
        for name in _order(names)
    ]
    rows.append(stats(TOTAL, [w.phases_s[TOTAL] for w in ws if TOTAL in w.phases_s], "no logon timed", conn))
    return Waterfall(conn, tuple(ws), tuple(rows), why)


def bin_edges(most: int, max_bins: int = MAX_BINS) -> list[tuple[int, int]]:
    """Concurrency 0..``most`` in at most ``max_bins`` bins of whole sessions, equal widths."""
    width = max(1, math.ceil((most + 1) / max_bins))
    return [(lo, min(lo + width - 1, most)) for lo in range(0, most + 1, width)]


def by_concurrency(ws: Sequence[Logon], phases: Sequence[str], max_bins: int = MAX_BINS) -> list[Bin]:
    """Each phase's p50 and p95 over the logons of each concurrency bin (bins with no logon left out)."""
    if not ws:
        return []
    out = []
    for lo, hi in bin_edges(max(w.concurrency for w in ws), max_bins):
        inside = [w for w in ws if lo <= w.concurrency <= hi]
        if not inside:
            continue
        p50: dict[str, float] = {}
        p95: dict[str, float] = {}
        for name in phases:
            vals = [w.phases_s[name] for w in inside if name in w.phases_s]
            if vals:
                p50[name] = rt_index.quantile(vals, 0.5)
                p95[name] = rt_index.quantile(vals, 0.95)
        out.append(Bin(lo, hi, len(inside), p50, p95))
    return out


@dataclass(frozen=True)
class TimeBin:
    """The logons launched in [start_ts, end_ts) and each phase's p50/p95 among them."""

    start_ts: float
    end_ts: float
    n: int
    p50_s: Mapping[str, float]
    p95_s: Mapping[str, float]


def over_time(ws: Sequence[Logon], phases: Sequence[str], bins: int = TIME_BINS) -> list[TimeBin]:
    """Each phase's p50 and p95 over the logons launched in each of ``bins`` equal spans of the
    launches (a storm of thousands drawn as lines, not as thousands of points); empty spans left out."""
    if not ws:
        return []
    first, last = min(w.launch_ts for w in ws), max(w.launch_ts for w in ws)
    width = (last - first) / bins or 1.0
    slots: dict[int, list[Logon]] = {}
    for w in ws:
        slots.setdefault(min(bins - 1, int((w.launch_ts - first) / width)), []).append(w)
    out = []
    for k in sorted(slots):
        inside = slots[k]
        p50: dict[str, float] = {}
        p95: dict[str, float] = {}
        for name in phases:
            vals = [w.phases_s[name] for w in inside if name in w.phases_s]
            if vals:
                p50[name] = rt_index.quantile(vals, 0.5)
                p95[name] = rt_index.quantile(vals, 0.95)
        out.append(TimeBin(first + k * width, first + (k + 1) * width, len(inside), p50, p95))
    return out


def sentence(label: str, w: Waterfall) -> str | None:
    """One finding: ``In <cell>, a logon took 3.6 s at the median and 4.5 s at p95 ...``."""
    total = w.phase(TOTAL)
    if total is None or not total.measured:
        return None
    measured = [p for p in w.phases if p.measured and p.name not in (TOTAL, UNACCOUNTED)]
    out = (
        f"In {label}, {total.n} logons took {_s(total.p50_s)} at the median and {_s(total.p95_s)} at the 95th "
        f"percentile from launch to the first workload operation"
    )
    if measured:
        top = max(measured, key=lambda p: p.p95_s or 0.0)
        out += f"; the longest phase at p95 was {words(top.name)} ({_s(top.p95_s)})"
    gone = [words(p.name) for p in w.unmeasured]
    if gone:
        out += f"; not measured by {w.connector or 'the launchers'}: {', '.join(gone)}"
    return out + "."


def _s(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.2f} s" if v < 10 else f"{v:.1f} s" if v < 100 else f"{v:.0f} s"
