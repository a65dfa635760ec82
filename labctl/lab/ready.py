"""``wait_ready``: wait until machines are up, each with its own outcome.

Per machine the outcome is *ready at lab time t*, *timed out* (with what was last seen), or
*error* (with the reason, e.g. credentials rejected). One machine failing never loses the
others: every kind is watched in its own thread and every machine gets an outcome.

What "ready" means, by kind:
- **client**: the streaming server reports the device active with a boot time (agent up), as the
  2007 paper measures boot time; with no streaming server, the machine answers ``hostname``
  over SSH. The boot time and session retries the server reports are kept. When a streaming
  server cannot be read (its SSH drops, refuses the login, times out), the clients it would
  report on are checked over SSH instead, and their outcome names that server
  (``failed_endpoint``): a client that booted has no boot time because *the server* failed, not
  because the client did.
- **server**: Redfish ``PowerState`` is ``On`` and, when the inventory gives SSH access, the OS
  answers ``hostname``.
- **vm**: powered on with guest tools running and an IP address, watched through vCenter's
  property collector (``WaitForUpdatesEx``), not polled per VM.

``expect_boot``: the machines were just told to (re)boot, so one that looks ready at the first
look is only counted once it has been seen not ready (the streaming server still shows the
previous session for a moment after a reboot command). It applies to clients and servers;
vCenter reports a VM's guest state itself.

A watcher that crashes (an exception no endpoint error explains) gives every machine of its kind
that was not ready yet an ``error`` outcome with the crash, also those it had already seen: it
never reports "not ready by the deadline" for a deadline that has not come.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from labctl.drivers.pvs import DeviceInfo
from labctl.drivers.ssh import SshError
from labctl.errors import BadInputError, EndpointError, EndpointTimeout
from labctl.inventory.model import Machine, MachineKind
from labctl.lab.context import LabContext, by_vcenter, kinds
from labctl.lab.power.facade import Power
from labctl.lab.targets import Selector, resolve_machines


@dataclass(frozen=True)
class Readiness:
    machine: str
    kind: str
    state: str  # "ready", "timeout", "error"
    at: float | None = None  # lab time it was seen ready
    boot_time_s: float | None = None  # as the streaming server reports it (clients)
    retries: int | None = None  # session retries the streaming server reports (clients)
    detail: str = ""
    # the endpoint whose failure left this outcome incomplete or undecided, e.g. the streaming
    # server whose device status could not be read (so no boot time); "" when none
    failed_endpoint: str = ""

    @property
    def ready(self) -> bool:
        return self.state == "ready"


class _Tracker:
    """Shared bookkeeping: who is ready, who was seen down, last error per machine."""

    def __init__(
        self,
        ctx: LabContext,
        power: Power | None,
        machines: list[Machine],
        expect_boot: bool,
        stop: threading.Event | None = None,
        answering: bool = False,
    ):
        self.ctx = ctx
        self.power = power  # the clients' device status (None: no streaming servers to ask)
        self.machines = machines
        self.expect_boot = expect_boot
        self.answering = answering  # clients count once they also answer over SSH
        self.stop = (
            stop if stop is not None else threading.Event()
        )  # set by the caller (Ctrl-C, a failed cell): watchers end at their next poll
        self.lock = threading.Lock()
        self.ready: dict[str, Readiness] = {}
        self.seen_down: set[str] = set()
        self.errors: dict[str, str] = {}
        self.observed: set[str] = set()  # at least one successful observation
        self.last: dict[str, str] = {}
        self.first_boot_time: dict[str, float] = {}  # boot time the streaming server first reported
        self.blamed: dict[str, tuple[str, str]] = {}  # machine -> (endpoint, why) that kept it unknown

    def pending(self) -> list[Machine]:
        with self.lock:
            return [m for m in self.machines if m.name not in self.ready]

    def down(self, m: Machine, detail: str) -> None:
        with self.lock:
            self.seen_down.add(m.name)
            self.observed.add(m.name)
            self.last[m.name] = detail
            self.errors.pop(m.name, None)

    def note_session(self, m: Machine, boot_time_s: float) -> None:
        """A streaming client reports a boot time per session: one that differs from the first
        seen is a new boot even if no poll caught the client down (on a loaded or fast-clocked
        lab a whole reboot can fall between two device-status polls)."""
        with self.lock:
            first = self.first_boot_time.setdefault(m.name, boot_time_s)
            if first != boot_time_s:
                self.seen_down.add(m.name)

    def error(self, m: Machine, reason: str) -> None:
        with self.lock:
            self.errors[m.name] = reason

    def blame(self, m: Machine, endpoint: str, why: str) -> None:
        """``endpoint`` (not ``m``) is why ``m``'s outcome lacks what that endpoint would tell."""
        with self.lock:
            self.blamed[m.name] = (endpoint, why)

    def cleared(self, m: Machine) -> None:
        with self.lock:
            self.blamed.pop(m.name, None)

    def up(
        self, m: Machine, *, boot_time_s: float | None = None, retries: int | None = None, detail: str = ""
    ) -> bool:
        with self.lock:
            self.observed.add(m.name)
            self.errors.pop(m.name, None)
            if m.name in self.ready:
                return True
            if self.expect_boot and m.name not in self.seen_down:
                self.last[m.name] = "still up from before the boot"
                return False
            endpoint, why = self.blamed.get(m.name, ("", ""))
            if endpoint:
                detail = f"{detail}; {why}" if detail else why
            r = Readiness(
                m.name, m.kind.value, "ready", self.ctx.clock.now(), boot_time_s, retries, detail, endpoint
            )
            self.ready[m.name] = r
        ev = (
            {"boot_time_s": boot_time_s, "retries": retries}
            if boot_time_s is not None or retries is not None
            else {}
        )
        self.ctx.timeline.append("ready", m.name, machine_kind=m.kind.value, detail=detail, **ev)
        self.ctx.state_changed(m, "on", "ready")
        return True


