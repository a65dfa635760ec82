"""A :class:`~labctl.sizing.measured.MeasuredProfile` from a run folder: ``labctl size measured --run``.

What a run measured, per desktop and per phase, and what the storage was seen to sustain within
the run's criteria. Only cells that passed (``pass`` or ``marginal``) over a whole window count: a
failed, interrupted or unmeasured cell sizes nothing. Each scenario kind has a reader
(:data:`READERS`, keyed by the summary's ``scenario``); a run whose cells no reader knows gives a
one-line error naming what it has.

**VDI runs** (``vdi_storm``, ``scale_out``, ``write_cache_modes``): the figures come from each cell
summary's ``extra`` where a plan wrote them there (the names are the ``labctl size measured``
options'), else from its measured ``phase_figures`` (IOPS per desktop and the write share,
``1 - read_share_pct``, of every array together; per array, the highest phase peak it carried in a
cell whose latency criterion passed, on the RAID level of its first tier in the run's inventory):

- ``<phase>_iops_per_desktop`` and ``<phase>_write_share`` (0..1) for ``boot``, ``login``,
  ``steady``: host IOPS per desktop in the phase and the share of them that are writes;
- ``array_iops`` and ``array_write_share``: host IOPS one array sustained within the criteria
  and the write share then; ``raid``: the array's RAID level (else the inventory's volume).

When several cells give a phase, the highest IOPS per desktop is taken (the most demanding
measured: the sizing errs on the safe side), and the highest array figure; a 2007 boot storm's
boot figure is the largest passing group's instead (see below).

**2007 runs** (``boot_storm``): the streaming server's write-cache volume is the "array". Per
passing boot-storm cell, the boot phase runs from the wake to the last client seen ready
(``time_to_ready_s``); the volume's mean IOPS over that span (``series.csv``, ``disk_iops``) over
the group size is the boot IOPS per client; the largest passing group's is taken (a small group
boots in a denser burst and costs more per client: charging a large group that cost would size
fewer clients per set than the set was seen to boot). The write share is the volume's own read/write split
where the run recorded one (``disk_read_iops``/``disk_write_iops``), else 100 %: the write-cache
volume receives the clients' writes (their reads come from the vDisk through the server's file
cache), and a share of 100 % applies the RAID penalty to every I/O, the safe side. The capability
is the highest such span mean in a cell whose write-cache queue criterion passed, on the volume's
RAID level from the run's inventory. A volume that never left its queue band was never saturated:
its capability, and the desktops per set it gives, are a lower bound.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from labctl.errors import BadInputError
from labctl.recorder.cell_files import read_cell_summaries, read_cell_verdicts
from labctl.recorder.lab_record import resolved_lab
from labctl.recorder.runfolder import read_run_info
from labctl.recorder.series import read_series, run_path
from labctl.records.run_record import CellSummary, CellVerdict, Outcome
from labctl.sizing.exact import Number, exact
from labctl.sizing.load import Phase, PhaseLoad
from labctl.sizing.measured import ArrayCapability, MeasuredProfile
from labctl.sizing.raid import RaidLevel, raid_level

WRITE_CACHE_QUEUE = "disk_queue_len"  # the criterion on this metric of the write-cache volume decides
STORM_ROLE = "storm"
PASSED = (Outcome.PASS, Outcome.MARGINAL)
DECIMALS = 4  # measured figures are kept to 4 decimals: exact arithmetic on noise would print p/q noise


@dataclass(frozen=True)
class PhaseFigure:
    """One cell's measurement of a phase: IOPS per desktop, write share, and where it came from."""

    phase: Phase
    iops_per_desktop: Fraction
    write_share: Fraction
    cell: str
    detail: str = ""  # how it was derived, one line
    desktops: int = 0  # desktops (clients) of the load it was measured at
    largest_load_wins: bool = False  # chosen from the largest load measured, not the highest figure


@dataclass(frozen=True)
class ArrayFigure:
    """One cell's evidence of what the storage sustained within the criteria."""

    iops: Fraction
    write_share: Fraction
    raid: RaidLevel
    cell: str
    saturated: bool  # the cell's storage criterion left its pass band (else the figure is a lower bound)
    detail: str = ""


