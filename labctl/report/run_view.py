"""A run folder as the reports see it: ``run.json``, every cell's typed summary and verdict, and the
series the figures draw, read through the recorder's typed readers only.

Every number a report shows for a cell comes from :attr:`CellView.metrics`: the cell summary's
``metrics`` (each series over the window the criteria used, with its gaps and coverage). A cell
that was never summarised (its run was killed: ``run.json`` still says ``running`` and the cell
has only the provisional summary written when it started) gets its numbers from the same
function the recorder uses (:func:`labctl.records.stats.series_summary`) over everything it
recorded, and says so (:attr:`CellView.provisional`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.recorder.cell_files import read_cell_summaries, read_cell_verdicts
from labctl.recorder.runfolder import read_run_info
from labctl.recorder.series import read_events, read_series, run_path
from labctl.records.run_record import (
    CellSummary,
    CellVerdict,
    Outcome,
    RunInfo,
    RunOutcome,
    SeriesSummary,
    worst,
)
from labctl.records.series import Series
from labctl.records.stats import series_summary

# The counters the figures draw (everything else in series.csv stays out of memory): the 2007
# storms' servers (typeperf) ...
FIGURE_METRICS = frozenset(
    {"cpu_pct", "memory_used_mb", "nic_sent_util_pct", "nic_sent_bytes_per_s", "disk_queue_len"}
)
# ... and the VDI storms' arrays (read / write IOPS, latency) and ESXi hosts (CPU, memory)
VDI_SCENARIOS = ("vdi_storm", "scale_out", "write_cache_modes", "session_storm")
ARRAY_SOURCES = ("unity", "powerstore", "sc", "equallogic")  # the arrays' kinds (a source each)
VDI_FIGURE_METRICS = frozenset(
    {
        "read_iops",
        "write_iops",
        "latency_ms",
        "cpu_pct",
        "cpu.usage.average",
        "mem_usage_pct",
        "mem.usage.average",
    }
)
# vCenter's hosts are the VDI half's: a 2007 storm on a lab that also has VDI hosts draws none of them
VDI_HOST_SOURCES = ("vcenter",)
LOGON_SOURCE = "sessions"  # the launchers' series: the logon waterfall's phases among them


def figure_series(scenario: str, source: str, metric: str) -> bool:
    """Whether the figures of a cell of ``scenario`` draw this series."""
    if scenario in VDI_SCENARIOS:
        if source == LOGON_SOURCE:  # each session's logon, phase by phase (labctl.report.waterfall)
            return metric.startswith("logon_") and metric.endswith("_s")
        return metric in VDI_FIGURE_METRICS and (source in ARRAY_SOURCES or source in VDI_HOST_SOURCES)
    return metric in FIGURE_METRICS and source not in VDI_HOST_SOURCES


# Outcomes of a cell whose numbers do not cover a whole, healthy window: drawn marked
NOT_WHOLE = frozenset({Outcome.INTERRUPTED, Outcome.ERROR, Outcome.NO_DATA, Outcome.LAB_FAULT})
COPY_PATH_ORDER = ("local_to_local", "local_to_share", "share_to_local", "share_to_share")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def copy_path_label(path: str) -> str:
    """``local_to_share`` -> ``local → share`` (the paper's "local disk to remote share")."""
    a, sep, b = path.partition("_to_")
    return f"{a} → {b}" if sep else path.replace("_", " ")


def path_order(path: str) -> tuple[int, str]:
    return (COPY_PATH_ORDER.index(path) if path in COPY_PATH_ORDER else len(COPY_PATH_ORDER), path)


@dataclass
class CellView:
    """One cell: its summary and verdict, the figure series it recorded, and its numbers."""

    summary: CellSummary
    verdict: CellVerdict | None
    series: list[Series]
    metrics: dict[str, SeriesSummary]
    provisional: bool = False  # numbers over what was recorded: the cell was never summarised
    entities: dict[str, str] = dataclasses.field(default_factory=dict)  # named, or a sibling's
    burst_ts: float | None = None  # a killed cell: its last wake / reboot request (events.jsonl)

    @property
    def id(self) -> str:
        return self.summary.cell

    @property
    def outcome(self) -> Outcome:
        """The summary's outcome, never milder than its verdict's."""
        if self.verdict is None:
            return self.summary.outcome
        return worst([self.summary.outcome, self.verdict.outcome])

    @property
    def reason(self) -> str:
        if self.summary.reason:
            return self.summary.reason
        if self.verdict is not None and self.outcome is not Outcome.PASS:
            bad = [c for c in self.verdict.criteria if c.outcome is self.outcome and c.message]
            if bad:
                return bad[0].message
        return ""

    @property
    def whole(self) -> bool:
        """Measured over a whole, healthy window (not interrupted, no lab fault, no missing data)."""
        return self.outcome not in NOT_WHOLE and not self.provisional

    @property
    def interrupted(self) -> bool:
        return self.outcome in (Outcome.INTERRUPTED, Outcome.ERROR) or self.provisional

    @property
    def configuration(self) -> str:
        return self.summary.configuration or ""

    def param(self, name: str) -> Any:
        return self.summary.parameters.get(name)

    @property
    def copy_path(self) -> str | None:
        cp = self.param("copy_path")
        return str(cp) if cp else None

    @property
    def is_vdi(self) -> bool:
        return self.summary.scenario in VDI_SCENARIOS

    @property
    def is_matrix(self) -> bool:
        return self.summary.scenario == "copy_reboot" or self.copy_path is not None

    @property
    def group_size(self) -> int | None:
        n = _num(self.param("group_size"))
        return int(n) if n is not None else None

    @property
    def split(self) -> tuple[int, int]:
        return (int(_num(self.param("copiers")) or 0), int(_num(self.param("rebooters")) or 0))

    @property
    def split_label(self) -> str:
        c, r = self.split
        return f"{c} copy / {r} reboot"

    @property
    def judged_role(self) -> str | None:
        """Whose boot time and retries the cell is about: the rebooters of a matrix cell."""
        return "rebooter" if self.is_matrix else None

    @property
    def window_end(self) -> float | None:
        w = self.summary.window
        return w.end_ts_s if w is not None else None

    @property
    def t0(self) -> float | None:
        """Time zero of the over-time figures: the storm start, else the window's start, else
        (a killed cell) its last wake or reboot request, its first phase or its first sample."""
        s = self.summary
        if s.storm_start_ts_s is not None:
            return s.storm_start_ts_s
        if s.window is not None:
            return s.window.start_ts_s
        if self.burst_ts is not None:
            return self.burst_ts
        if s.phases:
            return min(p.start_ts_s for p in s.phases)
        firsts = [x.ts[0] for x in self.series if len(x)]
        return min(firsts) if firsts else None

    def metric(self, entity: str, metric: str) -> SeriesSummary | None:
        """The cell's summary of one series (any source; ``typeperf`` first)."""
        found = [m for m in self.metrics.values() if m.entity == entity and m.metric == metric]
        found.sort(key=lambda m: m.source != "typeperf")
        return found[0] if found else None

    def find(self, entity: str, metric: str) -> Series | None:
        for s in self.series:
            if s.entity == entity and s.metric == metric and len(s):
                return s
        return None

    def entity(self, name: str) -> str | None:
        return self.entities.get(name)


@dataclass
class RunView:
    path: Path
    info: RunInfo | None
    cells: list[CellView]

    @property
    def killed(self) -> bool:
        """run.json says running: the process died (or still runs); what it measured is shown."""
        return self.info is not None and self.info.outcome is RunOutcome.RUNNING


def kept_interval(s: Series) -> float | None:
    """The interval a series kept on average (its span over its steps): the yardstick for its gaps
    when no source's promise was recorded (a killed cell, a format-1 run). The median step would
    call every pause of a bursty source a gap."""
    if len(s) < 2 or s.ts[-1] <= s.ts[0]:
        return None
    return (s.ts[-1] - s.ts[0]) / (len(s) - 1)


def _provisional_metrics(series: Iterable[Series]) -> dict[str, SeriesSummary]:
    """A killed cell's numbers over everything it recorded, by the recorder's own function."""
    return {s.key: series_summary(s, interval_s=kept_interval(s)) for s in series}


def _borrowed_entities(cells: Sequence[CellView]) -> None:
    """A cell that names no entities (a killed cell's provisional summary) takes those of a
    cell of the same configuration, so its lines land on the same charts."""
    named: dict[str, dict[str, str]] = {}
    for c in cells:
        if c.summary.entities:
            named.setdefault(c.configuration, dict(c.summary.entities))
    for c in cells:
        c.entities = dict(c.summary.entities) or dict(named.get(c.configuration) or {})
        if "streaming_server" not in c.entities and not c.is_vdi:
            servers = sorted({s.entity for s in c.series if s.metric == "cpu_pct" and "/" not in s.entity})
            if servers:
                c.entities["streaming_server"] = servers[0]


BURST_ACTIONS = ("on", "reboot", "reset", "wake")  # what starts a storm (not the restore's "off")


def _burst(path: Path, cell: str) -> float | None:
    """When a killed cell sent its last wake or reboot burst (its time zero), from events.jsonl."""
    found = [
        float(e["lab_ts"])
        for e in read_events(path, cell=cell, kind="power.request")
        if isinstance(e.get("detail"), dict)
        and e["detail"].get("action") in BURST_ACTIONS
        and isinstance(e.get("lab_ts"), int | float)
    ]
    return max(found) if found else None


def load_run(run: Any) -> RunView:
    """The run folder (a path, a run id's folder or a RunFolder) for the reports."""
    path = run_path(run)
    info = read_run_info(path)
    summaries = read_cell_summaries(path)
    verdicts = read_cell_verdicts(path)
    by_cell: dict[str, list[Series]] = defaultdict(list)
    if summaries:
        for s in read_series(path):
            cell = summaries.get(s.cell)
            if cell is not None and figure_series(cell.scenario, s.source, s.metric):
                by_cell[s.cell].append(s)
    cells = []
    for cid, summary in summaries.items():
        series = by_cell.get(cid, [])
        provisional = not summary.metrics and bool(series)
        metrics = _provisional_metrics(series) if provisional else dict(summary.metrics)
        burst = _burst(path, cid) if provisional else None
        cells.append(CellView(summary, verdicts.get(cid), series, metrics, provisional, burst_ts=burst))
    order = {c: i for i, c in enumerate(info.cells)} if info is not None else {}
    # the order they ran in (run.json), then the cells it does not list (killed, or format 1) by id
    cells.sort(key=lambda c: (order.get(c.id, len(order)), c.id))
    _borrowed_entities(cells)
    return RunView(path, info, cells)
