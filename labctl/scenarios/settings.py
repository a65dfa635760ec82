"""Typed scenario settings: the value types every plan parameter is built from, with their bounds.

A plan's parameter file (``testplans/<plan>.params.yaml``) is validated against a pydantic model
made of these before any machine is touched, so ``group_sizes: [-3]`` or ``window_s: 1e308`` is one
line naming the file, the item and the fix, not a storm that never ends. Bounds are about sanity,
not physics: a week of lab time is longer than any plan's wait, 100,000 machines more than any lab.

Values are strict: ``true`` is not a number and ``"50"`` is not a group size (a quoted number in a
YAML file is almost always a mistake); integers are accepted where seconds are expected.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt

from labctl.inventory.model import Lab

MAX_LAB_S = 7 * 24 * 3600.0  # a week of lab time: longer than any window, timeout or settle wait
MAX_MACHINES = 100_000  # more than any lab: bounds a group size before the lab says how many it has
MIN_SAMPLE_INTERVAL_S = 0.1  # typeperf -si takes whole seconds; polled sources cannot go faster
MAX_SAMPLE_INTERVAL_S = 600.0  # a sample every ten minutes says nothing about a six-minute storm
MAX_CELLS = 1000  # values of one cell parameter: more is a typo, or a week of lab time

T = TypeVar("T")


def _each_once(values: list[T]) -> list[T]:
    seen: list[T] = []
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is listed twice (each cell once)")
        seen.append(v)
    return values


LabSeconds = Annotated[
    float,
    Field(strict=True, gt=0, le=MAX_LAB_S, allow_inf_nan=False, description="lab seconds, at most a week"),
]
SampleInterval = Annotated[
    float,
    Field(
        strict=True,
        ge=MIN_SAMPLE_INTERVAL_S,
        le=MAX_SAMPLE_INTERVAL_S,
        allow_inf_nan=False,
        description="lab seconds between samples of the servers' counters",
    ),
]
Count = Annotated[StrictInt, Field(gt=0, le=MAX_MACHINES, description="a number of machines, at least 1")]
Pair = tuple[Count, Count]  # e.g. [copiers, rebooters]
# the values of one cell parameter (group_sizes, splits, copy_paths ...): one cell each
CellValues = Annotated[list[T], Field(min_length=1, max_length=MAX_CELLS), AfterValidator(_each_once)]
Percent = Annotated[float, Field(strict=True, ge=0, le=100, allow_inf_nan=False)]
GroupName = Annotated[
    str,
    Field(
        strict=True,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="a group of the inventory, e.g. clients or first-25",
    ),
]


RestoreFailure = Literal["note", "lab_fault"]
# A restore that leaves a machine on is never a silent green: by default the cell is a lab fault
# (its measured verdicts kept) and the run exits 1; `note` is the explicit choice to keep it green.
RESTORE_FAILURE_HELP = (
    "a restore that fails after a fully measured window (a machine left on): `lab_fault` keeps the "
    "measured verdict and makes the cell a lab fault (the run exits 1); `note` keeps the cell's "
    "outcome and only says it in the reason (the next cell's prepare fails if the machines stay on)"
)


class Settings(BaseModel):
    """Base of every scenario's and plan's parameter model: unknown names are refused, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def lab_problems(self, lab: Lab) -> list[str]:
        """What does not fit ``lab`` (e.g. a group larger than the lab's), one line each with the fix.
        Checked at collection, for every configuration the plan's cells use."""
        return []

    def lab_configurations(self) -> list[str | None]:
        """The configurations the plan's cells use (None: the session's, ``--lab-config``)."""
        return [None]


class ScenarioSettings(Settings):
    """What every scenario that powers clients takes."""

    clients: GroupName = Field("clients", description="the inventory group cells take their clients from")
    sample_interval_s: SampleInterval = Field(
        1.0,
        description="lab seconds between samples of the servers' counters (perfmon's default is 1 s)",
    )
    poll_interval_s: SampleInterval = Field(
        5.0,
        description=(
            "lab seconds between reads of the polled sources (streaming-server device status, BMC power, "
            "arrays): each read is a request to the endpoint"
        ),
    )
    restore_timeout_s: LabSeconds = Field(
        900.0,
        description=(
            "how long the restore at the end of a cell waits for the machines, lab seconds (a bound, not a "
            "wait: it ends when they are back; at the simulated lab's 60x, 300 lab s was 5 wall seconds for "
            "100 shutdowns over SSH, too short on a busy controller)"
        ),
    )
    health_check: bool = Field(
        True,
        description=(
            "before the cell, a quick health check of every client it uses (power state readable, a "
            "client that is on answers SSH); one that fails is quarantined and left out of the cell"
        ),
    )
    restore_failure: RestoreFailure = Field("lab_fault", description=RESTORE_FAILURE_HELP)

    def group_problems(self, lab: Lab, needed: int, what: str) -> list[str]:
        """``needed`` clients do not fit the lab's ``clients`` group: one line with the fix."""
        group = lab.groups.get(self.clients)
        if group is None:
            known = ", ".join(sorted(lab.groups)) or "none"
            return [f"clients: {self.clients!r} is not a group of {lab.name} (groups: {known})"]
        if needed > len(group.members):
            cfg = f" in configuration {lab.configuration.name}" if lab.configuration else ""
            return [
                f"{what}: {needed} clients, but group {self.clients!r} of {lab.name}{cfg} has "
                f"{len(group.members)} (choose at most {len(group.members)}, or another --lab)"
            ]
        return []
