"""What a power action reports: per machine when it was sent and when it was delivered, and the
spreads of both over the group (how simultaneous "simultaneous" really was)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from labctl.clock import LabClock
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.records.run_record import GroupAction


class Action(StrEnum):
    ON = "on"
    OFF = "off"
    RESET = "reset"
    REBOOT = "reboot"


class State(StrEnum):
    ON = "on"  # powered and its OS answering (client: active on the streaming server)
    BOOTING = "booting"  # powered, OS not up yet
    OFF = "off"
    UNKNOWN = "unknown"  # could not be read: see detail


# what a backend reads -> the lab's state (a machine on its way down is still on until it is off)
STATE_OF_READING: dict[PowerReading, State] = {
    PowerReading.ON: State.ON,
    PowerReading.OFF: State.OFF,
    PowerReading.POWERING_ON: State.BOOTING,
    PowerReading.POWERING_OFF: State.ON,
    PowerReading.UNKNOWN: State.UNKNOWN,
}


def verb_for(action: Action, force: bool = False) -> PowerVerb:
    """The driver verb for a lab action: ``off`` is graceful unless forced."""
    if action is Action.ON:
        return PowerVerb.ON
    if action is Action.OFF:
        return PowerVerb.FORCE_OFF if force else PowerVerb.GRACEFUL_OFF
    return PowerVerb.REBOOT if action is Action.REBOOT else PowerVerb.RESET


def lab_at(clock: LabClock, wall_s: float) -> float:
    """The lab time of a wall-clock instant (``time.time()``) on ``clock``."""
    return clock.anchor_wall_s + (wall_s - clock.anchor_wall_s) * clock.scale


@dataclass(frozen=True)
class PowerOutcome:
    """One machine's part in a power action.

    ``sent_wall`` is when the request left the controller for this machine (the WoL packet, the
    SSH exec request, the Redfish/IPMI request, the vCenter call); ``delivered_wall`` when the
    backend saw it take effect: the SSH session dropped under a shutdown (or the OS acknowledged
    the command), the BMC acknowledged the reset, the vCenter task finished. None where the
    backend cannot see it (Wake-on-LAN is a UDP packet nobody answers).
    """

    machine: str
    kind: str  # client, server, vm
    ok: bool
    detail: str  # "magic packet x3", "shutdown delivered (session dropped)", "already off", or why it failed
    fix: str = ""
    backend: str = ""  # the PowerKind that carried it
    sent_wall: float | None = None
    delivered_wall: float | None = None
    sent_lab: float | None = None
    delivered_lab: float | None = None
    seconds: float | None = None  # wall time of the backend call(s) for this machine


def spread(stamps: Iterable[float | None]) -> float | None:
    """First to last of the stamps that exist; None when there are none."""
    values = [s for s in stamps if s is not None]
    return (max(values) - min(values)) if values else None


def delivery_spread_wall(outcomes: Iterable[PowerOutcome]) -> float | None:
    """First to last delivery of the machines the action reached; None when any of them has no
    delivery stamp (a spread over part of a group would look better than it was)."""
    sent = [o for o in outcomes if o.ok and o.sent_wall is not None]
    if not sent or any(o.delivered_wall is None for o in sent):
        return None
    return spread(o.delivered_wall for o in sent)


@dataclass(frozen=True)
class PowerReport:
    action: str
    target: str
    outcomes: dict[str, PowerOutcome]
    started_lab: float
    finished_lab: float
    send_spread_lab_s: float  # first to last send, lab seconds
    send_spread_wall_s: float  # the same in wall seconds (what the orchestrator achieved)
    delivery_spread_lab_s: float | None = None  # first to last delivery; None: not observable
    delivery_spread_wall_s: float | None = None
    scale: float = field(default=1.0, repr=False)  # lab seconds per wall second
    fire_at_wall: float | None = None  # a timed fire: when it was to fire (time.time())
    fired_wall: float | None = None  # a timed fire: when every backend had armed and the instant came

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes.values())

    @property
    def failed(self) -> dict[str, PowerOutcome]:
        return {n: o for n, o in self.outcomes.items() if not o.ok}

    def group_actions(self) -> list[GroupAction]:
        """One :class:`GroupAction` per backend that carried part of the action (run record)."""
        by_backend: dict[str, list[PowerOutcome]] = {}
        for o in self.outcomes.values():
            by_backend.setdefault(o.backend or o.kind, []).append(o)
        out = []
        for backend, outs in by_backend.items():
            send_wall = spread(o.sent_wall for o in outs if o.ok) or 0.0
            delivery_wall = delivery_spread_wall(outs)
            firsts = [o.sent_lab for o in outs if o.ok and o.sent_lab is not None]
            out.append(
                GroupAction(
                    action=self.action,
                    backend=backend,
                    machines=len(outs),
                    ok=sum(o.ok for o in outs),
                    failed={o.machine: o.detail for o in outs if not o.ok},
                    first_sent_ts_s=min(firsts) if firsts else None,
                    send_spread_s=send_wall * self.scale,
                    send_spread_wall_s=send_wall,
                    delivery_spread_s=None if delivery_wall is None else delivery_wall * self.scale,
                )
            )
        return out


@dataclass(frozen=True)
class MachineState:
    machine: str
    kind: str
    state: State
    detail: str = ""
    source: str = ""
    extra: dict[str, object] = field(default_factory=dict)
