"""The typed run record: what a run folder holds, as pydantic models.

Each file of ``results/<run-id>/`` that is not a raw measurement stream has one model here, written
once by its producer and read back through the same model by everything downstream (the figures
page, ``labctl compare``, the Allure and JUnit outputs, the results store, certification, tests):

- ``run.json``                         -> :class:`RunInfo`
- ``cells/<cell-id>/summary.json``     -> :class:`CellSummary` (with :class:`ClientOutcome`,
                                          :class:`GroupAction`, :class:`SeriesSummary`, ...)
- ``cells/<cell-id>/verdicts.json``    -> :class:`CellVerdict` (with :class:`CriterionVerdict`)

``series.csv`` and ``events.jsonl`` are streams of :class:`~labctl.records.samples.Sample` and
:class:`~labctl.records.samples.Event` (their columns are documented with the writers).

``results/README.md`` carries a table of every model's fields, generated from the field
descriptions below (``python -m labctl.records.docs --write``); a test fails when the two disagree.

Units are in the names (``_s`` lab seconds, ``_ts_s`` lab epoch seconds, ``_pct`` percent).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FORMAT_VERSION = 2  # of the run folder layout; 1 was the untyped layout before the typed record


class Record(BaseModel):
    """Base of every run-record model: unknown fields are kept out, values are checked on read."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# --- outcomes -------------------------------------------------------------------------------------


class Outcome(StrEnum):
    """How a criterion, or a whole cell, came out. Ordered by :attr:`severity` (worst wins)."""

    PASS = "pass"  # every judged value inside its pass band
    MARGINAL = "marginal"  # outside the pass band, inside the marginal band: reported, does not fail
    NO_DATA = "no_data"  # too little data to judge (a gap, a source that failed): a lab fault, never a pass
    FAIL = "fail"  # a measured value outside its bands: the system under test failed
    LAB_FAULT = "lab_fault"  # the lab did not do what the plan needs (a client never booted, a power
    #                          change the run did not make, an endpoint down): says nothing of the system
    ERROR = "error"  # the cell broke (an unexpected exception): a defect of labctl or the plan
    INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM / SIGHUP during the cell: what it measured is kept

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def passed(self) -> bool:
        """The cell counts as passed (marginal passes with a warning)."""
        return self in (Outcome.PASS, Outcome.MARGINAL)


_SEVERITY = {
    Outcome.PASS: 0,
    Outcome.MARGINAL: 1,
    Outcome.NO_DATA: 2,
    Outcome.FAIL: 3,
    Outcome.LAB_FAULT: 4,
    Outcome.ERROR: 5,
    Outcome.INTERRUPTED: 6,
}


def worst(outcomes: Any) -> Outcome:
    """The most severe of ``outcomes`` (an iterable of :class:`Outcome`); PASS for none."""
    return max(outcomes, key=lambda o: o.severity, default=Outcome.PASS)


class RunOutcome(StrEnum):
    """How a whole run ended (``run.json``)."""

    RUNNING = "running"  # not ended yet, or the process died: see the cells for what was measured
    PASSED = "passed"  # every cell passed (marginal included)
    FAILED = "failed"  # a cell failed a criterion
    LAB_FAULT = "lab_fault"  # no cell failed, but the lab broke in at least one (no_data or lab_fault)
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or SIGHUP
    ERROR = "error"  # the run itself broke: a crash, a usage error


def run_outcome(cells: Any) -> RunOutcome:
    """The run's outcome from its cells' outcomes (an iterable of :class:`Outcome`)."""
    seen = set(cells)
    if Outcome.INTERRUPTED in seen:
        return RunOutcome.INTERRUPTED
    if Outcome.ERROR in seen:
        return RunOutcome.ERROR
    if Outcome.FAIL in seen:
        return RunOutcome.FAILED
    if seen & {Outcome.LAB_FAULT, Outcome.NO_DATA}:
        return RunOutcome.LAB_FAULT
    return RunOutcome.PASSED


# --- run.json -------------------------------------------------------------------------------------