def _sleep_poll(ctx: LabContext, deadline: float, stop: threading.Event) -> bool:
    """Sleep one poll interval, not past the deadline; False once the deadline has passed or the
    wait was stopped."""
    clock = ctx.clock
    remaining = deadline - clock.now()
    if remaining <= 0 or stop.is_set():
        return False
    wall = max(ctx.settings.ready_poll_min_wall_s, clock.to_wall_s(ctx.settings.ready_poll_lab_s))
    return not stop.wait(min(wall, clock.to_wall_s(remaining)))


def _answers(ctx: LabContext, m: Machine) -> tuple[bool, str]:
    """Whether the machine runs ``hostname`` over SSH; (False, why) otherwise. Auth errors raise."""
    try:
        res = ctx.ssh.run(
            ctx.ssh_target(m),
            ["hostname"],
            timeout_s=min(30.0, ctx.settings.ssh_command_timeout_s),
            action="check it is up (hostname)",
        )
    except SshError as exc:
        if exc.kind in ("auth", "hostkey"):
            raise
        ctx.ssh.forget(ctx.ssh_target(m))
        return False, exc.reason
    except EndpointTimeout as exc:  # no answer in time: not up yet
        return False, exc.reason
    return res.ok, "" if res.ok else f"hostname exited {res.exit_status}"


def _check_ssh(t: _Tracker, m: Machine, up_detail: str, down_detail: Callable[[str], str]) -> None:
    """Ask ``m`` over SSH and record the verdict: up, down (``down_detail(why)``) or an error."""
    try:
        ok, why = _answers(t.ctx, m)
    except EndpointError as exc:
        t.error(m, str(exc))
        return
    if ok:
        t.up(m, detail=up_detail)
    else:
        t.down(m, down_detail(why))


