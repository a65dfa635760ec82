"""The former way to judge a cell, kept for the code that still calls it (the pytest plugin's
``Cell.finish``, the report's Allure helpers and their tests): ``evaluate(criteria, data,
cell=..., window=(t0, t1), names=..., expected={"clients": [...]})`` returning a verdict with
``.results``, ``.write(run)`` and ``.raise_for_outcome()``.

It builds the cell summary the new evaluation needs from what the former plugin recorded (per-
machine values as ``result`` samples, the expected machines by list) and judges through
:func:`labctl.criteria.evaluate.evaluate`: one judgement, two shapes. Remove this module with the
last caller (the cell runner of :mod:`labctl.recorder.cell_record` needs none of it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labctl.criteria.evaluate import evaluate, raise_for_outcome
from labctl.criteria.model import LEGACY_ROLES, CriteriaFile, Criterion
from labctl.criteria.variables import Names
from labctl.records.run_record import (
    CellSummary,
    CellVerdict,
    ClientOutcome,
    CriterionVerdict,
    Outcome,
    Window,
)
from labctl.records.series import SeriesProvider, iso_utc

RESULT_SOURCE = "result"  # format 1: per-machine values recorded as samples of this source


class LegacyResult:
    """A :class:`CriterionVerdict` with the attributes the former ``CriterionResult`` had
    (``window`` as a tuple, ``series`` as dicts)."""

    def __init__(self, v: CriterionVerdict):
        self.verdict = v

    def __getattr__(self, name: str) -> Any:
        return getattr(self.verdict, name)

    @property
    def window(self) -> tuple[float | None, float | None]:
        w = self.verdict.window
        return (w.start_ts_s, w.end_ts_s) if w is not None else (None, None)

    @property
    def series(self) -> list[dict[str, str]]:
        return [r.model_dump() for r in self.verdict.series]

    def as_dict(self) -> dict[str, Any]:
        d = self.verdict.model_dump(mode="json")
        d["window"] = list(self.window)
        if self.verdict.first_crossing_ts is not None:
            d["first_crossing_time"] = iso_utc(self.verdict.first_crossing_ts)
        return d

    def __str__(self) -> str:
        return self.verdict.message

    def __repr__(self) -> str:
        return f"CriterionResult({self.verdict.name!r}, {self.verdict.outcome}, observed={self.verdict.observed})"


class LegacyVerdict(CellVerdict):
    """A :class:`CellVerdict` with the former ``Verdict`` methods."""

    @property
    def results(self) -> list[LegacyResult]:
        return [LegacyResult(c) for c in self.criteria]

    def __getitem__(self, name: str) -> LegacyResult:  # type: ignore[override]
        return LegacyResult(super().__getitem__(name))

    def as_dict(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "outcome": str(self.outcome),
            "criteria": [r.as_dict() for r in self.results],
        }

    def lines(self) -> list[str]:
        return [f"[{r.outcome}] {r.message}" for r in self.criteria]

    def raise_for_outcome(self, *, marginal_fails: bool = False) -> None:
        raise_for_outcome(self, marginal_fails=marginal_fails)

    def write(self, run: Any) -> Path:
        """``cells/<cell>/verdicts.json`` (format 2), atomically."""
        root = Path(run) if isinstance(run, str | os.PathLike) else Path(run.path)
        path = root / "cells" / self.cell / "verdicts.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    def __repr__(self) -> str:
        return f"Verdict({self.cell!r}, {self.outcome})"


def _summary(
    data: SeriesProvider, cell: str, expected: Mapping[str, Sequence[str]], window: Window | None
) -> CellSummary:
    """The cell summary the former plugin never wrote: its expected machines with their roles,
    and their values from the cell's ``result`` samples."""
    clients: dict[str, dict[str, Any]] = {}
    for group, machines in expected.items():
        for name in machines:
            clients.setdefault(name, {"name": name, "role": LEGACY_ROLES.get(group, group), "outcome": ""})
    for s in data.series(cell=cell or None, source=RESULT_SOURCE):
        if len(s) == 0 or s.metric not in ClientOutcome.model_fields:
            continue
        c = clients.setdefault(s.entity, {"name": s.entity, "role": "storm", "outcome": ""})
        c[s.metric] = int(s.values[-1]) if s.metric == "retries" else s.values[-1]
    return CellSummary(
        cell=cell or "cell",
        plan="",
        scenario="",
        outcome=Outcome.PASS,
        window=window,
        clients={n: ClientOutcome(**c) for n, c in clients.items()},
    )


def evaluate_legacy(
    criteria: CriteriaFile | Sequence[Criterion],
    data: SeriesProvider,
    *,
    names: Names | None = None,
    window: Window | tuple[float | None, float | None] | None = None,
    only: Sequence[str] | None = None,
    cell: str = "",
    expected: Mapping[str, Sequence[str]] | None = None,
) -> LegacyVerdict:
    if isinstance(window, tuple):
        start, end = window
        window = Window(start_ts_s=start, end_ts_s=end) if start is not None and end is not None else None
    summary = _summary(data, cell, expected or {}, window)
    v = evaluate(criteria, data, summary, names=names, window=window, only=only)
    return LegacyVerdict(cell=cell, outcome=v.outcome, criteria=v.criteria)
