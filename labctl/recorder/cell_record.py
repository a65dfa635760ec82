"""The seam between a cell's run and its outputs: what was measured and judged, as one
:class:`~labctl.records.run_record.CellRecord` for the sinks. No pytest, no scenario, no I/O
beyond what the recorder already holds in memory.

The cell runner (the pytest plugin) calls one of two functions when a cell ends:

    summary = result.summary(head)                 # the scenario's own CellSummary
    record = judged_record(summary, recorder, criteria, names)
    sinks.cell_finished(record, recorder)          # run folder, Allure, JUnit

    # the scenario raised, or the run was interrupted:
    record = broken_record(head, recorder, Outcome.INTERRUPTED, exc, summary=partial_or_None)

``judged_record`` fills ``metrics`` (every series of the cell over the window: gaps, coverage),
judges the criteria (``criteria.judge(recorder, summary, names=..., window=...)``, e.g. a
:class:`~labctl.criteria.model.CriteriaFile`), and sets the cell's ``outcome`` (the worst of the
verdict, the scenario's own outcome, a failed restore and power changes the run did not make)
and ``reason`` (one line: the worst thing's message, naming the machines or endpoints).

``broken_record`` keeps what a cell measured before it broke off: the metrics so far, and the
verdict when the scenario got far enough to say what its window was (a failed restore after a
fully measured window keeps its verdicts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from labctl.recorder.recorder import Recorder, SourceFault
from labctl.records.run_record import CellRecord, CellSummary, CellVerdict, Outcome, Window, worst
from labctl.records.series import SeriesProvider

REASON_MAX = 400  # characters of a cell's one-line reason
UNEXPECTED_POWER = "power.unexpected"  # event kind: a power change the run did not make


class Judge(Protocol):
    """What judges a cell: a criteria file (:class:`labctl.criteria.model.CriteriaFile`)."""

    def judge(
        self, data: SeriesProvider, summary: CellSummary, *, names: Any, window: Any = None
    ) -> CellVerdict: ...


class CellIdentity(Protocol):
    """Who a cell is (:class:`labctl.scenarios.base.CellHead` is one)."""

    @property
    def cell(self) -> str: ...

    @property
    def plan(self) -> str: ...

    @property
    def scenario(self) -> str: ...

    @property
    def configuration(self) -> str | None: ...

    @property
    def parameters(self) -> dict[str, Any]: ...


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REASON_MAX else line[: REASON_MAX - 1] + "…"


def _rel(ts: float, window: Window | None) -> str:
    return f"t = {ts - window.start_ts_s:.0f} s" if window is not None else f"lab {ts:.0f}"


def _unexpected_power(recorder: Recorder, cell: str, window: Window | None) -> str:
    """``power changed outside the run: optiplex-003 (off at t = 45 s), ...`` or ''."""
    seen = recorder.events(cell=cell, kind=UNEXPECTED_POWER)
    if not seen:
        return ""
    parts = []
    for e in seen[:6]:
        seen_as = e.detail.get("detail") or e.detail.get("state") or ""  # "expected off, seen on"
        parts.append(f"{e.target} ({seen_as + ' ' if seen_as else ''}at {_rel(e.lab_ts, window)})")
    more = f" and {len(seen) - 6} more" if len(seen) > 6 else ""
    return "power changed outside the run: " + ", ".join(parts) + more


CONTROLLER_UP = "controller_up"  # metric of an array's controller: 1 serving, 0 failed


def _failed_controllers(recorder: Recorder, cell: str, window: Window | None) -> list[str]:
    """``array controller arr-1/ctrl:spb failed at t = 45 s`` for each array controller whose
    ``controller_up`` series reads 0 in the window (a failover: its peer serves its volumes)."""
    out = []
    lo, hi = window.as_tuple() if window is not None else (-float("inf"), float("inf"))
    for series in recorder.series(cell=cell, metric=CONTROLLER_UP):
        down = [t for t, v in zip(series.ts, series.values, strict=True) if v < 0.5 and lo <= t <= hi]
        if down:
            out.append(
                f"array controller {series.entity} failed at {_rel(down[0], window)} "
                "(a failover: its peer serves its volumes)"
            )
    return out


def _restore_problem(s: CellSummary) -> str:
    r = s.restore
    if r is None or r.ok:
        return ""
    left = (
        f"; left on: {', '.join(r.left_on[:8])}" + (" ..." if len(r.left_on) > 8 else "") if r.left_on else ""
    )
    return f"restore failed: {r.detail or 'not every machine reached its state'}{left}"


def _faults(recorder: Recorder, window: Window | None) -> list[SourceFault]:
    span = window.as_tuple() if window is not None else (None, None)
    return recorder.source_faults(since_ts=span[0], until_ts=span[1])


# An endpoint whose source failed this many reads in a cell's window, and was still failing when
# the window ended (or failed for half of it), is a lab fault of the cell, named in its reason: a
# BMC that answers 503 or hangs, an array or vCenter that stops answering. Fewer failed reads, or a
# short outage it recovered from (a slow answer on a loaded machine, which a simulated lab's time
# scale stretches to minutes of lab time), are only listed beside another fault.
FAILED_READS_FAULT = 3
OUTAGE_SHARE_FAULT = 0.5
# what an endpoint of a source is, by the source's name before the colon, for the reason
_THINGS = {
    "redfish": "BMC",
    "ipmi": "BMC",
    "pvs": "streaming server",
    "storage": "array",
    "vcenter": "vCenter",
    "typeperf": "server",
}


def _is_fault(f: SourceFault, window: Window | None) -> bool:
    if f.count < FAILED_READS_FAULT:
        return False
    end = window.end_ts_s if window is not None else float("inf")
    if f.recovered_ts is None or f.recovered_ts >= end:  # still failing when the window ended
        return True
    start = max(f.first_ts, window.start_ts_s) if window is not None else f.first_ts
    return window is not None and f.recovered_ts - start >= OUTAGE_SHARE_FAULT * window.duration_s


def endpoint_faults(faults: Sequence[SourceFault], window: Window | None = None) -> list[str]:
    """One line per endpoint that kept failing its source (see :data:`FAILED_READS_FAULT`):
    ``BMC infra-01 failed 12 reads (redfish:power): <its last error>``."""
    out = []
    for f in sorted(faults, key=lambda f: (-f.count, f.source, f.endpoint)):
        if not _is_fault(f, window):
            continue
        thing = _THINGS.get(f.source.split(":", 1)[0], "endpoint")
        who = f.endpoint or (f.source.split(":", 1)[1] if ":" in f.source else f.source)
        back = ", then answered again" if f.recovered else ""
        out.append(f"{thing} {who} failed {f.count} reads ({f.source}{back}): {f.error}")
    return out


def cell_reason(
    parts: Sequence[tuple[Outcome, str]], faults: Sequence[SourceFault] = (), window: Window | None = None
) -> str:
    """One line: the worst part's message; a second part at fail or worse after ``also:``; the
    endpoints that failed their sources when data is missing."""
    bad = [(o, m) for o, m in parts if o is not Outcome.PASS and m]
    if not bad:
        return ""
    ranked = sorted(bad, key=lambda p: -p[0].severity)
    outcome, text = ranked[0]
    others = [m for o, m in ranked[1:] if o.severity >= Outcome.FAIL.severity and m != text]
    if others:
        text += f"; also: {others[0]}"
    minor = [f for f in faults if not _is_fault(f, window)]  # the others are parts of their own
    if minor and outcome in (Outcome.NO_DATA, Outcome.LAB_FAULT, Outcome.ERROR):
        text += " (source errors: " + "; ".join(f.text() for f in minor[:3]) + ")"
    return _one_line(text)


def _verdict_parts(verdict: CellVerdict | None) -> list[tuple[Outcome, str]]:
    if verdict is None:
        return []
    return [(c.outcome, c.message) for c in verdict.criteria if c.outcome is not Outcome.PASS and c.counts]


def judged_record(
    summary: CellSummary,
    recorder: Recorder,
    criteria: Judge | None,
    names: Any = None,
    *,
    lab_faults: Sequence[str] = (),
) -> CellRecord:
    """The record of a cell the scenario finished: ``summary`` (from ``result.summary(head)``)
    with ``metrics`` over its window, judged by ``criteria`` (None: no criteria file), with
    ``outcome`` and ``reason`` set. ``lab_faults``: what else the runner knows went wrong with
    the lab during the cell, one line each (e.g. the lease on the lab was lost). Raises what
    ``criteria.judge`` raises for a bad file."""
    window = summary.window
    s = summary.model_copy(update={"metrics": recorder.summaries(summary.cell, window)})
    verdict = criteria.judge(recorder, s, names=names, window=window) if criteria is not None else None
    source_faults = _faults(recorder, window)
    # the endpoints that kept failing come first: they are the cause of what the scenario saw after
    # (a vCenter that died first, then the restore through it)
    parts: list[tuple[Outcome, str]] = [
        (Outcome.LAB_FAULT, p) for p in endpoint_faults(source_faults, window) if p not in s.reason
    ]
    parts.append((s.outcome, s.reason or f"the scenario says {s.outcome.value}"))
    parts += _verdict_parts(verdict)
    for problem in (
        *_failed_controllers(recorder, s.cell, window),
        _unexpected_power(recorder, s.cell, window),
        *lab_faults,
    ):
        if problem and problem not in s.reason:
            parts.append((Outcome.LAB_FAULT, problem))
    outcome = worst([s.outcome, *(o for o, _ in parts if o is not Outcome.PASS)])
    if verdict is not None:
        outcome = worst([outcome, verdict.outcome])
    reason = cell_reason(parts, source_faults, window) if outcome is not Outcome.PASS else ""
    # a failed restore after a measured window keeps the verdict; whether it also fails the cell is
    # the scenario's call (its own outcome), but it is always said
    restore = _restore_problem(s)
    if restore and restore not in reason:
        reason = _one_line(f"{reason}; {restore}" if reason else restore)
    return CellRecord(summary=s.model_copy(update={"outcome": outcome, "reason": reason}), verdict=verdict)


def error_text(error: BaseException | str) -> str:
    """One line for an exception: its message's first line, or its type."""
    if isinstance(error, str):
        return _one_line(error) or "error"
    if isinstance(error, KeyboardInterrupt):
        return "Ctrl-C"
    text = str(error).strip()
    first = text.splitlines()[0] if text else ""
    return _one_line(f"{type(error).__name__}: {first}" if first else type(error).__name__)


