"""Device health and quarantine, in the spirit of LAVA's health checks.

Before a storm every device the cell uses gets a quick check: its power state can be read (the
BMC or vCenter answers; a client is known to the streaming server or probed), a machine that is
on answers over SSH, and, with ``wake=True``, a client that is off wakes and comes up. A device
that fails is *quarantined*: excluded from the cell with the reason (a ``ClientOutcome`` with
outcome ``excluded``), and kept out of later runs until a health check passes again (or someone
runs `labctl quarantine release`). A 1,000-client storm is not poisoned by ten dead NICs, and it
never hides them either.

    results = check_devices(session, machines)              # DeviceHealth per machine
    usable, excluded = screen(lab, machines, results)       # quarantines failures, frees passes
    usable, excluded = exclude_quarantined(machines, lab=lab)   # no check: the store's word only

Machines served by a site agent are checked by that agent, where the wire is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, Protocol

from labctl.drivers.ssh import SshError
from labctl.errors import BadInputError, EndpointError, LabctlError
from labctl.inventory.model import Lab, Machine, MachineKind
from labctl.lab.context import LabContext
from labctl.lab.power.backend import in_pool
from labctl.lab.power.facade import Power
from labctl.lab.power.model import Action, State
from labctl.lab.ready import ReadyWatch

QUARANTINE_FILE_VAR = "LABCTL_QUARANTINE_FILE"
DEFAULT_QUARANTINE_FILE = Path(__file__).resolve().parents[2] / ".labctl" / "quarantine.json"
WAKE_TIMEOUT_S: Final = 600.0  # lab seconds a client that is off gets to wake and come up (wake=True)
SSH_CHECK_TIMEOUT_S: Final = 20.0  # wall seconds for `hostname` over SSH
CHECK_WORKERS: Final = 64

OK = "ok"


@dataclass(frozen=True)
class DeviceHealth:
    """One device's check: each check's word (``ok`` or why not) and the verdict."""

    machine: str
    kind: str
    ok: bool
    checks: dict[str, str] = field(default_factory=dict)  # "power", "bmc", "ssh", "wake" -> "ok" or why
    checked_wall: float = 0.0

    @property
    def reason(self) -> str:
        """The first failed check, as one line (``ssh: connection refused``); "" when healthy."""
        return "; ".join(f"{k}: {v}" for k, v in self.checks.items() if v != OK and not v.startswith("-"))


def _verdict(m: Machine, checks: dict[str, str]) -> DeviceHealth:
    ok = all(v == OK or v.startswith("-") for v in checks.values())  # "- not checked (...)" is no failure
    return DeviceHealth(m.name, m.kind.value, ok, checks, time.time())


def _ssh_answers(ctx: LabContext, m: Machine) -> str:
    try:
        res = ctx.ssh.run(
            ctx.ssh_target(m),
            ["hostname"],
            timeout_s=SSH_CHECK_TIMEOUT_S,
            action="health check (hostname)",
        )
    except EndpointError as exc:
        if isinstance(exc, SshError) and exc.kind not in ("auth", "hostkey"):
            ctx.ssh.forget(ctx.ssh_target(m))
        return exc.reason or str(exc)
    return OK if res.ok else f"hostname exited {res.exit_status}"


def check_local(
    ctx: LabContext,
    power: Power,
    ready: ReadyWatch,
    machines: Sequence[Machine],
    *,
    wake: bool = False,
    wake_timeout_s: float = WAKE_TIMEOUT_S,
) -> dict[str, DeviceHealth]:
    """Check machines from this process (an agent checks its own machines with this)."""
    if not machines:
        return {}
    states = power.state([m.name for m in machines])
    checks: dict[str, dict[str, str]] = {m.name: {} for m in machines}
    to_wake: list[Machine] = []
    to_ssh: list[Machine] = []
    for m in machines:
        st = states[m.name]
        c = checks[m.name]
        endpoint = (
            "bmc" if m.kind is MachineKind.SERVER else ("vcenter" if m.kind is MachineKind.VM else "power")
        )
        if st.state is State.UNKNOWN:
            c[endpoint] = st.detail or "power state unreadable"
            continue
        c[endpoint] = OK
        if st.state is State.ON and m.ssh is not None:
            to_ssh.append(m)
        elif st.state is State.OFF and m.kind is MachineKind.CLIENT:
            if wake:
                to_wake.append(m)
            else:
                c["wake"] = "- not checked (off; wake=True wakes it)"
    if to_wake:
        report = power.act(Action.ON, [m.name for m in to_wake])
        woken = [m for m in to_wake if report.outcomes[m.name].ok]
        for m in to_wake:
            if not report.outcomes[m.name].ok:
                checks[m.name]["wake"] = report.outcomes[m.name].detail
        seen = ready.wait([m.name for m in woken], timeout_s=wake_timeout_s) if woken else {}
        for name, r in seen.items():
            checks[name]["wake"] = OK if r.ready else f"{r.state}: {r.detail}"
    lock = threading.Lock()

    def ssh(m: Machine) -> None:
        word = _ssh_answers(ctx, m)
        with lock:
            checks[m.name]["ssh"] = word

    in_pool(ssh, to_ssh, CHECK_WORKERS, "health-ssh")
    return {m.name: _verdict(m, checks[m.name]) for m in machines}


class RemoteHealth(Protocol):
    """What the health check needs of the link to the site agents: they check their own machines."""

    def health(
        self, machines: Sequence[Machine], *, wake: bool, wake_timeout_s: float
    ) -> dict[str, DeviceHealth]: ...


class Health:
    """``session.health``: device checks, built with the lab context, the power and readiness
    services it uses, and, for a lab with site agents, the link to them."""

    def __init__(self, ctx: LabContext, power: Power, ready: ReadyWatch, agents: RemoteHealth | None = None):
        self.ctx = ctx
        self.power = power
        self.ready = ready
        self.agents = agents

    def check_local(
        self, machines: Sequence[Machine], *, wake: bool = False, wake_timeout_s: float = WAKE_TIMEOUT_S
    ) -> dict[str, DeviceHealth]:
        """Check machines from this process (an agent checks its own machines with this)."""
        return check_local(
            self.ctx, self.power, self.ready, machines, wake=wake, wake_timeout_s=wake_timeout_s
        )

    def check(
        self,
        machines: Sequence[Machine] | Sequence[str],
        *,
        wake: bool = False,
        wake_timeout_s: float = WAKE_TIMEOUT_S,
    ) -> dict[str, DeviceHealth]:
        """A quick health check of every machine; those a site agent serves are checked by it."""
        ms = [self.ctx.lab.machine(m) if isinstance(m, str) else m for m in machines]
        local = [m for m in ms if not m.agent]
        remote = [m for m in ms if m.agent]
        out = self.check_local(local, wake=wake, wake_timeout_s=wake_timeout_s)
        if remote:
            if self.agents is None:
                raise BadInputError(
                    f"{remote[0].name}: checked by its site agent, but this session of lab "
                    f"{self.ctx.lab.name} was built without the link to its agents"
                )
            out.update(self.agents.health(remote, wake=wake, wake_timeout_s=wake_timeout_s))
        return {m.name: out[m.name] for m in ms}


class _WithHealth(Protocol):
    @property
    def health(self) -> Health: ...


def check_devices(
    session: _WithHealth,
    machines: Sequence[Machine] | Sequence[str],
    *,
    wake: bool = False,
    wake_timeout_s: float = WAKE_TIMEOUT_S,
) -> dict[str, DeviceHealth]:
    """A quick health check of every machine through ``session.health`` (:meth:`Health.check`)."""
    return session.health.check(machines, wake=wake, wake_timeout_s=wake_timeout_s)


# --- the quarantine store --------------------------------------------------------------------------


@dataclass(frozen=True)
class Quarantined:
    lab: str
    machine: str
    reason: str  # the failed check(s), one line
    since_wall: float
    checks: dict[str, str] = field(default_factory=dict)
    last_failed_wall: float = 0.0


class QuarantineError(LabctlError):
    pass


def default_quarantine_file() -> Path:
    return Path(os.environ.get(QUARANTINE_FILE_VAR) or DEFAULT_QUARANTINE_FILE)


class QuarantineStore:
    """Quarantined devices of every lab in one JSON file, changed under an exclusive file lock
    (``$LABCTL_QUARANTINE_FILE``, default ``.labctl/quarantine.json``)."""

    def __init__(self, path: Path | None = None):
        self.path = path or default_quarantine_file()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, dict[str, object]]]]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as exc:
            raise QuarantineError(f"{self.path}: cannot open the quarantine store: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                data = json.loads(self.path.read_text()) if self.path.exists() else {}
            except (OSError, ValueError) as exc:
                raise QuarantineError(
                    f"{self.path}: unreadable quarantine store ({exc}); fix or delete the file"
                ) from None
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
                tmp.replace(self.path)
        finally:
            os.close(fd)

    def entries(self, lab: str | None = None) -> list[Quarantined]:
        with self._locked() as data:
            return [
                Quarantined(**rec)  # type: ignore[arg-type]
                for lab_name, recs in sorted(data.items())
                if lab is None or lab_name == lab
                for _, rec in sorted(recs.items())
            ]

    def quarantined(self, lab: str) -> dict[str, Quarantined]:
        return {q.machine: q for q in self.entries(lab)}

    def record(self, lab: str, results: Iterable[DeviceHealth]) -> tuple[list[str], list[str]]:
        """Quarantine every failed device, release every passed one: (newly quarantined, released)."""
        added: list[str] = []
        freed: list[str] = []
        with self._locked() as data:
            recs = data.setdefault(lab, {})
            for h in results:
                if h.ok:
                    if recs.pop(h.machine, None) is not None:
                        freed.append(h.machine)
                    continue
                old = recs.get(h.machine)
                if old is None:
                    added.append(h.machine)
                since = float(old["since_wall"]) if old is not None else h.checked_wall  # type: ignore[arg-type]
                recs[h.machine] = asdict(
                    Quarantined(lab, h.machine, h.reason, since, dict(h.checks), h.checked_wall)
                )
            if not recs:
                data.pop(lab, None)
        return added, freed

    def release(self, lab: str, machine: str) -> Quarantined | None:
        with self._locked() as data:
            rec = data.get(lab, {}).pop(machine, None)
            if lab in data and not data[lab]:
                data.pop(lab)
        return Quarantined(**rec) if rec is not None else None  # type: ignore[arg-type]


def exclude_quarantined(
    machines: Sequence[Machine], *, lab: Lab | str, store: QuarantineStore | None = None
) -> tuple[list[Machine], dict[str, str]]:
    """(usable machines, excluded machine -> reason) by the quarantine store alone."""
    lab_name = lab if isinstance(lab, str) else lab.name
    held = (store or QuarantineStore()).quarantined(lab_name)
    usable = [m for m in machines if m.name not in held]
    excluded = {m.name: f"quarantined: {held[m.name].reason}" for m in machines if m.name in held}
    return usable, excluded


def screen(
    lab: Lab | str,
    machines: Sequence[Machine],
    results: dict[str, DeviceHealth],
    *,
    store: QuarantineStore | None = None,
) -> tuple[list[Machine], dict[str, str]]:
    """Record a health check in the store (failures quarantined, passes released) and split the
    cell's machines into (usable, excluded machine -> reason)."""
    lab_name = lab if isinstance(lab, str) else lab.name
    store = store or QuarantineStore()
    store.record(lab_name, [results[m.name] for m in machines if m.name in results])
    return exclude_quarantined(machines, lab=lab_name, store=store)
