"""Criteria files: pass / marginal / fail bands over recorded series, declared as data per plan.

A file next to the plan (``testplans/criteria/<plan>.yaml``)::

    plan: boot_storm
    criteria:
      - name: write-cache disk queue
        description: average queue <= 2 x the spindles of the RAID set (2007 paper)
        select: {source: typeperf, entity: "{write_cache_disk}", metric: disk_queue_len}
        statistic: mean
        unit: requests
        pass: {max: 2 * spindles(write_cache_volume)}
        marginal: {max: 4 * spindles(write_cache_volume)}

      - name: boot time per client
        select: {source: pvs, entity: "optiplex-*", metric: boot_time_s}
        statistic: last
        across: worst            # every client must be in band; the worst one decides
        expect: clients          # a client without a value never booted: a lab fault
        unit: s
        pass: {max: 60}
        marginal: {max: 90}

Fields of a criterion:

- ``select``: ``source``, ``entity`` (shell pattern; ``{variable}`` is replaced by a string
  variable such as ``write_cache_disk``), ``metric``. Missing keys match anything.
- ``statistic``: ``peak`` (= ``max``), ``min``, ``mean``, ``p95`` (any ``pNN``), ``last``,
  ``sum``, ``samples``, ``time_above`` and ``storm_duration`` (lab seconds above ``threshold``).
- ``threshold``: for ``time_above`` / ``storm_duration``: a number or an expression.
- ``across``: how the per-entity values combine: ``worst`` (default: each entity is judged, the
  worst decides), ``max``, ``min``, ``mean``, ``sum``.
- ``pass`` / ``marginal``: bands ``{min: ..., max: ...}`` (inclusive), numbers or expressions of
  the variables and functions in :mod:`labctl.criteria.variables`. A value in the pass band
  passes; outside it but inside the marginal band it is *marginal* (reported, does not fail the
  cell); anything else fails. Without ``marginal`` there is no marginal zone.
- ``expect``: the name of a list the plan hands in at evaluation (e.g. ``clients``): every entity
  of that list must have data, or the criterion is a *lab fault* (the machine never reported).
- ``required`` (default true): no data at all is *no_data*, which fails the cell as missing data;
  with ``required: false`` it is only reported.
- ``unit``: shown with the values; ``description``: the reason for the band (shown in reports).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from labctl.criteria.errors import CriteriaFileError

Limit = float | int | str
STATISTICS = ("peak", "max", "min", "mean", "last", "sum", "samples", "time_above", "storm_duration")
_PNN = re.compile(r"^p(\d{1,2}(\.\d+)?|100)$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Band(_Frozen):
    min: Limit | None = None
    max: Limit | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Band:
        if self.min is None and self.max is None:
            raise ValueError("a band needs min, max or both")
        return self

    def text(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        return " and ".join(parts)


class Selector(_Frozen):
    source: str | None = None
    entity: str | None = None
    metric: str | None = None

    def text(self) -> str:
        return "/".join(p or "*" for p in (self.source, self.entity, self.metric))


class Criterion(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    select: Selector
    statistic: str = "peak"
    threshold: Limit | None = None
    across: Literal["worst", "max", "min", "mean", "sum"] = "worst"
    unit: str = ""
    pass_band: Band = Field(alias="pass")
    marginal: Band | None = None
    expect: str | None = None
    required: bool = True

    @field_validator("statistic")
    @classmethod
    def _statistic(cls, v: str) -> str:
        if v not in STATISTICS and not _PNN.match(v):
            raise ValueError(
                f"unknown statistic {v!r} (use one of {', '.join(STATISTICS)}, or pNN such as p95)"
            )
        return v

    @model_validator(mode="after")
    def _threshold(self) -> Criterion:
        if self.statistic in ("time_above", "storm_duration") and self.threshold is None:
            raise ValueError(f"statistic {self.statistic} needs a threshold")
        return self


class CriteriaFile(_Frozen):
    plan: str = ""
    description: str = ""
    criteria: tuple[Criterion, ...]

    @model_validator(mode="after")
    def _unique(self) -> CriteriaFile:
        if not self.criteria:
            raise ValueError("a criteria file needs at least one criterion under `criteria:`")
        seen = set()
        for c in self.criteria:
            if c.name in seen:
                raise ValueError(f"two criteria are named {c.name!r} (names must be unique)")
            seen.add(c.name)
        return self


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """``criteria[2] 'write-cache disk queue': pass.max`` from a pydantic error location."""
    parts = []
    node = data
    for i, key in enumerate(loc):
        if isinstance(key, int):
            name = ""
            if isinstance(node, list) and 0 <= key < len(node) and isinstance(node[key], dict):
                name = f" {node[key].get('name', '')!r}" if node[key].get("name") else ""
            parts.append(f"[{key}]{name}")
            node = node[key] if isinstance(node, list) and 0 <= key < len(node) else None
        else:
            parts.append(("." if i else "") + str(key))
            node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts)


def parse_criteria(data: Any, source: str = "<criteria>") -> CriteriaFile:
    try:
        return CriteriaFile.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = _where(data, tuple(err["loc"]))
            msg = err["msg"].removeprefix("Value error, ")
            lines.append(f"{source}: {where}: {msg}" if where else f"{source}: {msg}")
        raise CriteriaFileError("\n".join(lines)) from None


def load_criteria(path: str | Path) -> CriteriaFile:
    """Load and check a criteria file (YAML). Errors name the file and the criterion."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CriteriaFileError(f"{p}: criteria file not found (write one next to the plan)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark else str(p)
        raise CriteriaFileError(f"{where}: YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise CriteriaFileError(f"{p}: expected a mapping with `criteria:` (a list of criteria)")
    return parse_criteria(data, str(p))
