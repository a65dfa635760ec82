"""What makes two runs of one lab + plan alike: the parameter profile and the resolved plan parameters.

    kind = run_kind(info.parameters)        # from run.json's `parameters`
    kind.profile, kind.parameters, kind.key # "quick", {"window_s": 120, ...}, "3f1c0a9b2e4d"
    kind.differences(other)                 # ["profile quick vs full", "window_s 360 vs 120"]

A quick run (a 120 s window) and a full one (600 s) measure different things: they get separate
baselines, histories and trend lines (the store keys them by ``key``), and comparing one with the
other names the difference. The plugin records the profile and the resolved values of each plan
in ``run.json`` (``parameters.profile`` and ``parameters.plans.<plan>.values``); older run folders
carry plan parameters at the top level, or only the pytest arguments, from which ``--profile`` and
``--plan-param`` are read (``recorded`` is then False: an unknown profile is not a difference).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

NOT_PARAMETERS = ("pytest_args", "profile", "plans")  # keys of run.json `parameters` that are not plan values


class RunKind(BaseModel):
    profile: str | None = Field(None, description="the parameter profile, e.g. quick or full (None: unknown)")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="the resolved plan parameters (`plan.name` when a run has several)"
    )
    recorded: bool = Field(True, description="false: read back from pytest arguments of an older run")

    @property
    def key(self) -> str:
        """A short digest of the profile and parameters: runs of one key are alike."""
        text = json.dumps([self.profile, self.parameters], sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def label(self) -> str:
        """``profile quick`` or ``profile not recorded``, for listings."""
        return f"profile {self.profile}" if self.profile else "profile not recorded"

    def differences(self, other: RunKind) -> list[str]:
        """What differs from ``other``, one phrase each (``window_s 360 vs 120``); nothing when
        either side's profile is unknown and nothing else is known to differ."""
        out: list[str] = []
        if self.profile and other.profile and self.profile != other.profile:
            out.append(f"profile {self.profile} vs {other.profile}")
        if self.recorded and other.recorded:
            for name in sorted(set(self.parameters) | set(other.parameters)):
                mine, theirs = self.parameters.get(name), other.parameters.get(name)
                if mine != theirs:
                    out.append(f"{name} {_shown(mine)} vs {_shown(theirs)}")
        return out


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, list | tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def _from_args(args: list[Any]) -> tuple[str | None, dict[str, Any]]:
    """``--profile`` and ``--plan-param KEY=VALUE`` of a pytest command line."""
    profile: str | None = None
    overrides: dict[str, Any] = {}
    items = [str(a) for a in args]
    for i, arg in enumerate(items):
        following = items[i + 1] if i + 1 < len(items) else None
        for option in ("--profile", "--plan-param"):
            value = (
                following if arg == option else arg.split("=", 1)[1] if arg.startswith(f"{option}=") else None
            )
            if value is None:
                continue
            if option == "--profile":
                profile = value
            else:
                key, _, raw = value.partition("=")
                overrides[key] = raw
    return profile, overrides


def run_kind(parameters: dict[str, Any] | None) -> RunKind:
    """The kind of a run from run.json's ``parameters`` (see the module docstring)."""
    params = parameters or {}
    plans = params.get("plans")
    if isinstance(plans, dict) and plans:
        values: dict[str, Any] = {}
        profiles: list[str] = []
        for plan, entry in sorted(plans.items()):
            if not isinstance(entry, dict):
                continue
            if entry.get("profile"):
                profiles.append(str(entry["profile"]))
            for name, value in (entry.get("values") or {}).items():
                values[name if len(plans) == 1 else f"{plan}.{name}"] = value
        profile = params.get("profile") or ("+".join(dict.fromkeys(profiles)) or None)
        return RunKind(profile=str(profile) if profile else None, parameters=values)
    top = {k: v for k, v in params.items() if k not in NOT_PARAMETERS}
    if top or params.get("profile"):
        profile = params.get("profile")
        return RunKind(profile=str(profile) if profile else None, parameters=top)
    profile, overrides = _from_args(list(params.get("pytest_args") or []))
    return RunKind(profile=profile, parameters=overrides, recorded=False)