def broken_record(
    head: CellIdentity,
    recorder: Recorder,
    outcome: Outcome,
    error: BaseException | str,
    *,
    summary: CellSummary | None = None,
    criteria: Judge | None = None,
    names: Any = None,
    window: Window | None = None,
) -> CellRecord:
    """The record of a cell that broke off (``outcome``: ``interrupted``, ``error``, or
    ``lab_fault`` for a lab that failed the scenario): what was measured so far, the reason
    (``interrupted: Ctrl-C``), and the verdict when ``summary`` (what the scenario still
    returned) names a window and ``criteria`` are given. ``window``: the span measured when the
    summary names none (e.g. the cell's start to now), else the metrics cover the whole cell."""
    base = summary or CellSummary(
        cell=head.cell,
        plan=head.plan,
        scenario=head.scenario,
        configuration=head.configuration,
        parameters=dict(head.parameters),
        outcome=outcome,
    )
    if base.window is None and window is not None:
        base = base.model_copy(update={"window": window})
    window = base.window
    s = base.model_copy(update={"metrics": recorder.summaries(base.cell, window)})
    verdict = None
    if criteria is not None and summary is not None and summary.window is not None:
        verdict = criteria.judge(recorder, s, names=names, window=window)
    why = f"{outcome.value.replace('_', ' ')}: {error_text(error)}"
    parts: list[tuple[Outcome, str]] = [(outcome, why), *_verdict_parts(verdict)]
    if summary is not None and summary.outcome is not Outcome.PASS:
        parts.append((summary.outcome, summary.reason))
    restore = _restore_problem(s)
    if restore:
        parts.append((Outcome.LAB_FAULT, restore))
    source_faults = _faults(recorder, window)
    parts += [(Outcome.LAB_FAULT, f) for f in endpoint_faults(source_faults, window)]
    parts += [(Outcome.LAB_FAULT, f) for f in _failed_controllers(recorder, s.cell, window)]
    final = worst([outcome, *(o for o, _ in parts)])  # interrupted and error outrank all else
    reason = cell_reason([(final, why), *(p for p in parts if p[1] != why)], source_faults, window)
    return CellRecord(summary=s.model_copy(update={"outcome": final, "reason": reason}), verdict=verdict)