@dataclass
class RunFigures:
    """What a reader found in a run: per-phase figures and array figures, with notes."""

    phases: list[PhaseFigure] = field(default_factory=list)
    arrays: list[ArrayFigure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunProfile:
    """The profile :func:`measured_profile` gives, with the figures it was chosen from."""

    profile: MeasuredProfile
    figures: RunFigures
    chosen: dict[Phase, PhaseFigure]
    array: ArrayFigure

    @property
    def lower_bound(self) -> bool:
        """The storage was never seen saturated: the capability is what it carried, not its limit."""
        return not self.array.saturated

    def lines(self) -> list[str]:
        out = [f"Measured in run {self.profile.source}:"]
        for phase, f in self.chosen.items():
            out.append(
                f"  {phase}: {_show(f.iops_per_desktop)} IOPS per desktop at {_show(f.write_share * 100)} % writes"
                f" (cell {f.cell}{'; ' + f.detail if f.detail else ''})"
            )
        a = self.array
        out.append(
            f"  storage: {_show(a.iops)} IOPS at {_show(a.write_share * 100)} % writes on {a.raid}"
            f" (cell {a.cell}{'; ' + a.detail if a.detail else ''})"
        )
        if self.lower_bound:
            out.append(
                "  the storage stayed within its criterion in every cell: its capability is a lower bound"
            )
        out += [f"  note: {n}" for n in self.figures.notes]
        return out


def _show(x: Fraction) -> str:
    return f"{float(x):.4g}"


def _measured(value: Number, field_: str) -> Fraction:
    """A measured float as an exact fraction of its first :data:`DECIMALS` decimals."""
    return exact(round(float(exact(value, field_)), DECIMALS), field_)


def _passed(summary: CellSummary, verdict: CellVerdict | None) -> bool:
    outcomes = [summary.outcome] + ([verdict.outcome] if verdict is not None else [])
    return verdict is not None and all(o in PASSED for o in outcomes) and summary.window is not None


# --- VDI: figures the plans wrote into the summary --------------------------------------------------


def _phase_figures(s: CellSummary, phase: Phase) -> tuple[float, float] | None:
    """(IOPS per desktop, write share) of a phase from the summary's measured phase figures (every
    array of the cell together), when the plan wrote no ``<phase>_write_share`` into ``extra``."""
    f = next((f for f in s.phase_figures if f.phase == str(phase) and not f.array), None)
    if f is None or f.iops_per_desktop is None or f.read_share_pct is None or f.iops_per_desktop <= 0:
        return None
    return f.iops_per_desktop, max(0.0, min(1.0, 1.0 - f.read_share_pct / 100.0))


def _latency_outcome(v: CellVerdict) -> Outcome | None:
    """The worst outcome of the cell's criteria on array latency (the 2012 paper's 20 ms)."""
    found = [c.outcome for c in v.criteria if any(r.metric == "latency_ms" for r in c.series)]
    return max(found, key=lambda o: o.severity) if found else None


def _array_from_phases(run: Path, s: CellSummary, v: CellVerdict, out: RunFigures) -> None:
    """What each array carried within the latency criterion: its highest phase peak (per array)."""
    latency = _latency_outcome(v)
    if latency not in PASSED:
        return
    for f in s.phase_figures:
        if not f.array or f.iops_peak is None or f.read_share_pct is None or f.iops_peak <= 0:
            continue
        level = _vdi_array_raid(run, s, f.array)
        if level is None:
            out.notes.append(f"{s.cell}: no RAID level of array {f.array} in the run's inventory")
            return
        out.arrays.append(
            ArrayFigure(
                _measured(f.iops_peak, "array_iops"),
                _measured(max(0.0, min(1.0, 1.0 - f.read_share_pct / 100.0)), "array_write_share"),
                raid_level(level),
                s.cell,
                saturated=latency is Outcome.MARGINAL,
                detail=f"{f.array}, {f.phase} peak, latency criterion {latency.value if latency else '-'}",
            )
        )


def _vdi_array_raid(run: Path, s: CellSummary, array: str) -> int | str | None:
    """The RAID level of the array's performance tier (its first tier: the SSDs of a hybrid)."""
    lab = resolved_lab(run, s.configuration)
    arrays = ((lab.data.get("vdi") or {}).get("arrays") or {}) if lab is not None else {}
    a = arrays.get(array) if isinstance(arrays, dict) else None
    tiers = (a or {}).get("tiers") or []
    return tiers[0].get("raid") if tiers else None


def _vdi(run: Path, cells: Sequence[tuple[CellSummary, CellVerdict | None]]) -> RunFigures:
    out = RunFigures()
    for s, v in cells:
        if not _passed(s, v):
            continue
        x = s.extra
        for phase in Phase:
            iops, share = x.get(f"{phase}_iops_per_desktop"), x.get(f"{phase}_write_share")
            if not isinstance(share, int | float):
                measured = _phase_figures(s, phase)
                if measured is not None:
                    iops, share = measured
            if isinstance(iops, int | float) and isinstance(share, int | float):
                out.phases.append(
                    PhaseFigure(
                        phase,
                        _measured(iops, f"{phase}_iops_per_desktop"),
                        _measured(share, f"{phase}_write_share"),
                        s.cell,
                    )
                )
        iops, share, raid = x.get("array_iops"), x.get("array_write_share"), x.get("raid")
        if not isinstance(iops, int | float) and v is not None:
            _array_from_phases(run, s, v, out)
            continue
        if isinstance(iops, int | float) and isinstance(share, int | float):
            level = raid if isinstance(raid, int | str) and raid != "" else _array_raid(run, s)
            if level is None:
                out.notes.append(f"{s.cell}: array figures without a RAID level (no `raid` in its summary)")
                continue
            out.arrays.append(
                ArrayFigure(
                    _measured(iops, "array_iops"),
                    _measured(share, "array_write_share"),
                    raid_level(level),
                    s.cell,
                    saturated=bool(v is not None and v.outcome is Outcome.MARGINAL),
                )
            )
    return out


def _array_raid(run: Path, s: CellSummary) -> int | str | None:
    disk = s.entities.get("array_volume") or s.entities.get("write_cache_disk")
    lab = resolved_lab(run, s.configuration)
    vol = lab.volume(disk) if lab is not None and disk else None
    return vol.get("raid") if vol is not None else None


# --- 2007: the write-cache volume of the streaming side ---------------------------------------------


def _span_mean(run: Path, cell: str, entity: str, metric: str, span: tuple[float, float]) -> float | None:
    vals = [
        v
        for s in read_series(run, cell=cell, entity=entity, metric=metric)
        for t, v in zip(s.ts, s.values, strict=True)
        if span[0] <= t <= span[1]
    ]
    return statistics.fmean(vals) if vals else None


def _queue_criterion(v: CellVerdict, disk: str) -> Outcome | None:
    for c in v.criteria:
        if any(r.metric == WRITE_CACHE_QUEUE and r.entity == disk for r in c.series):
            return c.outcome
    return None


def _storm_2007(run: Path, cells: Sequence[tuple[CellSummary, CellVerdict | None]]) -> RunFigures:
    out = RunFigures()
    for s, v in cells:
        disk = s.entities.get("write_cache_disk")
        n = s.parameters.get("group_size")
        if not _passed(s, v) or v is None or not disk or not isinstance(n, int) or n < 1:
            continue
        ready = [c.time_to_ready_s for c in s.by_role(STORM_ROLE) if c.time_to_ready_s is not None]
        if not ready or s.window is None:
            continue
        start = s.storm_start_ts_s if s.storm_start_ts_s is not None else s.window.start_ts_s
        span = (start, start + max(ready))
        iops = _span_mean(run, s.cell, disk, "disk_iops", span)
        if iops is None:
            out.notes.append(f"{s.cell}: no disk_iops samples of {disk} in its boot phase")
            continue
        reads = _span_mean(run, s.cell, disk, "disk_read_iops", span)
        writes = _span_mean(run, s.cell, disk, "disk_write_iops", span)
        if reads is not None and writes is not None and reads + writes > 0:
            share, how = writes / (reads + writes), "read/write split as recorded"
        else:
            share, how = 1.0, "100 % writes assumed: the write-cache volume"
        detail = f"{disk} {iops:.1f} IOPS over the {max(ready):.0f} s boot phase / {n} clients; {how}"
        out.phases.append(
            PhaseFigure(
                Phase.BOOT,
                _measured(iops, "array_iops") / n,  # exact over n: the set's own cell gives n desktops
                _measured(share, "boot_write_share"),
                s.cell,
                detail,
                desktops=n,
                largest_load_wins=True,
            )
        )
        queue = _queue_criterion(v, disk)
        level = _array_raid(run, s)
        if queue is None or level is None:
            continue
        out.arrays.append(
            ArrayFigure(
                _measured(iops, "array_iops"),
                _measured(share, "array_write_share"),
                raid_level(level),
                s.cell,
                saturated=queue is Outcome.MARGINAL,
                detail=f"{disk}, {n} clients booting, queue criterion {queue.value}",
            )
        )
    return out


Reader = Callable[[Path, Sequence[tuple[CellSummary, CellVerdict | None]]], RunFigures]

READERS: dict[str, Reader] = {
    "boot_storm": _storm_2007,
    "vdi_storm": _vdi,
    "scale_out": _vdi,
    "write_cache_modes": _vdi,
}


def run_figures(run: Any, cells: Collection[str] | None = None) -> RunFigures:
    """Every phase and array figure the run's passing cells give (only ``cells`` when given: the
    cells a certificate certifies), by the readers of their scenarios."""
    path = run_path(run)
    summaries = read_cell_summaries(path)
    if cells is not None:
        summaries = {k: v for k, v in summaries.items() if k in cells}
    verdicts = read_cell_verdicts(path)
    by_scenario: dict[str, list[tuple[CellSummary, CellVerdict | None]]] = {}
    for cid, s in summaries.items():
        by_scenario.setdefault(s.scenario, []).append((s, verdicts.get(cid)))
    out = RunFigures()
    for scenario, judged in sorted(by_scenario.items()):
        reader = READERS.get(scenario)
        if reader is None:
            continue
        got = reader(path, judged)
        out.phases += got.phases
        out.arrays += got.arrays
        out.notes += got.notes
    return out


def _rank(f: PhaseFigure) -> tuple[float, ...]:
    """How phase figures compete: a 2007 boot storm's by the largest group (the load a certificate
    certifies: small groups boot in a denser burst and cost more per client, and charging every
    client of a large group that would size fewer clients than were seen booting), else the
    highest figure (the most demanding measured: the safe side)."""
    if f.largest_load_wins:
        return (f.desktops, float(f.iops_per_desktop))
    return (float(f.iops_per_desktop),)


def run_profile(run: Any, cells: Collection[str] | None = None) -> RunProfile:
    """:func:`measured_profile` with the figures it was chosen from (for reports); ``cells``: only
    these cells count (a certificate passes the cells it certifies)."""
    path = run_path(run)
    if not (path / "run.json").is_file():
        raise BadInputError(f"{path}: not a run folder (no run.json; give a folder under results/)")
    figures = run_figures(path, cells)
    info = read_run_info(path)
    if not figures.phases or not figures.arrays:
        scenarios = sorted({s.scenario for s in read_cell_summaries(path).values()})
        missing = "per-desktop IOPS per phase" if not figures.phases else "the storage's sustained IOPS"
        raise BadInputError(
            f"{path.name}: no passing cell gives {missing} (scenarios: {', '.join(scenarios) or 'none'}; "
            f"sizing reads {', '.join(sorted(READERS))}): give the figures as options instead"
        )
    chosen: dict[Phase, PhaseFigure] = {}
    for f in figures.phases:
        if f.phase not in chosen or _rank(f) > _rank(chosen[f.phase]):
            chosen[f.phase] = f
    chosen = {p: chosen[p] for p in Phase if p in chosen}
    array = max(figures.arrays, key=lambda a: (a.iops, a.cell))
    profile = MeasuredProfile(
        {p: PhaseLoad(f.iops_per_desktop, f.write_share) for p, f in chosen.items()},
        ArrayCapability(array.iops, array.write_share, array.raid),
        info.run_id if info is not None else path.name,
    )
    return RunProfile(profile, figures, chosen, array)


def measured_profile(run_folder: Any) -> MeasuredProfile:
    """Per-desktop IOPS per phase and the storage's capability, as a run measured them (see the
    module's docstring for what each kind of run gives). Raises :class:`BadInputError` (one line)
    when no passing cell of the run gives them."""
    return run_profile(run_folder).profile
