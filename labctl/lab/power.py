"""Power for a machine, a group or a selector, whatever the backend.

The backend is picked by the machine's kind, the way labgrid picks a power driver by model:

- **client** (diskless streaming desktop): on = Wake-on-LAN (one burst for the whole group);
  off / reboot / reset = ``shutdown`` over SSH (``/s``, ``/r``, ``/r /f``); state = the streaming
  server's device status, else whether the machine answers on its SSH port.
- **server**: Redfish ``ComputerSystem.Reset`` on its BMC (On, GracefulShutdown or ForceOff,
  GracefulRestart, ForceRestart), each checked against the system's allowable values; state =
  ``PowerState``.
- **vm**: vCenter (``PowerOnMultiVM_Task``, power-off and reset tasks, ``RebootGuest``).

Kinds run concurrently, each within its own limits (SSH pool, per-BMC sessions, one batched
vCenter call). Every dispatch and every failure is appended to the timeline, and the dispatch
spread (first to last action of the group) is measured and recorded.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum

from labctl.drivers.pvs import DEVICE_INFO_COMMAND, DeviceInfo, parse_device_info
from labctl.drivers.ssh import SshError
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, MachineKind
from labctl.lab.session import LabSession, by_vcenter, kinds


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


@dataclass(frozen=True)
class PowerOutcome:
    machine: str
    kind: str
    ok: bool
    detail: str  # "sent", "accepted", "already on", or the reason it failed
    fix: str = ""
    dispatched_lab: float | None = None
    seconds: float | None = None  # wall time of the backend call(s) for this machine


@dataclass(frozen=True)
class PowerReport:
    action: str
    target: str
    outcomes: dict[str, PowerOutcome]
    started_lab: float
    finished_lab: float
    spread_lab_s: float  # first to last dispatch, lab seconds
    spread_wall_s: float  # the same in wall seconds (what the orchestrator achieved)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes.values())

    @property
    def failed(self) -> dict[str, PowerOutcome]:
        return {n: o for n, o in self.outcomes.items() if not o.ok}


@dataclass(frozen=True)
class MachineState:
    machine: str
    kind: str
    state: State
    detail: str = ""
    source: str = ""
    extra: dict[str, object] = field(default_factory=dict)


_CLIENT_COMMANDS = {
    Action.OFF: ["shutdown", "/s", "/t", "0"],
    Action.REBOOT: ["shutdown", "/r", "/t", "0"],
    Action.RESET: ["shutdown", "/r", "/f", "/t", "0"],
}


class Power:
    def __init__(self, session: LabSession):
        self.s = session

    # --- actions -------------------------------------------------------------------------------
    def on(self, selector: str | Sequence[str], **kw: object) -> PowerReport:
        return self.act(Action.ON, selector, **kw)  # type: ignore[arg-type]

    def off(self, selector: str | Sequence[str], *, force: bool = False, **kw: object) -> PowerReport:
        return self.act(Action.OFF, selector, force=force, **kw)  # type: ignore[arg-type]

    def reset(self, selector: str | Sequence[str], **kw: object) -> PowerReport:
        return self.act(Action.RESET, selector, **kw)  # type: ignore[arg-type]

    def reboot(self, selector: str | Sequence[str], **kw: object) -> PowerReport:
        return self.act(Action.REBOOT, selector, **kw)  # type: ignore[arg-type]

    def act(
        self,
        action: Action | str,
        selector: str | Sequence[str],
        *,
        force: bool = False,
        progress: Callable[[PowerOutcome], object] | None = None,
    ) -> PowerReport:
        """Apply ``action`` to every machine ``selector`` names; never stops at the first failure."""
        action = Action(action)
        label = selector if isinstance(selector, str) else ",".join(selector)
        machines = self.s.machines(list(selector) if not isinstance(selector, str) else selector)
        clock = self.s.clock
        started = clock.now()
        self.s.timeline.append(
            "power.request", label, action=action.value, machines=len(machines), force=force
        )
        outcomes: dict[str, PowerOutcome] = {}
        wall_stamps: list[float] = []
        lock = threading.Lock()

        def done(o: PowerOutcome, wall: float | None) -> None:
            with lock:
                outcomes[o.machine] = o
                if wall is not None and o.ok:
                    wall_stamps.append(wall)
            self.s.timeline.append(
                "power.action" if o.ok else "power.error",
                o.machine,
                action=action.value,
                machine_kind=o.kind,
                ok=o.ok,
                detail=o.detail,
                **({"fix": o.fix} if o.fix else {}),
            )
            if progress is not None:
                progress(o)

        by_kind = kinds(machines)
        runners: dict[MachineKind, Callable[[], None]] = {}
        if MachineKind.CLIENT in by_kind:
            runners[MachineKind.CLIENT] = lambda: self._clients(
                action, by_kind[MachineKind.CLIENT], force, done
            )
        if MachineKind.SERVER in by_kind:
            runners[MachineKind.SERVER] = lambda: self._servers(
                action, by_kind[MachineKind.SERVER], force, done
            )
        if MachineKind.VM in by_kind:
            runners[MachineKind.VM] = lambda: self._vms(action, by_kind[MachineKind.VM], done)
        crashes: dict[MachineKind, str] = {}  # what stopped a backend, e.g. a credential not set
        threads = [
            threading.Thread(target=self._guard(r, action, k, crashes), daemon=True)
            for k, r in runners.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for m in machines:  # a backend that died before reporting a machine still reports it
            if m.name not in outcomes:
                why = crashes.get(m.kind)
                detail = f"no outcome from the backend: {why}" if why else "no outcome from the backend"
                done(PowerOutcome(m.name, m.kind.value, False, detail), None)
        spread_wall = (max(wall_stamps) - min(wall_stamps)) if wall_stamps else 0.0
        report = PowerReport(
            action.value,
            label,
            {m.name: outcomes[m.name] for m in machines},
            started,
            clock.now(),
            clock.to_lab_s(spread_wall),
            spread_wall,
        )
        self.s.timeline.append(
            "power.dispatch",
            label,
            action=action.value,
            machines=len(machines),
            ok=sum(o.ok for o in report.outcomes.values()),
            failed=len(report.failed),
            spread_s=report.spread_lab_s,
            spread_wall_s=spread_wall,
        )
        return report

    def _guard(
        self, runner: Callable[[], None], action: Action, kind: MachineKind, crashes: dict[MachineKind, str]
    ) -> Callable[[], None]:
        def run() -> None:
            try:
                runner()
            except Exception as exc:  # reported per machine by act(), with this reason
                crashes[kind] = f"{type(exc).__name__}: {exc}"
                self.s.timeline.append("error", "", action=action.value, detail=crashes[kind])

        return run

    # --- clients: WoL on, SSH shutdown ----------------------------------------------------------
    def _clients(
        self,
        action: Action,
        machines: list[Machine],
        force: bool,
        done: Callable[[PowerOutcome, float | None], None],
    ) -> None:
        if action is Action.ON:
            targets = []
            for m in machines:
                try:
                    targets.append(self.s.wol_target(m))
                except EndpointError as exc:
                    done(PowerOutcome(m.name, "client", False, exc.reason, exc.fix), None)
            if not targets:
                return
            dispatch = self.s.wol.wake(targets)
            for t in targets:
                if t.name in dispatch.errors:
                    done(
                        PowerOutcome(
                            t.name,
                            "client",
                            False,
                            dispatch.errors[t.name],
                            "check the network's broadcast address and wol_port",
                        ),
                        None,
                    )
                else:
                    wall = dispatch.first_sent.get(t.name)
                    done(
                        PowerOutcome(
                            t.name,
                            "client",
                            True,
                            f"magic packet x{self.s.wol.repeat}",
                            dispatched_lab=self._lab(wall) if wall else None,
                        ),
                        wall,
                    )
            return
        argv = list(_CLIENT_COMMANDS[action])
        if action is Action.OFF and force:
            argv.insert(2, "/f")

        def one(m: Machine) -> None:
            try:
                target = self.s.ssh_target(m)
                wall = time.time()
                res = self.s.ssh.run(
                    target,
                    argv,
                    timeout_s=self.s.settings.ssh_command_timeout_s,
                    action=f"{action.value} ({' '.join(argv)})",
                    expect_drop=True,
                )
                self.s.ssh.forget(target)
                if not res.ok and not res.dropped:
                    err = (res.stderr or res.stdout).strip().splitlines()
                    done(
                        PowerOutcome(
                            m.name,
                            "client",
                            False,
                            f"shutdown exited {res.exit_status}: {err[-1] if err else ''}",
                        ),
                        None,
                    )
                    return
                done(
                    PowerOutcome(
                        m.name,
                        "client",
                        True,
                        "shutdown sent",
                        dispatched_lab=self._lab(wall),
                        seconds=res.duration_s,
                    ),
                    wall,
                )
            except SshError as exc:
                if action is Action.OFF and exc.kind in ("refused", "unreachable"):
                    done(PowerOutcome(m.name, "client", True, "already off (SSH not answering)"), None)
                else:
                    done(PowerOutcome(m.name, "client", False, exc.reason, exc.fix), None)
            except EndpointError as exc:
                done(PowerOutcome(m.name, "client", False, exc.reason, exc.fix), None)

        self._pool(one, machines, self.s.settings.ssh_max_parallel)

    # --- servers: Redfish ----------------------------------------------------------------------
    def _servers(
        self,
        action: Action,
        machines: list[Machine],
        force: bool,
        done: Callable[[PowerOutcome, float | None], None],
    ) -> None:
        def one(m: Machine) -> None:
            t0 = time.monotonic()
            try:
                rf = self.s.redfish(m)
                info = rf.allowed_reset_types()
                reset_type = _reset_type(action, force, info[1])
                result = rf.reset(reset_type, allowed=info)
                wall = time.time()
                detail = (
                    f"{reset_type} accepted"
                    if result == "accepted"
                    else f"already {'on' if action is Action.ON else 'off'}"
                )
                secs = time.monotonic() - t0
                done(
                    PowerOutcome(
                        m.name, "server", True, detail, dispatched_lab=self._lab(wall), seconds=secs
                    ),
                    wall,
                )
            except EndpointError as exc:
                secs = time.monotonic() - t0
                done(PowerOutcome(m.name, "server", False, exc.reason, exc.fix, seconds=secs), None)

        self._pool(one, machines, self.s.settings.redfish_workers)

    # --- VMs: vCenter --------------------------------------------------------------------------
    def _vms(
        self, action: Action, machines: list[Machine], done: Callable[[PowerOutcome, float | None], None]
    ) -> None:
        by_vc = by_vcenter(machines)

        def one_vc(item: tuple[str, list[Machine]]) -> None:
            vc_name, ms = item
            names = [m.name for m in ms]
            try:
                vc = self.s.vcenter(vc_name)
                if action is Action.ON:
                    result = vc.power_on(names)
                elif action is Action.OFF:
                    result = vc.power_off(names)
                elif action is Action.RESET:
                    result = vc.reset(names)
                else:
                    result = vc.reboot_guest(names)
            except EndpointError as exc:
                for m in ms:
                    done(PowerOutcome(m.name, "vm", False, exc.reason, exc.fix), None)
                return
            for m in ms:
                o = result.outcomes.get(m.name)
                if o is None:
                    done(PowerOutcome(m.name, "vm", False, "vCenter reported nothing for it"), None)
                elif o.ok:
                    started = o.started_wall or result.dispatch_first_wall
                    done(
                        PowerOutcome(
                            m.name,
                            "vm",
                            True,
                            "task succeeded" if o.finished_wall else "sent",
                            dispatched_lab=self._lab(started) if started else None,
                            seconds=(o.finished_wall - started) if o.finished_wall and started else None,
                        ),
                        started,
                    )
                else:
                    done(PowerOutcome(m.name, "vm", False, f"{o.state}: {o.error}"), None)

        self._pool(one_vc, list(by_vc.items()), max(1, len(by_vc)))

    # --- state ---------------------------------------------------------------------------------
    def state(self, selector: str | Sequence[str]) -> dict[str, MachineState]:
        """The power state of each machine, read from its backend now (changes go to the timeline)."""
        machines = self.s.machines(list(selector) if not isinstance(selector, str) else selector)
        by_kind = kinds(machines)
        out: dict[str, MachineState] = {}
        lock = threading.Lock()

        def put(states: dict[str, MachineState]) -> None:
            with lock:
                out.update(states)

        jobs: list[Callable[[], None]] = []
        if MachineKind.CLIENT in by_kind:
            jobs.append(lambda: put(self.client_states(by_kind[MachineKind.CLIENT])))
        if MachineKind.SERVER in by_kind:
            jobs.append(lambda: put(self._server_states(by_kind[MachineKind.SERVER])))
        if MachineKind.VM in by_kind:
            jobs.append(lambda: put(self._vm_states(by_kind[MachineKind.VM])))
        with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
            for f in [pool.submit(j) for j in jobs]:
                f.result()
        result = {
            m.name: out.get(m.name) or MachineState(m.name, m.kind.value, State.UNKNOWN, "not read")
            for m in machines
        }
        for m in machines:
            st = result[m.name]
            if st.state is not State.UNKNOWN:
                self.s.state_changed(m, st.state.value, st.source)
        return result

    def device_status(self) -> tuple[dict[str, DeviceInfo], dict[str, str]]:
        """Every client the streaming servers know (by name and by MAC), and per-server errors."""
        devices: dict[str, DeviceInfo] = {}
        errors: dict[str, str] = {}
        servers = self.s.streaming_servers

        def one(srv: Machine) -> tuple[Machine, list[DeviceInfo] | None, str]:
            try:
                res = self.s.ssh.run(
                    self.s.ssh_target(srv),
                    DEVICE_INFO_COMMAND,
                    timeout_s=min(60.0, self.s.settings.ssh_command_timeout_s),
                    action="read device status",
                    check=True,
                )
                return srv, parse_device_info(res.stdout), ""
            except EndpointError as exc:
                return srv, None, str(exc)
            except ValueError as exc:
                return srv, None, f"{srv.name}: read device status: {exc}"

        if servers:
            with ThreadPoolExecutor(max_workers=len(servers)) as pool:
                for srv, devs, err in pool.map(one, servers):
                    if devs is None:
                        errors[srv.name] = err
                        continue
                    for d in devs:
                        # a device is active on one server: prefer the active entry
                        for key in (d.name, d.mac):
                            if key and (key not in devices or d.active):
                                devices[key] = d
        return devices, errors

    def client_states(self, machines: list[Machine]) -> dict[str, MachineState]:
        devices, errors = self.device_status()
        out: dict[str, MachineState] = {}
        unknown: list[Machine] = []
        for m in machines:
            d = devices.get(m.name) or (devices.get(m.mac) if m.mac else None)
            if d is not None and d.active:
                st = State.ON if d.boot_time_s is not None else State.BOOTING
                out[m.name] = MachineState(
                    m.name,
                    "client",
                    st,
                    f"active on {d.server or '?'}, {d.retries} retries"
                    + (f", booted in {d.boot_time_s:.1f} s" if d.boot_time_s is not None else ""),
                    "pvs",
                    {"retries": d.retries, "boot_time_s": d.boot_time_s},
                )
            elif d is not None and not errors:
                # listed by the streaming servers, all of which answered: inactive means off (S5),
                # no need to probe thousands of SSH ports that would only time out
                out[m.name] = MachineState(
                    m.name, "client", State.OFF, "inactive on the streaming server", "pvs"
                )
            else:
                unknown.append(m)

        # unknown to the streaming servers, or they could not be read: does it answer on SSH?
        def probe(m: Machine) -> None:
            host, port = m.ssh_host, (m.ssh.port if m.ssh else 22)
            if host is None:
                out[m.name] = MachineState(
                    m.name, "client", State.UNKNOWN, "no ssh access in the inventory", ""
                )
                return
            up = tcp_open(host, port, self.s.settings.probe_timeout_s)
            why = "; ".join(errors.values())
            if up:
                out[m.name] = MachineState(
                    m.name, "client", State.ON, "answers on SSH (not streaming)", "ssh"
                )
            elif errors and not devices:
                out[m.name] = MachineState(
                    m.name, "client", State.OFF, f"no SSH answer; device status unavailable ({why})", "ssh"
                )
            else:
                out[m.name] = MachineState(
                    m.name, "client", State.OFF, "not known to the streaming server, no SSH answer", "ssh"
                )

        self._pool(probe, unknown, 64)
        return out

    def _server_states(self, machines: list[Machine]) -> dict[str, MachineState]:
        out: dict[str, MachineState] = {}

        def one(m: Machine) -> None:
            try:
                ps = self.s.redfish(m).power_state()
            except EndpointError as exc:
                out[m.name] = MachineState(m.name, "server", State.UNKNOWN, str(exc), "redfish")
                return
            st = {"On": State.ON, "Off": State.OFF, "PoweringOn": State.BOOTING, "PoweringOff": State.ON}.get(
                ps, State.UNKNOWN
            )
            out[m.name] = MachineState(m.name, "server", st, f"PowerState {ps}", "redfish")

        self._pool(one, machines, self.s.settings.redfish_workers)
        return out

    def _vm_states(self, machines: list[Machine]) -> dict[str, MachineState]:
        out: dict[str, MachineState] = {}
        for vc_name, ms in by_vcenter(machines).items():
            try:
                inv = self.s.vcenter(vc_name).inventory()
            except EndpointError as exc:
                for m in ms:
                    out[m.name] = MachineState(m.name, "vm", State.UNKNOWN, str(exc), "vcenter")
                continue
            for m in ms:
                info = inv.get(m.name)
                if info is None:
                    out[m.name] = MachineState(
                        m.name, "vm", State.UNKNOWN, f"no VM named {m.name} in {vc_name}", "vcenter"
                    )
                    continue
                st = {"poweredOn": State.ON, "poweredOff": State.OFF, "suspended": State.OFF}.get(
                    info.power_state, State.UNKNOWN
                )
                if st is State.ON and not info.tools_running:
                    detail = "powered on, guest tools not running"
                else:
                    detail = info.power_state + (f", ip {info.ip}" if info.ip else "")
                out[m.name] = MachineState(m.name, "vm", st, detail, "vcenter")
        return out

    # --- helpers -------------------------------------------------------------------------------
    def _lab(self, wall: float) -> float:
        c = self.s.clock
        return c.anchor_wall_s + (wall - c.anchor_wall_s) * c.scale

    @staticmethod
    def _pool(fn: Callable[[any], None], items: list, workers: int) -> None:  # type: ignore[valid-type]
        if not items:
            return
        with ThreadPoolExecutor(
            max_workers=max(1, min(workers, len(items))), thread_name_prefix="power"
        ) as pool:
            for f in [pool.submit(fn, i) for i in items]:
                f.result()


def _reset_type(action: Action, force: bool, allowed: tuple[str, ...]) -> str:
    """The Redfish ResetType for an action, preferring the graceful one when the system offers it."""

    def pick(*choices: str) -> str:
        if not allowed:
            return choices[0]
        for c in choices:
            if c in allowed:
                return c
        return choices[0]  # not offered: reset() names the allowed values in its error

    if action is Action.ON:
        return pick("On")
    if action is Action.OFF:
        return pick("ForceOff") if force else pick("GracefulShutdown", "ForceOff")
    if action is Action.REBOOT:
        return pick("GracefulRestart", "ForceRestart", "PowerCycle")
    return pick("ForceRestart", "PowerCycle")


def tcp_open(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts a TCP connection on ``host:port`` within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