def _login_after_boot(t: _Tracker, m: Machine, d: DeviceInfo) -> None:
    """A client the streaming server shows booted is up once it also answers over SSH: on a real
    client the SSH service starts some seconds after the streaming session (and the desktop)."""
    try:
        ok, why = _answers(t.ctx, m)
    except EndpointError as exc:
        t.error(m, str(exc))
        return
    except Exception as exc:  # one machine's odd failure must not end the others' watch
        t.error(m, f"{m.name}: check it is up (hostname): {type(exc).__name__}: {exc}")
        return
    where = f"active on {d.server or '?'}"
    if ok:
        t.up(m, boot_time_s=d.boot_time_s, retries=d.retries, detail=f"{where}, answers over SSH")
    else:
        t.down(m, f"{where}, not answering over SSH yet: {why or 'no answer'}")


def _watch_clients(t: _Tracker, clients: list[Machine], deadline: float) -> None:
    s = t.ctx
    use_pvs = bool(s.streaming_servers) and t.power is not None
    while True:
        pending = [m for m in t.pending() if m.kind is MachineKind.CLIENT and m in clients]
        if not pending:
            return
        ssh_check: list[Machine] = []
        booted: list[tuple[Machine, DeviceInfo]] = []  # active with a boot time; SSH asked next
        if use_pvs:
            assert t.power is not None
            devices, errors = t.power.device_status()
            failed = ", ".join(sorted(errors))
            reasons = "; ".join(errors[n] for n in sorted(errors))
            if errors and not devices:
                ssh_check = pending  # no streaming server answered: fall back to SSH
                for m in pending:
                    t.blame(m, failed, f"streaming server {failed} could not be read: {reasons}")
            else:
                for m in pending:
                    d = devices.get(m.name) or (devices.get(m.mac) if m.mac else None)
                    if d is None and errors:
                        # not on a server that answered: it may be one that failed; ask it over SSH
                        t.blame(m, failed, f"streaming server {failed} could not be read: {reasons}")
                        ssh_check.append(m)
                        continue
                    t.cleared(m)
                    if d is not None and d.active and d.boot_time_s is not None:
                        if t.expect_boot:
                            t.note_session(m, d.boot_time_s)
                        if t.answering:
                            booted.append((m, d))
                            continue
                        t.up(
                            m,
                            boot_time_s=d.boot_time_s,
                            retries=d.retries,
                            detail=f"active on {d.server or '?'}",
                        )
                    else:
                        t.down(
                            m,
                            "booting (active, no boot time yet)"
                            if d is not None and d.active
                            else "not active on the streaming server",
                        )
        else:
            ssh_check = pending
        if ssh_check:

            def probe(m: Machine) -> None:
                try:
                    _check_ssh(t, m, "answers over SSH", lambda why: why or "no SSH answer")
                except Exception as exc:  # one machine's odd failure must not end the others' watch
                    t.error(m, f"{m.name}: check it is up (hostname): {type(exc).__name__}: {exc}")

            with ThreadPoolExecutor(max_workers=min(64, len(ssh_check))) as pool:
                list(pool.map(probe, ssh_check))
        if booted:
            with ThreadPoolExecutor(max_workers=min(64, len(booted))) as pool:
                list(pool.map(lambda md: _login_after_boot(t, *md), booted))
        if not _sleep_poll(s, deadline, t.stop):
            return


def _watch_servers(t: _Tracker, servers: list[Machine], deadline: float) -> None:
    s = t.ctx

    def one(m: Machine) -> None:
        try:
            ps = s.redfish(m).power_state() if m.bmc is not None else "On"
        except EndpointError as exc:
            t.error(m, str(exc))
            return
        if ps != "On":
            t.down(m, f"PowerState {ps}")
            return
        if m.ssh is None:
            t.up(m, detail="PowerState On")
            return
        _check_ssh(
            t, m, "PowerState On, answers over SSH", lambda why: f"PowerState On, OS not answering: {why}"
        )

    while True:
        pending = [m for m in t.pending() if m in servers]
        if not pending:
            return
        with ThreadPoolExecutor(max_workers=min(s.settings.redfish_workers, len(pending))) as pool:
            list(pool.map(one, pending))
        if not _sleep_poll(s, deadline, t.stop):
            return


