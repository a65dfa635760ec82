"""What every storm engine needs: bring machines to a power state and check it, progress hooks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from labctl.errors import LabctlError
from labctl.inventory.model import Machine
from labctl.lab.power import State
from labctl.lab.session import LabSession


class LabFaultError(LabctlError):
    """The lab did not do what it was told (a machine stayed on, never came up, ...)."""

    def __init__(self, message: str, machines: Sequence[str] = ()):
        super().__init__(message)
        self.machines = tuple(machines)


@dataclass(frozen=True)
class Progress:
    """What a storm engine reports while it runs (for a live display)."""

    phase: str  # "prepare", "wake", "window", "copy", "reboot", "settle", "restore"
    done: int = 0  # e.g. clients up
    total: int = 0
    window_left_s: float | None = None  # lab seconds left in the sampling window


ProgressHook = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    return None


def wait_all_in_state(
    session: LabSession,
    machines: Sequence[Machine],
    wanted: State,
    timeout_s: float,
    poll_s: float = 5.0,
) -> dict[str, State]:
    """Poll power state until every machine is in ``wanted`` or the deadline (lab time) passes.

    Returns the machines that are *not* in the wanted state at the end (empty when all are).
    """
    clock = session.clock
    deadline = clock.now() + timeout_s
    names = [m.name for m in machines]
    while True:
        states = session.power.state(names)
        wrong = {n: s.state for n, s in states.items() if s.state is not wanted}
        if not wrong or clock.now() >= deadline:
            return wrong
        clock.sleep(poll_s)


def ensure_off(session: LabSession, machines: Sequence[Machine], timeout_s: float = 300.0) -> None:
    """Bring every machine to S5 and check it: shut down those that are on, then verify.

    Raises :class:`LabFaultError` naming the machines that would not go off.
    """
    if not machines:
        return
    states = session.power.state([m.name for m in machines])
    running = [n for n, s in states.items() if s.state is not State.OFF]
    if running:
        report = session.power.off(running)
        session.timeline.append("phase", "prepare", action="off", machines=len(running), ok=report.ok)
    wrong = wait_all_in_state(session, machines, State.OFF, timeout_s)
    if wrong:
        listed = ", ".join(f"{n} ({s.value})" for n, s in sorted(wrong.items())[:10])
        raise LabFaultError(
            f"{len(wrong)} machine(s) did not reach S5 within {timeout_s:g} lab s: {listed}"
            " (check that they answer SSH `shutdown /s`, or power them off by hand)",
            list(wrong),
        )
