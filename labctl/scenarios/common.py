"""What every storm engine needs: bring machines to a power state and check it, progress hooks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labctl.errors import LabctlError
from labctl.inventory.model import Machine
from labctl.lab.power import State
from labctl.lab.session import LabSession

if TYPE_CHECKING:
    from labctl.drivers.pvs import DeviceInfo
    from labctl.lab.ready import Readiness


class LabFaultError(LabctlError):
    """The lab did not do what it was told (a machine stayed on, never came up, ...)."""

    def __init__(self, message: str, machines: Sequence[str] = ()):
        super().__init__(message)
        self.machines = tuple(machines)


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


@dataclass(frozen=True)
class ClientBoot:
    """How one client's boot went, from both sides of the wire."""

    name: str
    outcome: str  # "ready", "timeout", "error"
    boot_time_s: float | None  # first network contact to agent start, as the streaming software says
    retries: int | None  # UDP requests re-sent after the 200 ms timeout during the session
    time_to_ready_s: float | None  # orchestrator: the wake / reboot command to the client seen ready
    detail: str = ""


def client_boots(
    group: Sequence[Machine],
    readiness: Mapping[str, Readiness],
    devices: Mapping[str, DeviceInfo],
    started_lab_s: float,
    dispatch_failed: Mapping[str, str],
) -> tuple[ClientBoot, ...]:
    """One :class:`ClientBoot` per client: the streaming server's boot time and retries where it
    lists the client as active, else what readiness saw; a failed dispatch not followed by a
    boot is an error."""
    out = []
    for m in group:
        r = readiness.get(m.name)
        dev = devices.get(m.name)
        outcome = r.state if r is not None else "error"
        if m.name in dispatch_failed and outcome != "ready":
            outcome = "error"
        active = dev is not None and dev.active
        out.append(
            ClientBoot(
                name=m.name,
                outcome=outcome,
                boot_time_s=dev.boot_time_s if active and dev else (r.boot_time_s if r else None),
                retries=dev.retries if active and dev else (r.retries if r else None),
                time_to_ready_s=(r.at - started_lab_s) if r is not None and r.at is not None else None,
                detail=dispatch_failed.get(m.name, "") or (r.detail if r is not None else "no outcome"),
            )
        )
    return tuple(out)
