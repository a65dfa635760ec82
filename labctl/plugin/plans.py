"""Data-driven plan cells: parameters come from a plan file, a profile and command-line overrides.

A plan file sits next to the plan (``testplans/<plan>.params.yaml``)::

    plan: boot_storm
    default_profile: full
    profiles:
      full:  {group_sizes: [1, 5, 10, 25, 50, 75, 100], window_s: 360}
      quick: {group_sizes: [1, 5], window_s: 120}

Selection: ``--profile quick`` (env LABCTL_PROFILE), ``--plan-param window_s=200`` (repeatable),
``--plan-file my.params.yaml``. A test declares its plan with ``@pytest.mark.plan("boot_storm")``
and gets the resolved parameters from the ``plan_params`` fixture; :func:`cells` turns list
parameters into the pytest parametrisation so ``-k "boot_storm and 50"`` selects one cell.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labctl.errors import BadInputError

PROFILE_ENV = "LABCTL_PROFILE"


@dataclass(frozen=True)
class PlanParams:
    plan: str
    profile: str
    source: str  # the file they came from
    values: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise BadInputError(
                f"{self.source}: profile {self.profile!r} has no parameter {key!r} (add it to the profile)"
            ) from None

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def _parse_value(text: str) -> Any:
    """Command-line values are YAML scalars or flow lists: ``50``, ``[25, 50]``, ``1,5,10``."""
    if "," in text and not text.strip().startswith("["):
        text = f"[{text}]"
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def load_plan_params(
    plan_file: Path, profile: str | None = None, overrides: list[str] | tuple[str, ...] = ()
) -> PlanParams:
    shown = str(plan_file)
    try:
        data = yaml.safe_load(plan_file.read_text())
    except FileNotFoundError:
        raise BadInputError(f"{shown}: plan file not found (check --plan-file or the plan name)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}" if mark else shown
        raise BadInputError(f"{where}: YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise BadInputError(f"{shown}: a plan file needs `plan:` and a `profiles:` mapping")
    profiles: dict[str, Any] = data["profiles"]
    chosen = profile or os.environ.get(PROFILE_ENV) or data.get("default_profile") or next(iter(profiles))
    if chosen not in profiles:
        raise BadInputError(f"{shown}: unknown profile {chosen!r} (choose one of: {', '.join(profiles)})")
    values = dict(profiles[chosen] or {})
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise BadInputError(f"--plan-param {item!r}: write KEY=VALUE, e.g. window_s=200")
        if key not in values:
            raise BadInputError(
                f"--plan-param {item!r}: plan {data.get('plan')!r} has no parameter {key!r} "
                f"(known: {', '.join(sorted(values))})"
            )
        value = _parse_value(raw)
        if isinstance(values[key], list) and not isinstance(value, list):
            value = [value]  # `--param group_sizes=50` means one cell, not a scalar
        values[key] = value
    return PlanParams(plan=str(data.get("plan", plan_file.stem)), profile=chosen, source=shown, values=values)
