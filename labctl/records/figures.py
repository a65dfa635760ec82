"""A cell's key figures: the numbers a run is compared by, night after night.

One function, :func:`cell_figures`, takes them from the typed :class:`CellSummary` (per-machine
outcomes, and the series summaries over the criteria window), so ``labctl compare``, the results
store's ``cell_figures`` table and the nightly trends agree on what "boot_time_s mean" of a cell is.

A figure has a *direction*: which way is worse (boot time, retries, disk queue, CPU up; copies
slower). A *neutral* figure (NIC utilisation, IOPS, used memory: the same work done faster may
raise them) is reported when it moves, and never counts as a regression or an improvement.

Which figures a cell has:

- per machine of a booting role (``storm``, ``rebooter``): ``boot_time_s`` mean and max,
  ``retries`` mean and max, ``time_to_ready_s`` mean (orchestrator side: neutral), and
  ``never_booted`` (machines without a boot time: count);
- per copier: ``copy_s`` mean and max;
- per server-side series in :data:`SERIES_KINDS` (not per-machine series, not ``_Total``
  aggregates): its ``peak`` and/or ``mean`` over the window, with the series' coverage;
- per desktop: ``login_s`` mean and max; of a VDI cell's response-time index (:data:`INDEX_FIGURES`):
  its baseline, its session count (the saturation point, else the most sessions run), whether it
  saturated, and the desktops good, rated and not measured (``labctl.report.headline`` reads them back).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from labctl.records.run_kind import RunKind, run_kind
from labctl.records.run_record import CellSummary, CellVerdict, Outcome, RunInfo

BOOT_ROLES = ("storm", "rebooter")  # roles whose machines are expected to boot in the cell
CLIENTS_SOURCE = "clients"  # the `source` of figures taken from per-machine outcomes


class Direction(StrEnum):
    """Which way a figure gets worse."""

    UP_IS_WORSE = "up_is_worse"
    DOWN_IS_WORSE = "down_is_worse"
    NEUTRAL = "neutral"  # reported when it moves; never a regression or an improvement

    def worse(self, delta: float) -> bool:
        """Whether a change of ``delta`` is in the bad direction."""
        if self is Direction.UP_IS_WORSE:
            return delta > 0
        if self is Direction.DOWN_IS_WORSE:
            return delta < 0
        return False


@dataclass(frozen=True)
class Kind:
    """A metric as a figure: which way is worse, and which statistics of its series count."""

    direction: Direction
    statistics: tuple[str, ...] = ("peak", "mean")
    why: str = ""


_UP, _NEUTRAL = Direction.UP_IS_WORSE, Direction.NEUTRAL

# Per-machine figures (fields of ClientOutcome): kind -> (direction, statistics, roles).
CLIENT_KINDS: dict[str, tuple[Kind, tuple[str, ...]]] = {
    "boot_time_s": (Kind(_UP, ("mean", "max"), "a slower boot"), BOOT_ROLES),
    "retries": (
        Kind(_UP, ("mean", "max"), "requests re-sent: the server or network fell behind"),
        BOOT_ROLES,
    ),
    "time_to_ready_s": (
        Kind(_NEUTRAL, ("mean",), "orchestrator side: includes its own polling, not the product's"),
        BOOT_ROLES,
    ),
    "copy_s": (Kind(_UP, ("mean", "max"), "a slower copy"), ("copier",)),
    "login_s": (Kind(_UP, ("mean", "max"), "a slower logon"), ("desktop",)),
}
# The response-time index of a VDI cell (CellSummary.response_index), read as VSImax is: enough to
# say "saturated at N sessions" / "not saturated up to N" and the share of good desktops wherever a
# cell is shown from its figures alone (the results store). The session count is the saturation
# point when saturated, else the most sessions run: whether it saturated is its own figure.
INDEX_FIGURES: dict[str, tuple[str, str, Kind, str]] = {  # key -> (kind, statistic, spec, unit)
    "rt_index baseline_s": (
        "rt_index",
        "baseline_s",
        Kind(_UP, (), "a slower typical operation unloaded"),
        "s",
    ),
    "rt_index sessions": (
        "rt_index",
        "sessions",
        Kind(Direction.DOWN_IS_WORSE, (), "saturated at fewer sessions"),
        "sessions",
    ),
    "rt_index saturated": ("rt_index", "saturated", Kind(_NEUTRAL, (), "1: saturated, 0: not up to N"), ""),
    "desktops_good count": (
        "desktops_good",
        "count",
        Kind(Direction.DOWN_IS_WORSE, (), "desktops in the good band"),
        "desktops",
    ),
    "desktops_rated count": (
        "desktops_rated",
        "count",
        Kind(_NEUTRAL, (), "desktops the index rated"),
        "desktops",
    ),
    "desktops_unmeasured count": (
        "desktops_unmeasured",
        "count",
        Kind(_UP, (), "desktops whose sessions could not be read to the end (in no band)"),
        "desktops",
    ),
}
NEVER_BOOTED = Kind(_UP, ("count",), "machines of a booting role without a boot time")

# Server-side series (SeriesSummary.metric) that are figures.
SERIES_KINDS: dict[str, Kind] = {
    "cpu_pct": Kind(_UP, ("peak", "mean"), "more CPU for the same work"),
    "disk_queue_len": Kind(_UP, ("peak", "mean"), "requests waiting on the disk"),
    "disk_latency_ms": Kind(_UP, ("peak", "mean"), "slower disk I/O"),
    "disk_busy_pct": Kind(_UP, ("peak", "mean"), "the disk busier for the same work"),
    "latency_ms": Kind(_UP, ("peak", "mean"), "slower array I/O"),
    "cpu.usage.average": Kind(_UP, ("peak", "mean"), "host CPU (vCenter)"),
    "mem.vmmemctl.average": Kind(_UP, ("peak",), "memory ballooning on the host"),
    "memory_used_mb": Kind(_NEUTRAL, ("peak",), "the server caches what it streams"),
    "memory_committed_pct": Kind(_NEUTRAL, ("peak",)),
    "nic_sent_util_pct": Kind(_NEUTRAL, ("peak", "mean"), "the same bytes sent faster or slower"),
    "nic_received_util_pct": Kind(_NEUTRAL, ("peak",)),
    "disk_iops": Kind(_NEUTRAL, ("peak", "mean"), "the same I/O done faster or slower"),
    "iops": Kind(_NEUTRAL, ("peak", "mean")),
    "throughput_mb_s": Kind(_NEUTRAL, ("peak",)),
    "power_w": Kind(_NEUTRAL, ("peak", "mean")),
    "mem.usage.average": Kind(_NEUTRAL, ("peak",)),
    "net.usage.average": Kind(_NEUTRAL, ("peak",)),
}
_SKIP_SOURCES = ("result",)  # per-machine results as series: the same numbers as the outcomes
_AGGREGATE_SUFFIX = "/_Total"  # typeperf's sum over instances listed one by one anyway


class Figure(BaseModel):
    """One key figure of one cell."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description='e.g. "boot_time_s mean", "disk_queue_len peak pvs-01/D:"')
    kind: str = Field(description="the metric: boot_time_s, retries, disk_queue_len, ...")
    statistic: str = Field(description="mean, max, peak, count")
    source: str = Field(description="`clients` for per-machine figures, else the series' source")
    entity: str = Field("", description="the series' entity ('' for per-machine figures)")
    unit: str = Field("", description="unit of value")
    direction: Direction = Field(description="which way is worse")
    value: float = Field(description="the figure")
    n: int = Field(description="values behind it: machines, or samples of the series")
    coverage: float | None = Field(None, description="the series' coverage of the window (0..1)")


