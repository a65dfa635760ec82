"""What the storm scenarios share: each client's outcome from both sides of the wire, the cell's
named entities, its phases, and who to blame when the streaming server could not be read."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from labctl.errors import LabctlError
from labctl.inventory.model import Lab, Machine
from labctl.lab.health import check_devices, exclude_quarantined, screen
from labctl.lab.power import PowerReport, State
from labctl.records.run_record import (
    CellSummary,
    ClientOutcome,
    GroupAction,
    Outcome,
    Phase,
    RestoreOutcome,
    Window,
)
from labctl.scenarios.base import CellHead, ScenarioResult

if TYPE_CHECKING:
    import threading

    from labctl.lab.ready import Readiness
    from labctl.lab.session import LabSession
    from labctl.scenarios.base import CellContext
    from labctl.scenarios.settings import ScenarioSettings


class DeviceStatus(Protocol):
    """What the streaming server says of one client (``LabSession.power.device_status()``)."""

    @property
    def active(self) -> bool: ...

    @property
    def boot_time_s(self) -> float | None: ...

    @property
    def retries(self) -> int: ...


def client_outcomes(
    machines: Sequence[Machine],
    readiness: Mapping[str, Readiness],
    devices: Mapping[str, DeviceStatus],
    started_ts_s: float,
    *,
    role: str,
    power: PowerReport | None = None,
    unread: str = "",
) -> dict[str, ClientOutcome]:
    """One :class:`ClientOutcome` per machine: the streaming server's boot time and retries where it
    lists the client as active (else what readiness saw from the same server), the orchestrator's
    time to ready, when its power command was sent and delivered (``power``), and why it failed. A
    failed power command not followed by a boot is an ``error``; ``unread`` says why the streaming
    server's figures are missing (it could not be read)."""
    out: dict[str, ClientOutcome] = {}
    sent = power.outcomes if power is not None else {}
    for m in machines:
        r = readiness.get(m.name)
        dev = devices.get(m.name) or (devices.get(m.mac) if m.mac else None)
        outcome = r.state if r is not None else "error"
        action = sent.get(m.name)
        failed = action.detail if action is not None and not action.ok else ""
        if failed and outcome != "ready":
            outcome = "error"
        active = dev is not None and dev.active
        boot = dev.boot_time_s if active and dev is not None else (r.boot_time_s if r else None)
        retries = dev.retries if active and dev is not None else (r.retries if r else None)
        detail = failed or (r.detail if r is not None else "no outcome")
        if boot is None and unread:
            detail = f"{detail}; no boot time: {unread}" if detail else f"no boot time: {unread}"
        out[m.name] = ClientOutcome(
            name=m.name,
            role=role,
            outcome=outcome,
            boot_time_s=boot,
            retries=retries,
            time_to_ready_s=(r.at - started_ts_s) if r is not None and r.at is not None else None,
            sent_ts_s=action.sent_lab if action is not None else None,
            delivered_ts_s=action.delivered_lab if action is not None else None,
            detail=detail,
        )
    return out


def unread_servers(errors: Mapping[str, str]) -> str:
    """One line naming the streaming servers whose device status could not be read, or ''."""
    return "; ".join(errors[name] for name in sorted(errors))


def blame_streaming_server(
    errors: Mapping[str, str], clients: Mapping[str, ClientOutcome], role: str | None = None
) -> str:
    """The cell's reason when a streaming server could not be read and clients lack their boot
    time because of it: the server and its error first, not "N clients never reported"."""
    if not errors:
        return ""
    missing = [c.name for c in clients.values() if (role is None or c.role == role) and c.boot_time_s is None]
    if not missing:
        return ""
    servers = ", ".join(sorted(errors))
    return (
        f"streaming server {servers} could not be read ({unread_servers(errors)}): boot time and retries "
        f"unknown for {len(missing)} of {len(clients)} clients"
    )


def cell_entities(lab: Lab) -> dict[str, str]:
    """The named entities of a cell in ``lab``'s configuration: ``streaming_server`` (the first),
    ``write_cache_disk`` (``server/drive`` as typeperf names it) and ``share_server``."""
    out: dict[str, str] = {}
    cfg = lab.configuration
    if cfg is None:
        return out
    if cfg.streaming_servers:
        out["streaming_server"] = cfg.streaming_servers[0]
    m = lab.machines.get(cfg.write_cache_server)
    vols = m.server_hardware.volumes if m is not None and m.server_hardware else ()
    drive = next((v.drive for v in vols if v.name == cfg.write_cache_volume), None)
    if m is not None and drive:
        out["write_cache_disk"] = f"{m.name}/{drive}"
    if cfg.share is not None:
        out["share_server"] = cfg.share.server
    return out