class Stamp(Record):
    """One moment on the wall clock and on the lab's clock (they differ on a scaled, simulated lab)."""

    wall_utc: str = Field(description="wall clock, ISO 8601 UTC with milliseconds")
    lab_time: str = Field(description="the lab clock, ISO 8601 UTC")
    lab_ts: float = Field(description="the lab clock in epoch seconds (what samples are stamped with)")


class RunInfo(Record):
    """``run.json``: what ran, on what, from which code, and how it ended. Written when the run
    starts (``outcome: running``) and rewritten when it ends; a run whose process died shows
    ``running`` with no ``ended``."""

    format: int = Field(FORMAT_VERSION, description="version of the run folder layout")
    run_id: str = Field(description="the folder's name: `<UTC start>-<plan>-<4 hex digits>`")
    plan: str = Field(description="the plan(s) the run belongs to, e.g. `boot_storm`")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="the plan parameters as the run used them; `pytest_args` too"
    )
    lab: str = Field(description="the lab's name from the inventory")
    configuration: str | None = Field(None, description="lab configuration, e.g. `standalone`, `ha`")
    inventory_file: str = Field(description="absolute path of the inventory file")
    inventory_sha256: str = Field(description="SHA-256 of the inventory file's bytes")
    simulated: bool = Field(description="true for the simulated lab")
    time_scale: float = Field(description="lab seconds per wall second (1 on real hardware)")
    labctl_version: str = Field(description="version of labctl")
    git_commit: str | None = Field(None, description="commit of the labctl checkout (null outside git)")
    git_dirty: bool | None = Field(None, description="whether tracked files had local changes")
    host: str = Field(description="the controller host the run ran on")
    python: str = Field(description="Python version")
    lease: str | None = Field(None, description="the lease the run held on the lab, e.g. `lab:sim-2007`")
    started: Stamp = Field(description="when the run started")
    ended: Stamp | None = Field(None, description="when it ended (null while running or if it died)")
    duration_s: float | None = Field(None, description="wall seconds from start to end")
    outcome: RunOutcome = Field(RunOutcome.RUNNING, description="how the run ended")
    reason: str = Field("", description="one line: why the run did not pass (first failed cell, signal)")
    cells: list[str] = Field(default_factory=list, description="cell ids in the order they ran")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="what other parts add, e.g. firmware versions read from endpoints"
    )


# --- a cell ---------------------------------------------------------------------------------------


class Window(Record):
    """The lab-time span a cell's criteria and derived numbers are taken over."""

    start_ts_s: float = Field(description="lab epoch seconds the window opens (e.g. the wake burst)")
    end_ts_s: float = Field(description="lab epoch seconds it closes")

    @property
    def duration_s(self) -> float:
        return self.end_ts_s - self.start_ts_s

    def as_tuple(self) -> tuple[float, float]:
        return (self.start_ts_s, self.end_ts_s)


class Gap(Record):
    """A silence in a series that promised a sample every ``expected_interval_s``."""

    start_ts_s: float = Field(description="last sample before the silence (or the window's start)")
    end_ts_s: float = Field(description="first sample after it (or the window's end)")

    @property
    def duration_s(self) -> float:
        return self.end_ts_s - self.start_ts_s


class SeriesSummary(Record):
    """One recorded series over the cell's window: the numbers the criteria, the figures page,
    ``labctl compare`` and the certification show for it (taken from one place, over one span)."""

    source: str = Field(description="e.g. `typeperf`, `redfish`, `unity`, `vcenter`, `pvs`")
    entity: str = Field(description="e.g. `pvs-01`, `pvs-01/D:`, `pvs-01/NIC 1`")
    metric: str = Field(description="e.g. `cpu_pct`, `disk_queue_len`")
    unit: str = Field(description="e.g. `%`, `requests`, `MB`")
    samples: int = Field(description="samples inside the window")
    expected_interval_s: float | None = Field(None, description="the source's promised sample interval")
    coverage: float | None = Field(
        None, description="share (0..1) of the window not inside a gap; null for on-change sources"
    )
    gaps: list[Gap] = Field(default_factory=list, description="silences longer than twice the interval")
    start_ts_s: float | None = Field(None, description="first sample in the window")
    end_ts_s: float | None = Field(None, description="last sample in the window")
    peak: float | None = Field(None, description="largest value")
    peak_ts_s: float | None = Field(None, description="when the (first) peak was")
    mean: float | None = Field(None, description="mean of the samples (as perfmon averages them)")
    p95: float | None = Field(None, description="95th percentile, linear between ranks")
    min: float | None = Field(None, description="smallest value")
    last: float | None = Field(None, description="last value")

    @property
    def key(self) -> str:
        return f"{self.source}/{self.entity}/{self.metric}"