class CellFigures(BaseModel):
    """A cell's outcome and key figures: what a comparison needs of it."""

    cell: str
    plan: str = ""
    scenario: str = ""
    configuration: str | None = None
    outcome: Outcome
    reason: str = ""
    verdict_outcome: Outcome | None = None
    figures: dict[str, Figure] = Field(default_factory=dict)


class RunFigures(BaseModel):
    """A run's identity and its cells' figures."""

    run_id: str
    lab: str
    plan: str
    configuration: str | None = None
    started_utc: str = Field("", description="wall clock start, ISO 8601 UTC")
    outcome: str = ""
    kind: RunKind = Field(
        default_factory=lambda: RunKind(recorded=False), description="profile and plan parameters (run_kind)"
    )
    cells: dict[str, CellFigures] = Field(default_factory=dict)


def _client_figures(summary: CellSummary) -> list[Figure]:
    out: list[Figure] = []
    for kind, (spec, roles) in CLIENT_KINDS.items():
        values = [v for role in roles for v in summary.values(kind, role)]
        if not values:
            continue
        for stat in spec.statistics:
            value = statistics.fmean(values) if stat == "mean" else max(values)
            out.append(
                Figure(
                    key=f"{kind} {stat}",
                    kind=kind,
                    statistic=stat,
                    source=CLIENTS_SOURCE,
                    unit="" if kind == "retries" else "s",
                    direction=spec.direction,
                    value=value,
                    n=len(values),
                )
            )
    booting = [c for c in summary.clients.values() if c.role in BOOT_ROLES and c.outcome != "excluded"]
    if booting:
        out.append(
            Figure(
                key="never_booted count",
                kind="never_booted",
                statistic="count",
                source=CLIENTS_SOURCE,
                unit="machines",
                direction=NEVER_BOOTED.direction,
                value=float(sum(1 for c in booting if c.boot_time_s is None)),
                n=len(booting),
            )
        )
    return out


