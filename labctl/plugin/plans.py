"""Data-driven plan cells: parameters come from a plan file, a profile and command-line overrides,
and are checked against the plan's typed model before anything runs.

A plan file sits next to the plan (``testplans/<plan>.params.yaml``)::

    plan: boot_storm
    default_profile: full
    profiles:
      full:  {group_sizes: [1, 5, 10, 25, 50, 75, 100], window_s: 360}
      quick: {group_sizes: [1, 5], window_s: 120}

Selection: ``--profile quick`` (env LABCTL_PROFILE), ``--plan-param window_s=200`` (repeatable),
``--plan-file my.params.yaml``. A plan declares its model with
``pytest.mark.plan("boot_storm", params=BootStormPlan)`` (a pydantic model of
:mod:`labctl.scenarios.settings` types); every problem is one line ``file: profile.item: what (fix)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from labctl.errors import BadInputError
from labctl.inventory.load import display_path
from labctl.inventory.userfile import check_yaml_text, read_user_text, yaml_depth_exceeded

PROFILE_ENV = "LABCTL_PROFILE"
MAX_PLAN_FILE_BYTES = 1_000_000  # a plan file is a few hundred bytes; this bounds a hostile one


@dataclass(frozen=True)
class PlanParams:
    """The raw values of one profile of a plan file, with overrides applied (not yet typed)."""

    plan: str
    profile: str
    source: str  # the file they came from
    values: dict[str, Any]
    overridden: dict[str, str] = field(default_factory=dict)  # key -> the --plan-param that set it

    def __getitem__(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise BadInputError(
                f"{self.source}: profile {self.profile!r} has no parameter {key!r} (add it to the profile)"
            ) from None

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def typed(self, model: type[BaseModel]) -> BaseModel:
        """The values as ``model``; every problem is one line naming the file, profile and item."""
        try:
            return model.model_validate(self.values)
        except ValidationError as exc:
            lines = []
            for err in exc.errors():
                loc = [str(p) for p in err["loc"]]
                item = ".".join(loc) or "(the profile)"
                described = model.model_fields.get(loc[0]) if loc else None
                hint = (
                    described.description.split(" (")[0]
                    if described is not None and described.description
                    else ""
                )
                lines.append(f"{self.where(item)}: {_message(err)}" + (f" ({hint})" if hint else ""))
            raise BadInputError("\n".join(lines)) from None

    def where(self, item: str) -> str:
        """Where a parameter came from: ``--plan-param 'window_s=5': window_s`` or
        ``testplans/boot_storm.params.yaml: quick.window_s``."""
        key = item.split(".", 1)[0]
        if key in self.overridden:
            return f"--plan-param {self.overridden[key]!r}: {item}"
        return f"{self.source}: {self.profile}.{item}"


def _message(err: Any) -> str:
    msg = str(err["msg"]).removeprefix("Value error, ")
    given = err.get("input")
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown parameter (check its spelling against the plan's other parameters)"
    if kind == "missing":
        return "missing (add it to the profile or give it with --param)"
    if isinstance(given, dict | list | tuple):
        return msg
    return f"{msg}, got {repr(given)[:60]}"


def _parse_value(text: str) -> Any:
    """Command-line values are YAML scalars or flow lists: ``50``, ``[25, 50]``, ``1,5,10``."""
    if "," in text and not text.strip().startswith("["):
        text = f"[{text}]"
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):  # YAML 1.1 reads 1e308 as text; a person means a number
        try:
            return float(value)
        except ValueError:
            return value
    return value


def load_plan_params(
    plan_file: Path,
    profile: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    known: Iterable[str] = (),
) -> PlanParams:
    """One profile of ``plan_file`` with ``overrides`` (``KEY=VALUE``) applied; a key may be
    overridden when the profile has it or it is ``known`` (the plan model's parameters)."""
    shown = display_path(str(plan_file))
    try:
        # bounded in size, type and depth before it is parsed (labctl.inventory.userfile)
        text = read_user_text(plan_file, what="plan file", max_bytes=MAX_PLAN_FILE_BYTES, shown=shown)
        check_yaml_text(text, shown, "plan file")
        data = _load_yaml(text, shown)
    except FileNotFoundError:
        raise BadInputError(f"{shown}: plan file not found (check --plan-file or the plan name)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}" if mark else shown
        raise BadInputError(f"{where}: YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise BadInputError(f"{shown}: a plan file needs `plan:` and a `profiles:` mapping")
    profiles: dict[str, Any] = data["profiles"]
    if profile is not None and not profile.strip():
        raise BadInputError(f"--profile '': an empty name (choose one of: {', '.join(map(str, profiles))})")
    chosen = (
        profile or os.environ.get(PROFILE_ENV) or data.get("default_profile") or next(iter(profiles), None)
    )
    if chosen not in profiles:
        raise BadInputError(
            f"{shown}: unknown profile {chosen!r} (choose one of: {', '.join(map(str, profiles))})"
        )
    if not isinstance(profiles[chosen] or {}, dict):
        raise BadInputError(f"{shown}: profile {chosen!r} must be a mapping of parameters")
    values = dict(profiles[chosen] or {})
    overridden: dict[str, str] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise BadInputError(f"--plan-param {item!r}: write KEY=VALUE, e.g. window_s=200")
        if key not in values and key not in known:
            raise BadInputError(
                f"--plan-param {item!r}: plan {data.get('plan')!r} has no parameter {key!r} "
                f"(known: {', '.join(sorted({*values, *known}))})"
            )
        if len(raw) > MAX_VALUE_CHARS or yaml_depth_exceeded(raw, MAX_DEPTH) is not None:
            raise BadInputError(
                f"--plan-param {key!r}: the value is longer than {MAX_VALUE_CHARS} characters or nested "
                f"deeper than {MAX_DEPTH} levels (write a number, a word or a flat list)"
            )
        value = _parse_value(raw)
        if isinstance(values.get(key), list) and not isinstance(value, list):
            value = [value]  # `--param group_sizes=50` means one cell, not a scalar
        values[key] = value
        overridden[key] = item
    return PlanParams(
        plan=str(data.get("plan", plan_file.stem)),
        profile=str(chosen),
        source=shown,
        values=values,
        overridden=overridden,
    )


MAX_DEPTH = 8  # profiles -> profile -> parameter -> list -> pair: a plan file is shallow
MAX_VALUE_CHARS = 4096  # one --plan-param value: a number, a word or a list of a few hundred


def _load_yaml(text: str, shown: str) -> Any:
    """YAML without aliases (an alias bomb grows without bound) and without deep nesting."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise BadInputError(
                f"{shown}:{_line(event)}: YAML aliases (*name) are not allowed in a plan file (write the value out)"
            )
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise BadInputError(
                    f"{shown}:{_line(event)}: nested deeper than {MAX_DEPTH} levels (not a plan file)"
                )
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
    return yaml.safe_load(text)


def _line(event: yaml.Event) -> str:
    mark = event.start_mark
    return str(mark.line + 1) if mark is not None else "?"