class ClientOutcome(Record):
    """One machine's result in a cell: a dimensioned measurement (one value per machine), not a
    time series. A machine with a role but without ``boot_time_s`` never booted."""

    name: str = Field(description="the machine")
    role: str = Field("storm", description="`storm` (boot storm), `copier`, `rebooter`, `desktop`, ...")
    outcome: str = Field(
        description="`ready`, `timeout`, `error` (boot); `copied`, `copy_failed` (copy); `excluded`"
    )
    boot_time_s: float | None = Field(
        None, description="first network contact to agent start, as the streaming software reports it"
    )
    retries: int | None = Field(None, description="the session's UDP requests re-sent after a timeout")
    time_to_ready_s: float | None = Field(
        None, description="orchestrator: the wake/reboot command to the machine seen ready"
    )
    copy_s: float | None = Field(None, description="copy duration, lab seconds (copiers)")
    sent_ts_s: float | None = Field(None, description="when its power action was sent")
    delivered_ts_s: float | None = Field(
        None, description="when the machine acted on it (went down / started), where observable"
    )
    detail: str = Field("", description="one line: what was last seen, or why it failed")
    login_s: float | None = Field(
        None, description="desktops: the user's logon, request to desktop ready, as its launcher measured it"
    )
    operations: int | None = Field(None, description="desktops: timed operations its session completed")
    response_s: float | None = Field(
        None,
        description="desktops: the session's own response-time index (a typical operation, s; "
        "docs/response-time-index.md)",
    )
    ux_level: int | None = Field(
        None, description="desktops: user-experience band, 0 good, 1 fair, 2 poor (`none poor`: max 1)"
    )
    ux_good: int | None = Field(
        None,
        description="desktops: 1 in the good band, else 0 (`across: mean` is the share of good desktops)",
    )
    spare_capacity_pct: float | None = Field(
        None,
        description="arrays: capacity not allocated to the cell's datastores, % of the array's usable capacity",
    )
    boot_iops_per_desktop: float | None = Field(
        None,
        description="arrays: mean IOPS in the boot storm over the desktops it booted (2012 paper, table 7)",
    )
    login_iops_per_desktop: float | None = Field(
        None, description="arrays: mean IOPS in the login storm over the sessions on the array (table 7)"
    )
    steady_iops_per_desktop: float | None = Field(
        None, description="arrays: mean IOPS in steady state (after its settle) over the sessions (table 7)"
    )
    scaling_ratio: float | None = Field(
        None,
        description="arrays (scale-out): its steady IOPS per desktop over the smallest cell's (1.0: linear)",
    )


def result_fields() -> tuple[str, ...]:
    """The per-machine figures of :class:`ClientOutcome` a criterion can judge (``select:
    {result: boot_time_s}``): its numeric fields, in declaration order."""
    numeric = (float | None, int | None, float, int)
    return tuple(n for n, f in ClientOutcome.model_fields.items() if f.annotation in numeric)


class GroupAction(Record):
    """One burst of a power action over a group: how simultaneous "simultaneous" really was."""

    action: str = Field(description="`on` (wake), `off`, `reboot`, `reset`")
    backend: str = Field(description="power backend that carried it: `wol-ssh`, `redfish`, `vcenter`, `ipmi`")
    machines: int = Field(description="machines the action was for")
    ok: int = Field(description="machines it was sent to without error")
    failed: dict[str, str] = Field(default_factory=dict, description="machine -> one-line reason")
    first_sent_ts_s: float | None = Field(None, description="the first send")
    send_spread_s: float = Field(description="first to last send, lab seconds")
    send_spread_wall_s: float = Field(description="the same in wall seconds (what the controller achieved)")
    delivery_spread_s: float | None = Field(
        None, description="first to last delivery (machine went down / powered on), where observable"
    )