def _watch_vms(t: _Tracker, vms: list[Machine], deadline: float) -> None:
    s = t.ctx
    by_vc = by_vcenter(vms)

    def one_vc(item: tuple[str, list[Machine]]) -> None:
        vc_name, ms = item
        by_name = {m.name: m for m in ms}
        try:
            vc = s.vcenter(vc_name)
        except EndpointError as exc:
            for m in ms:
                t.error(m, str(exc))
            return

        def on_ready(name: str, _wall: float) -> None:
            m = by_name.get(name)
            if m is not None:
                t.up(m, detail="guest up")

        # vCenter reports the guest state itself; expect_boot does not apply to VMs
        with t.lock:
            t.seen_down.update(by_name)
        remaining = s.clock.to_wall_s(max(0.0, deadline - s.clock.now()))
        try:
            out = vc.wait_ready(
                list(by_name),
                timeout_s=max(0.5, remaining),
                require_tools=s.settings.vm_ready_requires_tools,
                require_ip=s.settings.vm_ready_requires_ip,
                on_ready=on_ready,
            )
        except EndpointError as exc:
            for m in ms:
                t.error(m, str(exc))
            return
        for name, o in out.items():
            m = by_name[name]
            if o.state == "error":
                t.error(m, o.detail)
            elif o.state == "timeout":
                t.down(m, o.detail)

    with ThreadPoolExecutor(max_workers=max(1, len(by_vc))) as pool:
        list(pool.map(one_vc, list(by_vc.items())))


