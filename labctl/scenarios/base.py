"""What every scenario is: a whole plan cell, run end to end against the lab layer.

A scenario prepares the lab (brings machines to a known state with the lab's strategy), acts (a
wake burst, copies and reboots, a login storm), waits out its window, restores the lab, and
returns a typed result that knows how to summarise itself. It never talks to pytest, Allure or
the run folder: the generic cell runner (:mod:`labctl.plugin`) hands it a :class:`CellContext`,
records the lab's sources around it, judges the criteria and hands the record to the sinks.

    class BootStorm(Scenario):
        name = "boot_storm"; title = "boot storm"
        def __init__(self, group_size: int, params: BootStormParams): ...
        def parameters(self) -> dict[str, Any]: return {"group_size": self.group_size}
        def run(self, lab: LabSession, ctx: CellContext) -> BootStormResult: ...

Interrupts: ``ctx.stop`` is set when the run is interrupted (Ctrl-C, SIGTERM, SIGHUP); every wait
of a scenario ends at its next poll once it is set, and the scenario's ``finally`` restores the lab,
waiting for it unless ``ctx.abort`` is set too (a second interrupt). A stopped scenario returns what
it measured so far; the runner marks the cell ``interrupted``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from labctl.records.run_record import CellSummary, Window
from labctl.records.samples import Sample
from labctl.records.series import Series

if TYPE_CHECKING:
    from labctl.lab.session import LabSession


@dataclass(frozen=True)
class Progress:
    """What a scenario reports while it runs, for the live display."""

    phase: str  # "prepare", "wake", "window", "copy+reboot", "settle", "restore", ...
    done: int = 0  # e.g. clients up
    total: int = 0
    window_left_s: float | None = None  # lab seconds left in the sampling window
    note: str = ""  # one short line, e.g. "3 clients not off yet"


class CellContext(Protocol):
    """What the cell runner hands a scenario."""

    cell_id: str
    stop: threading.Event  # set on an interrupt: end every wait at its next poll
    abort: threading.Event  # set on a second interrupt: stop waiting for the restore too (say what is left)

    def progress(self, p: Progress) -> None: ...

    def step(self, title: str) -> AbstractContextManager[None]:
        """A named step of the cell (an Allure step, a timeline phase)."""
        ...

    def series(
        self, *, source: str | None = None, entity: str | None = None, metric: str | None = None
    ) -> list[Series]:
        """What the recorder has recorded so far in this cell (e.g. to wait until the server is quiet)."""
        ...

    def record(self, samples: Iterable[Sample]) -> None:
        """Add samples the scenario itself measured (sessions' timed operations and logons, as the
        launchers report them) to the cell's series, with their own timestamps."""
        ...


@dataclass(frozen=True)
class CellHead:
    """Who a cell is: what the runner knows before the scenario runs (its summary's first fields)."""

    cell: str
    plan: str
    scenario: str
    configuration: str | None
    parameters: dict[str, Any] = field(default_factory=dict)


class ScenarioResult(ABC):
    """What a scenario returns: typed, and able to write its own part of the cell summary."""

    window: Window  # the span the criteria and summaries are taken over

    @abstractmethod
    def summary(self, head: CellHead) -> CellSummary:
        """The cell summary without ``metrics`` and ``outcome`` judgement, which the runner adds
        (``outcome`` here is what the scenario itself saw: ``pass`` unless the lab failed it)."""

    def criteria_variables(self) -> dict[str, Any]:
        """Extra names the criteria file may use for this cell (``group_size``, ``copiers`` ...)."""
        return {}


class Scenario(ABC):
    """One cell of a plan, end to end."""

    name: ClassVar[str]  # "boot_storm": names cells and criteria files
    title: ClassVar[str]  # "boot storm": the Allure feature

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The cell's own parameters, in id order: ``{"group_size": 50}``."""

    @abstractmethod
    def run(self, lab: LabSession, ctx: CellContext) -> ScenarioResult:
        """Prepare, act, wait out the window, restore; return what was measured."""

    def sample_interval_s(self) -> float:
        """Lab seconds between samples of the servers' counters (typeperf ``-si``) in this cell."""
        return 1.0

    def poll_interval_s(self) -> float:
        """Lab seconds between reads of the lab's polled sources (device status, BMC power, arrays)."""
        return 5.0

    def recorded_sources(self) -> frozenset[str] | None:
        """Kinds of the lab's sources the runner records around this cell (``vcenter``, ``storage``,
        ``typeperf``, ``pvs``, ``redfish``: a source's name up to its colon); None, every one."""
        return None


ProgressHook = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    return None


def names(machines: Sequence[Any]) -> list[str]:
    return [m.name for m in machines]