class RestoreOutcome(Record):
    """Bringing the cell's machines back to their state before it (S5 for a storm)."""

    ok: bool = Field(description="every machine reached its state")
    started_ts_s: float = Field(description="when the restore began")
    ended_ts_s: float = Field(description="when it ended")
    left_on: list[str] = Field(default_factory=list, description="machines still on that should be off")
    detail: str = Field("", description="one line: what failed")


class Phase(Record):
    """A named span of the cell on its timeline (prepare, wake, window, restore; boot, login, ...)."""

    name: str = Field(description="e.g. `prepare`, `window`, `restore`, `login`, `steady`")
    start_ts_s: float = Field(description="lab epoch seconds")
    end_ts_s: float | None = Field(None, description="lab epoch seconds (null: it never ended)")


class PhaseFigures(Record):
    """A phase of a VDI storm on the arrays: the 2012 paper's table 7 and tables 5-6, measured."""

    phase: str = Field(description="`boot`, `login`, `steady`, `logoff`")
    array: str = Field("", description="the array, or empty for every array of the cell together")
    desktops: int = Field(description="desktops taking part in the phase (the divisor per desktop)")
    start_ts_s: float = Field(description="lab epoch seconds the phase's figures start")
    end_ts_s: float = Field(description="lab epoch seconds they end")
    samples: int = Field(description="array samples inside the span")
    iops_mean: float | None = Field(None, description="mean front-end IOPS (reads + writes)")
    iops_peak: float | None = Field(None, description="highest sample")
    iops_per_desktop: float | None = Field(
        None,
        description="the paper's per-desktop figure: peak / desktops for boot and login storms, "
        "mean / desktops for steady state",
    )
    read_share_pct: float | None = Field(None, description="reads among all I/Os, I/O-weighted")
    read_kb: float | None = Field(None, description="mean read size, KB")
    write_kb: float | None = Field(None, description="mean write size, KB")
    latency_mean_ms: float | None = Field(None, description="I/O-weighted mean latency, ms")
    latency_peak_ms: float | None = Field(None, description="highest sample's latency, ms")
    throughput_mb_s: float | None = Field(None, description="mean throughput, MB/s")
    storm_duration_s: float | None = Field(
        None, description="lab seconds the IOPS stayed above the storm threshold (see `storm_threshold_iops`)"
    )
    storm_threshold_iops: float | None = Field(
        None,
        description="the threshold: 1.2 x the steady-state mean when measured, else half the phase's peak",
    )


class IndexPoint(Record):
    """One sample of the response-time index."""

    ts_s: float = Field(description="lab epoch seconds (the bucket's last operation)")
    sessions: int = Field(description="sessions active then")
    value_s: float = Field(description="response time of a typical operation at that load, s")
    ops: int = Field(description="operations in the sample")


class ResponseIndex(Record):
    """The open response-time index of a cell (docs/response-time-index.md)."""

    baseline_s: float | None = Field(None, description="VSIbase-like: the fastest samples, outliers dropped")
    threshold_s: float = Field(description="saturated above baseline + this")
    saturation_sessions: int | None = Field(
        None, description="VSImax-like: the session count where samples stay above the limit (null: none)"
    )
    saturation_ts_s: float | None = Field(None, description="when that run of samples began")
    sessions_max: int = Field(0, description="most sessions active at once")
    good: int = Field(0, description="desktops in the good band")
    fair: int = Field(0, description="desktops in the fair band")
    poor: int = Field(0, description="desktops in the poor band (failed logons included)")
    unmeasured: int = Field(
        0, description="desktops whose sessions could not be read to the end (launcher gone): in no band"
    )
    unmeasured_from_s: float | None = Field(
        None, description="lab seconds after the storm's start from which they could not be read"
    )
    unmeasured_why: str = Field("", description="what could not be read, e.g. `launcher vsi-01 unreadable`")
    parameters: dict[str, float] = Field(default_factory=dict, description="the index's parameters")
    references_s: dict[str, float] = Field(default_factory=dict, description="operation -> its reference, s")
    points: list[IndexPoint] = Field(default_factory=list, description="the samples, in time order")