def wait_ready(
    ctx: LabContext,
    power: Power | None,
    machines: list[Machine],
    *,
    timeout_s: float | None = None,
    deadline: float | None = None,
    expect_boot: bool = False,
    stop: threading.Event | None = None,
    answering: bool = False,
) -> dict[str, Readiness]:
    """Wait until every machine is ready or the deadline (lab time) passes; one outcome each.

    ``answering``: a client shown booted by its streaming server counts only once it also answers
    over SSH (for cells that will command it over SSH next).

    Give ``timeout_s`` (lab seconds from now) or ``deadline`` (absolute lab time). Setting ``stop``
    (from another thread) ends the wait early: machines not ready by then get a "timeout" outcome
    that says the wait was stopped.
    """
    clock = ctx.clock
    if deadline is None:
        if timeout_s is None:
            raise ValueError("give timeout_s or deadline")
        deadline = clock.now() + timeout_s
    tracker = _Tracker(ctx, power, machines, expect_boot, stop, answering)
    stop = tracker.stop
    by_kind = kinds(machines)
    watchers: list[tuple[MachineKind, Callable[[], None]]] = []
    if MachineKind.CLIENT in by_kind:
        watchers.append(
            (MachineKind.CLIENT, lambda: _watch_clients(tracker, by_kind[MachineKind.CLIENT], deadline))
        )
    if MachineKind.SERVER in by_kind:
        watchers.append(
            (MachineKind.SERVER, lambda: _watch_servers(tracker, by_kind[MachineKind.SERVER], deadline))
        )
    if MachineKind.VM in by_kind:
        watchers.append((MachineKind.VM, lambda: _watch_vms(tracker, by_kind[MachineKind.VM], deadline)))
    crashes: dict[MachineKind, str] = {}  # kind -> why its watcher ended early

    def guard(kind: MachineKind, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except Exception as exc:  # recorded per machine below
                crashes[kind] = f"{type(exc).__name__}: {exc}"

        return run

    threads = [threading.Thread(target=guard(k, w), daemon=True, name="wait-ready") for k, w in watchers]
    for th in threads:
        th.start()
    # a watcher blocked in a network call past the deadline must not hold the caller: give each
    # the time to its deadline plus the longest single call it may be in
    grace = max(ctx.settings.redfish_timeout_s, ctx.settings.ssh_connect_timeout_s) + 5
    join_until = time.monotonic() + max(0.0, clock.to_wall_s(deadline - clock.now())) + grace
    for th in threads:
        # in slices, so a stop ends the wait even while a watcher sits in a long network call
        while th.is_alive() and not stop.is_set() and time.monotonic() < join_until:
            th.join(timeout=min(0.2, max(0.0, join_until - time.monotonic())))
    stopped = stop.is_set()
    out: dict[str, Readiness] = {}
    with tracker.lock:
        for m in machines:
            r = tracker.ready.get(m.name)
            if r is not None:
                out[m.name] = r
                continue
            endpoint, blamed = tracker.blamed.get(m.name, ("", ""))
            last = tracker.last.get(m.name) or tracker.errors.get(m.name) or "never seen"
            if m.kind in crashes:
                # the watch of this kind ended early: the deadline did not decide anything
                crash = f"the readiness watch failed: {crashes[m.kind]} (last seen: {last})"
                out[m.name] = Readiness(m.name, m.kind.value, "error", detail=crash, failed_endpoint=endpoint)
            elif m.name in tracker.errors and m.name not in tracker.observed:
                out[m.name] = Readiness(
                    m.name, m.kind.value, "error", detail=tracker.errors[m.name], failed_endpoint=endpoint
                )
            else:
                why = "wait stopped before it was ready" if stopped else "not ready by the deadline"
                detail = f"{why}: {last}" + (f"; {blamed}" if blamed else "")
                out[m.name] = Readiness(
                    m.name, m.kind.value, "timeout", detail=detail, failed_endpoint=endpoint
                )
    for m in machines:
        r = out[m.name]
        if r.state != "ready":
            ctx.timeline.append(r.state, m.name, machine_kind=m.kind.value, detail=r.detail)
    return out


class RemoteReady(Protocol):
    """What readiness needs of the link to the site agents: they watch their own machines."""

    def wait_ready(
        self,
        machines: Sequence[Machine],
        *,
        deadline_lab: float,
        expect_boot: bool,
        stop: threading.Event | None,
    ) -> dict[str, Readiness]: ...


class ReadyWatch:
    """``session.wait_ready``: built with the lab context, the power service (the streaming
    servers' device status) and, for a lab with site agents, the link to them."""

    def __init__(self, ctx: LabContext, power: Power, agents: RemoteReady | None = None):
        self.ctx = ctx
        self.power = power
        self.agents = agents

    def wait(
        self,
        selector: Selector | list[Machine],
        timeout_s: float | None = None,
        *,
        deadline: float | None = None,
        expect_boot: bool = False,
        stop: threading.Event | None = None,
        answering: bool = False,
    ) -> dict[str, Readiness]:
        """Wait until each machine is up (see :func:`wait_ready`). Machines a site agent serves
        (unless its ``ready: false``) are watched by that agent, the rest here, all at once."""
        machines = resolve_machines(self.ctx.lab, selector)
        sites = self.ctx.lab.agents.sites if self.ctx.lab.agents is not None else {}
        remote = [m for m in machines if m.agent and sites.get(m.agent) and sites[m.agent].ready]
        if not remote:
            return wait_ready(
                self.ctx,
                self.power,
                machines,
                timeout_s=timeout_s,
                deadline=deadline,
                expect_boot=expect_boot,
                stop=stop,
                answering=answering,
            )
        if self.agents is None:
            raise BadInputError(
                f"{remote[0].name}: watched by its site agent, but this session of lab "
                f"{self.ctx.lab.name} was built without the link to its agents"
            )
        agents = self.agents
        clock = self.ctx.clock
        if deadline is None:
            if timeout_s is None:
                raise ValueError("give timeout_s or deadline")
            deadline = clock.now() + timeout_s
        until = deadline
        local = [m for m in machines if m not in remote]
        out: dict[str, Readiness] = {}
        lock = threading.Lock()

        def run_remote() -> None:
            got = agents.wait_ready(remote, deadline_lab=until, expect_boot=expect_boot, stop=stop)
            with lock:
                out.update(got)

        thread = threading.Thread(target=run_remote, name="ready-agents", daemon=True)
        thread.start()
        if local:
            got = wait_ready(
                self.ctx,
                self.power,
                local,
                deadline=until,
                expect_boot=expect_boot,
                stop=stop,
                answering=answering,
            )
            with lock:
                out.update(got)
        thread.join()
        return {m.name: out[m.name] for m in machines}