def _index_figures(summary: CellSummary) -> list[Figure]:
    ri = summary.response_index
    if ri is None or not (ri.points or ri.good + ri.fair + ri.poor):
        return []
    saturated = ri.saturation_sessions is not None
    values = {
        "rt_index baseline_s": ri.baseline_s,
        "rt_index sessions": ri.saturation_sessions if saturated else ri.sessions_max,
        "rt_index saturated": 1.0 if saturated else 0.0,
        "desktops_good count": ri.good,
        "desktops_rated count": ri.good + ri.fair + ri.poor,
        "desktops_unmeasured count": ri.unmeasured,
    }
    out = []
    for key, value in values.items():
        if value is None:
            continue
        kind, stat, spec, unit = INDEX_FIGURES[key]
        out.append(
            Figure(
                key=key,
                kind=kind,
                statistic=stat,
                source=CLIENTS_SOURCE,
                unit=unit,
                direction=spec.direction,
                value=float(value),
                n=len(ri.points) or ri.good + ri.fair + ri.poor,
            )
        )
    return out


def _series_figures(summary: CellSummary) -> list[Figure]:
    out: list[Figure] = []
    for m in summary.metrics.values():
        spec = SERIES_KINDS.get(m.metric)
        if spec is None or m.source in _SKIP_SOURCES or m.samples == 0:
            continue
        machine = summary.clients.get(m.entity)
        # a client's own series repeat its outcome; an array listed among the outcomes (its spare
        # capacity, IOPS per desktop) is no client: its counters are the cell's figures
        if (machine is not None and machine.role != "array") or m.entity.endswith(_AGGREGATE_SUFFIX):
            continue
        for stat in spec.statistics:
            value = getattr(m, stat)
            if value is None:
                continue
            out.append(
                Figure(
                    key=f"{m.metric} {stat} {m.entity}",
                    kind=m.metric,
                    statistic=stat,
                    source=m.source,
                    entity=m.entity,
                    unit=m.unit,
                    direction=spec.direction,
                    value=float(value),
                    n=m.samples,
                    coverage=m.coverage,
                )
            )
    return out


def cell_figures(summary: CellSummary, verdict: CellVerdict | None = None) -> CellFigures:
    """The key figures of one cell, from its typed summary (and its verdict's outcome)."""
    figures: dict[str, Figure] = {}
    for f in [*_client_figures(summary), *_index_figures(summary), *_series_figures(summary)]:
        key = f.key if f.key not in figures else f"{f.key} ({f.source})"  # two sources, one entity
        figures[key] = f.model_copy(update={"key": key})
    return CellFigures(
        cell=summary.cell,
        plan=summary.plan,
        scenario=summary.scenario,
        configuration=summary.configuration,
        outcome=summary.outcome,
        reason=summary.reason,
        verdict_outcome=verdict.outcome if verdict is not None else None,
        figures=figures,
    )


def run_figures(info: RunInfo, cells: dict[str, tuple[CellSummary, CellVerdict | None]]) -> RunFigures:
    """A run's figures from its ``run.json`` and its cells' summaries and verdicts."""
    return RunFigures(
        run_id=info.run_id,
        lab=info.lab,
        plan=info.plan,
        configuration=info.configuration,
        started_utc=info.started.wall_utc,
        outcome=info.outcome.value,
        kind=run_kind(info.parameters),
        cells={cell: cell_figures(s, v) for cell, (s, v) in cells.items()},
    )