class CellSummary(Record):
    """``cells/<cell-id>/summary.json``: what the cell did and measured, written once when it ends
    (a partial one when it broke off, with ``outcome`` saying why)."""

    format: int = Field(FORMAT_VERSION, description="version of the run folder layout")
    cell: str = Field(description="the cell id, e.g. `boot_storm-standalone-050`")
    plan: str = Field(description="e.g. `boot_storm`, `copy_reboot`, `ha_comparison`")
    scenario: str = Field(description="the scenario that ran the cell: `boot_storm`, `copy_reboot`, ...")
    configuration: str | None = Field(None, description="lab configuration, e.g. `standalone`, `ha`")
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="the cell's own parameters: `group_size`; `copiers`, `rebooters`, `copy_path`; ...",
    )
    outcome: Outcome = Field(description="the cell's verdict (worst criterion), or `interrupted`/`error`")
    reason: str = Field("", description="one line: why the cell did not pass, before any detail")
    window: Window | None = Field(None, description="the span the criteria and `metrics` are taken over")
    storm_start_ts_s: float | None = Field(
        None, description="time zero of the over-time figures: the wake / reboot / copy start"
    )
    entities: dict[str, str] = Field(
        default_factory=dict,
        description="named entities of the cell: `streaming_server`, `write_cache_disk`, `share_server`",
    )
    clients: dict[str, ClientOutcome] = Field(default_factory=dict, description="machine -> its outcome")
    actions: list[GroupAction] = Field(default_factory=list, description="the power bursts of the cell")
    phases: list[Phase] = Field(default_factory=list, description="the cell's timeline, phase by phase")
    metrics: dict[str, SeriesSummary] = Field(
        default_factory=dict, description="`source/entity/metric` -> the series over the window"
    )
    restore: RestoreOutcome | None = Field(None, description="how the machines were brought back")
    extra: dict[str, float | int | str | bool | None] = Field(
        default_factory=dict, description="scenario-specific scalars, e.g. `back_to_baseline_ts_s`"
    )
    phase_figures: list[PhaseFigures] = Field(
        default_factory=list, description="VDI storms: array figures per phase, all arrays and each array"
    )
    response_index: ResponseIndex | None = Field(
        None, description="VDI storms: the response-time index of the sessions' timed operations"
    )

    def by_role(self, role: str | None = None) -> list[ClientOutcome]:
        """The machines of ``role`` (all when None), in name order."""
        return [c for _, c in sorted(self.clients.items()) if role is None or c.role == role]

    def values(self, field: str, role: str | None = None) -> list[float]:
        """One per-machine figure (``boot_time_s``, ``retries``, ``copy_s``) of the machines that have it."""
        out: list[float] = []
        for c in self.by_role(role):
            v = getattr(c, field)
            if isinstance(v, int | float) and not isinstance(v, bool):
                out.append(float(v))
        return out

    def never_booted(self, role: str | None = None) -> list[str]:
        """Machines of ``role`` expected to boot that have no boot time."""
        return [c.name for c in self.by_role(role) if c.boot_time_s is None]

    def metric(self, source: str, entity: str, metric: str) -> SeriesSummary | None:
        return self.metrics.get(f"{source}/{entity}/{metric}")


# --- verdicts ---------------------------------------------------------------------------------------


class Band(Record):
    """A band's limits as numbers and as written in the criteria file."""

    min: float | None = Field(None, description="lower limit (inclusive)")
    max: float | None = Field(None, description="upper limit (inclusive)")
    min_expr: str | None = Field(None, description="the lower limit as written, e.g. `2 * spindles(...)`")
    max_expr: str | None = Field(None, description="the upper limit as written")

    def contains(self, v: float) -> bool:
        return (self.min is None or v >= self.min) and (self.max is None or v <= self.max)


class EntityValue(Record):
    """One entity's judged value within a criterion."""

    entity: str = Field(description="e.g. a client, a NIC, a volume")
    value: float = Field(description="the statistic of its series in the window, or the machine's result")
    outcome: Outcome = Field(description="its own judgement")
    first_crossing_ts: float | None = Field(None, description="when it first left the pass band")
    samples: int = Field(description="samples judged")


