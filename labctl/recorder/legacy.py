"""Format 1 of the cell files (the untyped dicts written before the typed run record), read as the models.

- :func:`summary_from_v1` / :func:`verdict_from_v1`: read an old run's ``summary.json`` /
  ``verdicts.json`` as the typed models, so ``labctl report`` and ``labctl compare`` still show
  runs measured before format 2.
"""

from __future__ import annotations

from typing import Any

from labctl.records.run_record import (
    Band,
    CellSummary,
    CellVerdict,
    ClientOutcome,
    CriterionVerdict,
    EntityValue,
    Outcome,
    SeriesRef,
    SeriesSummary,
    Window,
)

# format-1 summary keys that were the cell's own parameters
_PARAMETERS = ("group_size", "copiers", "rebooters", "copy_path")
# and scalars that go to `extra`
_EXTRA = ("back_to_baseline_ts_s", "wake_spread_s", "reboot_spread_s", "window_s")
_OUTCOMES = {"passed": Outcome.PASS, "failed": Outcome.FAIL, "broken": Outcome.ERROR}
_SUMMARY_STATS = ("start_ts_s", "end_ts_s", "peak", "peak_ts_s", "mean", "p95", "min", "last")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)


def _outcome(value: Any, default: Outcome) -> Outcome:
    if isinstance(value, str):
        if value in _OUTCOMES:
            return _OUTCOMES[value]
        try:
            return Outcome(value)
        except ValueError:
            pass
    return default


def _client(name: str, c: dict[str, Any]) -> ClientOutcome:
    role = str(c.get("role") or "storm")
    boot = _num(c.get("boot_time_s"))
    copy = _num(c.get("copy_s"))
    outcome = c.get("outcome")
    if not isinstance(outcome, str) or not outcome:
        if role == "copier":
            outcome = "copied" if copy is not None and c.get("ok", True) else "copy_failed"
        else:
            outcome = "ready" if c.get("ready") or boot is not None else "timeout"
    retries = _num(c.get("retries"))
    return ClientOutcome(
        name=name,
        role=role,
        outcome=outcome,
        boot_time_s=boot,
        retries=int(retries) if retries is not None else None,
        time_to_ready_s=_num(c.get("time_to_ready_s")),
        copy_s=copy,
        detail=str(c.get("detail") or ""),
    )


def _metric(key: str, m: dict[str, Any]) -> SeriesSummary | None:
    source, _, rest = key.partition("/")
    entity, _, metric = rest.rpartition("/")
    if not (source and entity and metric):
        return None
    return SeriesSummary(
        source=source,
        entity=entity,
        metric=metric,
        unit=str(m.get("unit") or ""),
        samples=int(_num(m.get("samples")) or 0),
        **{k: _num(m.get(k)) for k in _SUMMARY_STATS},
    )


def summary_from_v1(data: dict[str, Any], cell: str, verdict_outcome: Outcome | None = None) -> CellSummary:
    """A format-1 ``summary.json`` as a :class:`CellSummary`. Its outcome is the summary's own (a
    partial summary's ``interrupted`` / ``error``), else the verdict's, else ``pass`` (format 1
    failed a cell only through its verdicts)."""
    plan = str(data.get("plan") or cell.split("-", 1)[0])
    start = _num(data.get("storm_start_ts_s"))
    length = _num(data.get("window_s"))
    clients: dict[str, Any] = data["clients"] if isinstance(data.get("clients"), dict) else {}
    metrics: dict[str, Any] = data["metrics"] if isinstance(data.get("metrics"), dict) else {}
    entities = {
        k: data[v]
        for k, v in (("streaming_server", "server"), ("write_cache_disk", "write_cache_disk"))
        if isinstance(data.get(v), str) and data[v]
    }
    summaries = {k: _metric(k, m) for k, m in metrics.items() if isinstance(m, dict)}
    return CellSummary(
        format=1,
        cell=str(data.get("cell") or cell),
        plan=plan,
        scenario=str(data.get("scenario") or plan),
        configuration=data.get("configuration") if isinstance(data.get("configuration"), str) else None,
        parameters={k: data[k] for k in _PARAMETERS if data.get(k) is not None},
        outcome=_outcome(data.get("outcome"), verdict_outcome or Outcome.PASS),
        reason=str(data.get("error") or data.get("reason") or ""),
        window=Window(start_ts_s=start, end_ts_s=start + length) if start is not None and length else None,
        storm_start_ts_s=start,
        entities=entities,
        clients={str(n): _client(str(n), c) for n, c in clients.items() if isinstance(c, dict)},
        metrics={k: s for k, s in summaries.items() if s is not None},
        extra={k: _num(data.get(k)) for k in _EXTRA if _num(data.get(k)) is not None},
    )


def _band(b: Any) -> Band | None:
    if not isinstance(b, dict):
        return None
    return Band(
        min=_num(b.get("min")),
        max=_num(b.get("max")),
        min_expr=b.get("min_expr") if isinstance(b.get("min_expr"), str) else None,
        max_expr=b.get("max_expr") if isinstance(b.get("max_expr"), str) else None,
    )


def _criterion(r: dict[str, Any]) -> CriterionVerdict:
    w = r.get("window")
    window = None
    if isinstance(w, list | tuple) and len(w) == 2 and _num(w[0]) is not None and _num(w[1]) is not None:
        window = Window(start_ts_s=float(w[0]), end_ts_s=float(w[1]))
    entities = [
        EntityValue(
            entity=str(e.get("entity")),
            value=float(e["value"]),
            outcome=_outcome(e.get("outcome"), Outcome.NO_DATA),
            first_crossing_ts=_num(e.get("first_crossing_ts")),
            samples=int(_num(e.get("samples")) or 0),
        )
        for e in r.get("entities") or []
        if isinstance(e, dict) and _num(e.get("value")) is not None
    ]
    refs = [
        SeriesRef(**{k: str(x.get(k) or "") for k in ("file", "cell", "source", "entity", "metric")})
        for x in r.get("series") or []
        if isinstance(x, dict)
    ]
    return CriterionVerdict(
        name=str(r.get("name") or "?"),
        description=str(r.get("description") or ""),
        required=bool(r.get("required", True)),
        outcome=_outcome(r.get("outcome"), Outcome.NO_DATA),
        statistic=str(r.get("statistic") or ""),
        unit=str(r.get("unit") or ""),
        selector=str(r.get("selector") or ""),
        observed=_num(r.get("observed")),
        entity=r.get("entity") if isinstance(r.get("entity"), str) else None,
        pass_band=_band(r.get("pass_band")),
        marginal_band=_band(r.get("marginal_band")),
        threshold=_num(r.get("threshold")),
        first_crossing_ts=_num(r.get("first_crossing_ts")),
        window=window,
        entities=entities,
        missing=[str(m) for m in r.get("missing") or []],
        series=refs,
        message=str(r.get("message") or ""),
    )


def verdict_from_v1(data: dict[str, Any], cell: str) -> CellVerdict:
    """A format-1 ``verdicts.json`` as a :class:`CellVerdict`."""
    criteria = [_criterion(r) for r in data.get("criteria") or [] if isinstance(r, dict)]
    return CellVerdict(
        format=1,
        cell=str(data.get("cell") or cell),
        outcome=_outcome(data.get("outcome"), Outcome.NO_DATA),
        criteria=criteria,
    )
