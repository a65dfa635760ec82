"""Criteria files: pass / marginal / fail bands over recorded series and per-machine results,
declared as data per plan, and checked completely when they are loaded.

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
        select: {result: boot_time_s, role: storm}   # one value per machine, from the cell summary
        statistic: value
        unit: s
        pass: {max: 60}
        marginal: {max: 90}

Fields of a criterion:

- ``select``, either a **series** (``source``, ``entity``, ``metric``; ``entity`` is a shell
  pattern in which ``{variable}`` is replaced by a string variable such as ``write_cache_disk``;
  a missing key matches anything), or a **per-machine result** (``result``: a numeric field of
  the cell summary's clients: ``boot_time_s``, ``retries``, ``time_to_ready_s``, ``copy_s``, ...;
  ``role``: ``storm``, ``copier``, ``rebooter``, ...; all machines when left out). Every machine
  of the role is expected: one without the value is a *lab fault* naming it and why.
- ``statistic``: for a series ``peak`` (= ``max``), ``min``, ``mean``, ``p95`` (any ``pNN``),
  ``last``, ``sum``, ``samples``, ``time_above`` and ``storm_duration`` (lab seconds above
  ``threshold``); for a result ``value`` (the default there).
- ``threshold``: for ``time_above`` / ``storm_duration`` only: a number or an expression.
- ``across``: how the per-entity values combine: ``worst`` (default: each entity is judged, the
  worst decides), ``max``, ``min``, ``mean``, ``sum``.
- ``pass`` / ``marginal``: bands ``{min: ..., max: ...}`` (inclusive), numbers or expressions of
  the variables and functions in :mod:`labctl.criteria.variables`. A value in the pass band
  passes; outside it but inside the marginal band it is *marginal* (reported, does not fail the
  cell); anything else fails. The pass band must lie inside the marginal band, and a marginal
  band must widen it. Without ``marginal`` there is no marginal zone.
- ``min_coverage`` (series, default 0.9): the share of the window the judged series must cover
  (no silence longer than twice its source's interval); below it the criterion is *no_data*
  naming the gap, never a pass.
- ``phase``: judge the series over that phase of the cell only (a name in the summary's
  ``phases``, e.g. ``steady``: "p95 of an operation group under 1 s at N sessions"); default the
  cell's whole window.
- ``min_window_s``: the shortest window (the ``phase`` when it names one, else the cell's) the
  band means something over, in lab seconds: a band measured over the paper's hour says nothing of
  a ten-minute steady phase. A shorter window is *no_data* saying so ("not judged: the steady
  phase lasted 600 s, this band needs 3600 s"), not a pass or a fail, and does not count toward
  the cell (the quick profiles judge what their windows support).
- ``required`` (default true): *no_data* fails the cell as missing data; with ``required: false``
  it is only reported (a per-machine result that no machine of the role has is then no data, not
  a lab fault: e.g. a figure only some cells of a plan measure).
- ``unit``: shown with the values; ``description``: the reason for the band (shown in reports).

Files of format 1 are still read: ``select: {source: result, metric: M}`` is the result ``M``,
and ``expect: clients`` / ``copiers`` / ``rebooters`` its role (``storm``, ``copier``,
``rebooter``); on a series criterion ``expect`` names the role whose machines must each have a
series (entity = machine name).

:func:`load_criteria` / :func:`parse_criteria` check everything that can be checked before any
machine is touched, and report every problem at once, one line each::

    testplans/criteria/boot_storm.yaml: criteria[0] 'write-cache disk queue': marginal.max: 4 is below pass.max 8 (...)

With :class:`~labctl.criteria.variables.Names` they also check the variables and functions the
patterns and limits use, and the bands' consistency where their values are known then.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from labctl.criteria.errors import CriteriaFileError
from labctl.criteria.expr import BUILTINS, ExpressionError, names_in
from labctl.criteria.expr import evaluate as eval_limit
from labctl.criteria.variables import Names
from labctl.inventory.userfile import CRITERIA_MAX_BYTES, UserFileError, check_yaml_text, read_user_text
from labctl.records.run_record import result_fields

Limit = float | int | str
SERIES_STATISTICS = ("peak", "max", "min", "mean", "last", "sum", "samples", "time_above", "storm_duration")
RESULT_STATISTIC = "value"
STATISTICS = (*SERIES_STATISTICS, RESULT_STATISTIC)
TIME_STATISTICS = ("time_above", "storm_duration")
DEFAULT_MIN_COVERAGE = 0.9
_PNN = re.compile(r"^p(\d{1,2}(\.\d+)?|100)$")
VARIABLE = re.compile(r"\{(\w+)\}")

# format 1: `expect:` named the plan's list of machines; format 2 names their role
LEGACY_ROLES = {"clients": "storm", "copiers": "copier", "rebooters": "rebooter"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Band(_Frozen):
    min: Limit | None = None
    max: Limit | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Band:
        if self.min is None and self.max is None:
            raise ValueError("a band needs min, max or both")
        for v in (self.min, self.max):
            if isinstance(v, bool):
                raise ValueError("a limit is a number or an expression, not true/false")
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError("a limit must be a finite number")
        return self

    def text(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        return " and ".join(parts)


class Selector(_Frozen):
    """A series (``source``/``entity``/``metric``) or a per-machine result (``result``/``role``)."""

    source: str | None = None
    entity: str | None = None
    metric: str | None = None
    result: str | None = None
    role: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Selector:
        if self.result is not None:
            if self.source or self.entity or self.metric:
                raise ValueError(
                    "select either a series (source, entity, metric) or a per-machine result "
                    "(result, role), not both"
                )
            if self.result not in result_fields():
                raise ValueError(
                    f"unknown per-machine result {self.result!r} (known: {', '.join(result_fields())})"
                )
        elif self.role is not None:
            raise ValueError("role goes with result: (e.g. {result: boot_time_s, role: storm})")
        return self

    @property
    def is_result(self) -> bool:
        return self.result is not None

    def text(self) -> str:
        if self.result is not None:
            return f"clients/{self.role or '*'}/{self.result}"
        return "/".join(p or "*" for p in (self.source, self.entity, self.metric))


class Criterion(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    select: Selector
    statistic: str = ""  # "" -> peak for a series, value for a result
    threshold: Limit | None = None
    across: Literal["worst", "max", "min", "mean", "sum"] = "worst"
    unit: str = ""
    pass_band: Band = Field(alias="pass")
    marginal: Band | None = None
    min_coverage: float = Field(DEFAULT_MIN_COVERAGE, ge=0.0, le=1.0)
    required: bool = True
    phase: str | None = None  # judge only this phase of the cell (summary.phases), e.g. steady
    min_window_s: float | None = Field(None, gt=0)  # a shorter judged window: not judged (no data)
    expect: str | None = None  # format 1, series only: the role whose machines must each have a series
    # format 1 per-machine criteria without `expect` judged the machines that had the value only
    _present_only: bool = PrivateAttr(False)

    @field_validator("statistic")
    @classmethod
    def _statistic(cls, v: str) -> str:
        if v and v not in STATISTICS and not _PNN.match(v):
            raise ValueError(
                f"unknown statistic {v!r} (use one of {', '.join(STATISTICS)}, or pNN such as p95)"
            )
        return v

    @model_validator(mode="after")
    def _fits_select(self) -> Criterion:
        stat = self.statistic
        if self.select.is_result:
            if stat and stat != RESULT_STATISTIC:
                raise ValueError(
                    f"statistic {stat!r}: a per-machine result has one value per machine: use "
                    "`statistic: value` (combine machines with `across:`)"
                )
            if self.expect is not None:
                raise ValueError("expect: a per-machine result expects every machine of its role already")
            object.__setattr__(self, "statistic", RESULT_STATISTIC)
        else:
            if stat == RESULT_STATISTIC:
                raise ValueError(
                    "statistic 'value' is for per-machine results (select: {result: ...}); a series "
                    "needs peak, mean, p95, ..."
                )
            if not stat:
                object.__setattr__(self, "statistic", "peak")
        if self.statistic in TIME_STATISTICS and self.threshold is None:
            raise ValueError(f"statistic {self.statistic} needs a threshold")
        if self.statistic not in TIME_STATISTICS and self.threshold is not None:
            raise ValueError(
                f"threshold: only time_above and storm_duration use one (statistic is {self.statistic})"
            )
        return self

    @property
    def present_only(self) -> bool:
        return self._present_only

    def expected_role(self) -> str | None:
        """The role whose machines must each have a series (format-1 ``expect`` on a series)."""
        return LEGACY_ROLES.get(self.expect, self.expect) if self.expect else None

    def limits(self) -> list[tuple[str, Limit]]:
        """Every limit with where it is written: ``pass.max``, ``marginal.min``, ``threshold``."""
        out: list[tuple[str, Limit]] = []
        for where, band in (("pass", self.pass_band), ("marginal", self.marginal)):
            if band is None:
                continue
            out += [(f"{where}.{k}", v) for k, v in (("min", band.min), ("max", band.max)) if v is not None]
        if self.threshold is not None:
            out.append(("threshold", self.threshold))
        return out


class CriteriaFile(_Frozen):
    plan: str = ""
    description: str = ""
    criteria: tuple[Criterion, ...]

    def judge(self, data: Any, summary: Any, *, names: Names, window: Any = None) -> Any:
        """:func:`labctl.criteria.evaluate.evaluate` of this file (what the cell runner calls)."""
        from labctl.criteria.evaluate import evaluate  # evaluate imports this module

        return evaluate(self, data, summary, names=names, window=window)


# --- checking ------------------------------------------------------------------------------------


def _where(data: Any, loc: Sequence[Any]) -> str:
    """``.pass.max`` from a pydantic error location inside one criterion."""
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in loc).lstrip(".")


def _label(i: int, raw: Any) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"criteria[{i}] {name!r}" if name else f"criteria[{i}]"


def _legacy(raw: Any) -> tuple[Any, bool]:
    """A format-1 criterion in the format-2 shape; True when it judged present machines only."""
    if not isinstance(raw, dict):
        return raw, False
    select = raw.get("select")
    if not (isinstance(select, dict) and select.get("source") == "result"):
        return raw, False
    out = {k: v for k, v in raw.items() if k != "expect"}
    expect = raw.get("expect")
    role = LEGACY_ROLES.get(expect, expect) if isinstance(expect, str) else None
    out["select"] = {"result": select.get("metric")} | ({"role": role} if role else {})
    if out.get("statistic") in ("last", None):
        out["statistic"] = RESULT_STATISTIC
    return out, expect is None


UNKNOWN = object()  # a limit whose value comes with the cell (a variable the plan hands in)
Bound = float | None | object  # a number, None (the band has no such limit) or UNKNOWN


class _Checks:
    """Checks of one criterion against the names known at load; collects one line per problem."""

    def __init__(self, source: str, label: str, c: Criterion, names: Names | None):
        self.prefix = f"{source}: {label}"
        self.c = c
        self.names = names
        self.problems: list[str] = []

    def add(self, where: str, what: str, fix: str = "") -> None:
        self.problems.append(f"{self.prefix}: {where}: {what}" + (f" ({fix})" if fix else ""))

    def run(self) -> list[str]:
        if self.names is not None:
            self._patterns(self.names)
        bounds = self._limits()
        for where, what, fix in band_problems(bounds, has_marginal=self.c.marginal is not None):
            self.add(where, what, fix)
        return self.problems

    def _patterns(self, names: Names) -> None:
        strings = sorted(k for k, v in names.variables.items() if isinstance(v, str))
        known = set(strings) | set(names.declared)
        for key in ("source", "entity", "metric"):
            text = getattr(self.c.select, key)
            for var in VARIABLE.findall(text or ""):
                if var not in known:
                    self.add(
                        f"select.{key}",
                        f"unknown variable {{{var}}}",
                        f"known: {', '.join(strings) or 'none'}; does the lab's configuration name it?",
                    )

    def _limits(self) -> dict[str, Bound]:
        """Each band limit's value; UNKNOWN where it needs a name without a value yet (or no
        names were given), after a problem line for a name nobody knows."""
        bounds: dict[str, Bound] = {k: None for k in ("pass.min", "pass.max", "marginal.min", "marginal.max")}
        names = self.names
        for where, limit in self.c.limits():
            if where in bounds:
                bounds[where] = UNKNOWN
            if isinstance(limit, str):
                if names is None:
                    continue
                known = set(names.variables) | set(names.declared)
                funcs = set(names.functions) | set(BUILTINS)
                used = names_in(limit)
                unknown = sorted(n for n in used if n not in known and n not in funcs)
                if unknown:
                    self.add(
                        where,
                        f"unknown name {', '.join(repr(u) for u in unknown)} in {limit!r}",
                        f"variables: {', '.join(sorted(known)) or 'none'}; "
                        f"functions: {', '.join(sorted(names.functions)) or 'none'}",
                    )
                    continue
                if used & (set(names.declared) - set(names.variables)):
                    continue  # its value comes with the cell: checked when the cell is judged
            try:
                value = eval_limit(limit, names.variables if names else {}, names.functions if names else {})
            except ExpressionError as exc:
                self.add(where, str(exc).removeprefix(f"{limit!r}: "), f"in {limit!r}")
                continue
            if where in bounds:
                bounds[where] = value
        return bounds


def band_problems(b: dict[str, Bound], *, has_marginal: bool) -> list[tuple[str, str, str]]:
    """(where, what, fix) for each inconsistency of a criterion's bands: an inverted band, a pass
    band that is not inside the marginal band, a marginal band that does not widen the pass band.
    ``b`` has ``pass.min``, ``pass.max``, ``marginal.min``, ``marginal.max``: a number, None (no
    such limit) or UNKNOWN (not known yet: whatever depends on it is not checked)."""

    def num(k: str) -> float | None:
        v = b.get(k)
        return float(v) if isinstance(v, int | float) else None

    out: list[tuple[str, str, str]] = []
    for band in ("pass", "marginal") if has_marginal else ("pass",):
        lo, hi = num(f"{band}.min"), num(f"{band}.max")
        if lo is not None and hi is not None and lo > hi:
            out.append((f"{band}.min", f"{lo:g} is above {band}.max {hi:g}", "swap them"))
    if not has_marginal or out:
        return out
    inside = "the pass band must lie inside the marginal band"
    widens: list[bool | None] = []  # per side: True, False, or None (not known)
    for side, bigger in (("max", True), ("min", False)):
        p_raw, m_raw = b.get(f"pass.{side}"), b.get(f"marginal.{side}")
        p, m = num(f"pass.{side}"), num(f"marginal.{side}")
        if p_raw is UNKNOWN or m_raw is UNKNOWN:
            widens.append(None)
        elif m_raw is None:
            widens.append(p_raw is not None)  # the marginal band is open on this side
        elif p_raw is None:
            what = "caps" if bigger else "floors"
            out.append(
                (
                    f"marginal.{side}",
                    f"{m:g} {what} values the pass band accepts without limit",
                    f"{inside}: add pass.{side} or drop marginal.{side}",
                )
            )
            widens.append(False)
        else:
            assert p is not None and m is not None
            if (m < p) if bigger else (m > p):
                verb, fix = ("below", "raise") if bigger else ("above", "lower")
                out.append(
                    (
                        f"marginal.{side}",
                        f"{m:g} is {verb} pass.{side} {p:g}",
                        f"{inside}: {fix} marginal.{side}",
                    )
                )
            widens.append((m > p) if bigger else (m < p))
    if not out and all(w is False for w in widens):
        out.append(
            ("marginal", "the marginal band is the pass band: nothing can be marginal", "widen it or drop it")
        )
    return out


def parse_criteria(data: Any, source: str = "<criteria>", names: Names | None = None) -> CriteriaFile:
    """Check and build a criteria file from its parsed YAML. Every problem is reported at once,
    one line each (``file: criteria[i] 'name': field: what (fix)``), as a CriteriaFileError.

    ``names``: the variables and functions the file may use (the lab's, and those the plan hands
    in per cell, declared with :meth:`Names.declare`); without them only the structure and the
    bands made of plain numbers are checked."""
    if not isinstance(data, dict):
        raise CriteriaFileError(f"{source}: expected a mapping with `criteria:` (a list of criteria)")
    problems: list[str] = []
    head = {k: v for k, v in data.items() if k != "criteria"}
    for k in head:
        if k not in ("plan", "description"):
            problems.append(f"{source}: {k}: unknown key (a criteria file has plan, description, criteria)")
    raw = data.get("criteria")
    if not isinstance(raw, list) or not raw:
        problems.append(f"{source}: a criteria file needs at least one criterion under `criteria:`")
        raw = []
    built: list[Criterion] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        label = _label(i, item)
        item, present_only = _legacy(item)
        try:
            c = Criterion.model_validate(item)
        except ValidationError as exc:
            for err in exc.errors():
                where = _where(item, tuple(err["loc"]))
                msg = err["msg"].removeprefix("Value error, ")
                problems.append(
                    f"{source}: {label}: {where}: {msg}" if where else f"{source}: {label}: {msg}"
                )
            continue
        c._present_only = present_only
        if c.name in seen:
            problems.append(
                f"{source}: {label}: name: two criteria are named {c.name!r} (criteria[{seen[c.name]}] too; "
                "names must be unique)"
            )
        seen.setdefault(c.name, i)
        problems += _Checks(source, label, c, names).run()
        built.append(c)
    if problems:
        raise CriteriaFileError("\n".join(problems))
    return CriteriaFile(
        plan=str(head.get("plan") or ""),
        description=str(head.get("description") or ""),
        criteria=tuple(built),
    )


def load_criteria(path: str | Path, names: Names | None = None) -> CriteriaFile:
    """Load and check a criteria file (YAML): see :func:`parse_criteria`."""
    p = Path(path)
    try:  # bounded in size, type and depth before it is parsed (labctl.inventory.userfile)
        text = read_user_text(p, what="criteria file", max_bytes=CRITERIA_MAX_BYTES)
        check_yaml_text(text, str(p), "criteria file")
    except FileNotFoundError:
        raise CriteriaFileError(f"{p}: criteria file not found (write one next to the plan)") from None
    except UserFileError as exc:
        raise CriteriaFileError(str(exc)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark else str(p)
        raise CriteriaFileError(f"{where}: YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    return parse_criteria(data, str(p), names)