class SeriesRef(Record):
    """Where a criterion's evidence is in the run folder."""

    file: str = Field(description="`series.csv`, or `summary.json` for per-machine results (its `clients`)")
    cell: str = Field(description="the cell")
    source: str = Field(description="source of the series (`clients` for per-machine results)")
    entity: str = Field(description="entity (the role for per-machine results, `*` for all)")
    metric: str = Field(description="metric (the result, e.g. `boot_time_s`, for per-machine results)")


class CriterionVerdict(Record):
    """One criterion of the plan's criteria file, judged over the cell."""

    name: str = Field(description="as in the criteria file")
    description: str = Field("", description="the reason for the band")
    required: bool = Field(True, description="false: its `no_data` is reported but does not fail the cell")
    outcome: Outcome = Field(description="`pass`, `marginal`, `no_data`, `fail` or `lab_fault`")
    statistic: str = Field(description="e.g. `mean`, `peak`, `p95`, `value` (per-machine results)")
    unit: str = Field("", description="unit of the judged value")
    selector: str = Field(description="what was judged, e.g. `typeperf/pvs-01/D:/disk_queue_len`")
    observed: float | None = Field(None, description="the value judged")
    entity: str | None = Field(None, description="the entity that decided (the worst one)")
    pass_band: Band | None = Field(None, description="the pass band")
    marginal_band: Band | None = Field(None, description="the marginal band")
    threshold: float | None = Field(None, description="for `time_above` / `storm_duration`")
    first_crossing_ts: float | None = Field(None, description="when the series first left the pass band")
    window: Window | None = Field(None, description="the span judged")
    coverage: float | None = Field(
        None, description="lowest coverage of the judged series in the window (0..1; null: not held to one)"
    )
    entities: list[EntityValue] = Field(default_factory=list, description="per entity")
    missing: list[str] = Field(
        default_factory=list,
        description="machines of the role without the value (a `lab_fault`), or series without a sample in the window",
    )
    series: list[SeriesRef] = Field(default_factory=list, description="where the evidence is")
    message: str = Field("", description="the one-line explanation shown in reports")
    min_window_s: float | None = Field(
        None,
        description="the shortest window the band means something over (criteria's `min_window_s`); "
        "a shorter one is `no_data`, not judged, and does not count",
    )

    @property
    def too_short(self) -> bool:
        """The window was shorter than the criterion needs: not judged (a quick profile's window)."""
        return (
            self.min_window_s is not None
            and self.window is not None
            and 0 < self.window.duration_s < self.min_window_s
        )

    @property
    def counts(self) -> bool:
        """Whether this criterion's outcome counts toward the cell's: a ``no_data`` of a criterion
        not required, or of a window too short for it, is reported only."""
        return not (self.outcome is Outcome.NO_DATA and (not self.required or self.too_short))


class CellVerdict(Record):
    """``cells/<cell-id>/verdicts.json``: every criterion of the plan, judged over the cell."""

    format: int = Field(FORMAT_VERSION, description="version of the run folder layout")
    cell: str = Field(description="the cell id")
    outcome: Outcome = Field(
        description="the worst criterion's outcome (a `no_data` of a criterion not `required`, or of a "
        "window shorter than its `min_window_s`, does not count)"
    )
    criteria: list[CriterionVerdict] = Field(default_factory=list, description="one per criterion")

    def of(self, outcome: Outcome) -> list[CriterionVerdict]:
        return [c for c in self.criteria if c.outcome is outcome]

    def __getitem__(self, name: str) -> CriterionVerdict:
        for c in self.criteria:
            if c.name == name:
                return c
        raise KeyError(name)


class CellRecord(BaseModel):
    """One finished cell as the output sinks receive it: its summary and its verdict (None when the
    cell has no criteria file or broke off before judging)."""

    model_config = ConfigDict(frozen=True)

    summary: CellSummary
    verdict: CellVerdict | None = None

    @property
    def cell(self) -> str:
        return self.summary.cell

    @property
    def outcome(self) -> Outcome:
        return self.summary.outcome


# The models that are files of a run folder, by file name (the results README documents these).
RUN_FOLDER_FILES: dict[str, type[Record]] = {
    "run.json": RunInfo,
    "cells/<cell-id>/summary.json": CellSummary,
    "cells/<cell-id>/verdicts.json": CellVerdict,
}