@dataclass
class Phases:
    """The cell's timeline as it runs: each ``with phases(ctx, "window", "sample the window")``
    is an Allure step / timeline phase (through the context) and a :class:`Phase` of the summary."""

    now: Callable[[], float]  # lab time: the session clock's now
    items: list[Phase] = field(default_factory=list)

    @contextmanager
    def __call__(self, ctx: CellContext, name: str, title: str) -> Iterator[None]:
        now = self.now
        phase = Phase(name=name, start_ts_s=float(now()))
        self.items.append(phase)
        try:
            with ctx.step(title):
                yield
        finally:
            phase.end_ts_s = float(now())

    def start_of(self, name: str) -> float | None:
        return next((p.start_ts_s for p in self.items if p.name == name), None)


def healthy(
    lab: LabSession, machines: Sequence[Machine], check: bool
) -> tuple[list[Machine], dict[str, ClientOutcome]]:
    """The machines a cell may use, and those it leaves out: quarantined ones (kept out of every run
    until a health check passes again) and, with ``check``, those failing a quick health check now
    (quarantined by it). A storm is not poisoned by a dead NIC, and never hides one either: each
    left-out machine is a ``ClientOutcome`` ``excluded`` with its reason."""
    if check:
        usable, excluded = screen(lab.lab, list(machines), check_devices(lab, list(machines)))
    else:
        usable, excluded = exclude_quarantined(list(machines), lab=lab.lab)
    for name, why in excluded.items():
        lab.timeline.append("quarantine.excluded", name, reason=why)
    return usable, {
        n: ClientOutcome(name=n, role="excluded", outcome="excluded", detail=why)
        for n, why in excluded.items()
    }


def restore(
    lab: LabSession, wanted: Mapping[str, State], timeout_s: float, abort: threading.Event
) -> RestoreOutcome:
    """The machines back to ``wanted`` (the state the cell started from) with the lab's strategy, on
    the timeline. Waits unless ``abort`` (a second interrupt) is set; a failure is recorded, never
    raised: it runs on the way out, where what was measured must be kept."""
    started = lab.clock.now()
    try:
        res = lab.strategy.restore(wanted, timeout_s=timeout_s, stop=abort)
    except (LabctlError, OSError) as exc:
        return RestoreOutcome(ok=False, started_ts_s=started, ended_ts_s=lab.clock.now(), detail=str(exc))
    return res.restore_outcome()


@dataclass(kw_only=True)
class StormResult(ScenarioResult):
    """What every storm cell measured, and how it becomes the cell summary: one client outcome
    per machine of the cell, the power bursts, the phases, the restore, and what the lab did that
    the cell cannot answer for (a lab fault, named before any criterion echoes it)."""

    settings: ScenarioSettings
    entities: dict[str, str]
    window: Window | None = None  # type: ignore[assignment]  # None: stopped before the burst
    clients: dict[str, ClientOutcome] = field(default_factory=dict)
    actions: list[GroupAction] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    restore: RestoreOutcome | None = None
    prepare_failed: str = ""  # the lab could not be brought to the cell's starting state
    broke_off: str = ""  # the lab failed the cell after it started (phase: error), e.g. vCenter died
    unread: dict[str, str] = field(default_factory=dict)  # streaming server -> why it could not be read
    stopped: bool = False  # ended early by an interrupt

    blame_role: str | None = None  # whose boot times the streaming server owed (None: every client)

    def extra(self) -> dict[str, float | int | str | bool | None]:
        """Scenario-specific scalars of the summary."""
        return {}

    def lab_faults(self) -> list[str]:
        faults = []
        if self.prepare_failed:
            faults.append(f"prepare: {self.prepare_failed}")
        if self.broke_off:
            faults.append(self.broke_off)
        blame = blame_streaming_server(self.unread, self.clients, self.blame_role)
        if blame:
            faults.append(blame)
        return faults

    def summary(self, head: CellHead) -> CellSummary:
        """A failed restore is beside the measured verdict (``restore_failure: note``), or also a
        lab fault of the cell (``restore_failure: lab_fault``)."""
        faults = self.lab_faults()
        notes = list(faults)
        if self.restore is not None and not self.restore.ok:
            left = self.restore.left_on
            on = f"; left on: {', '.join(left[:8])}{' ...' if len(left) > 8 else ''}" if left else ""
            notes.append(
                f"restore failed: {self.restore.detail or 'not every machine reached its state'}{on}"
            )
            # every storm's settings carry the policy; one that does not is held to the default
            if getattr(self.settings, "restore_failure", "lab_fault") == "lab_fault":
                faults.append(notes[-1])
        return CellSummary(
            cell=head.cell,
            plan=head.plan,
            scenario=head.scenario,
            configuration=head.configuration,
            parameters=head.parameters,
            outcome=Outcome.LAB_FAULT if faults else Outcome.PASS,
            reason="; ".join(notes),
            window=self.window,
            storm_start_ts_s=self.window.start_ts_s if self.window else None,
            entities=self.entities,
            clients=self.clients,
            actions=self.actions,
            phases=self.phases,
            restore=self.restore,
            extra=self.extra(),
        )
