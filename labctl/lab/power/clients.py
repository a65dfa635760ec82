"""Streaming clients: Wake-on-LAN on; the OS's own shutdown over SSH for off, reboot and reset.

- **on**: one Wake-on-LAN burst for the whole group (a UDP packet nobody answers: sent, never
  seen delivered).
- **off / reboot / reset**: :func:`~labctl.drivers.ssh_burst.ssh_burst`: every client's SSH
  session is opened first, then every command is sent at once; delivered = the moment its session
  dropped (the OS stopped sshd on its way down) or it answered (exit status 0).
  A client that refuses SSH when asked to go off is already off.
- **state**: the streaming servers' device status (active, booted, retries), else whether the
  client answers on its SSH port.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

from labctl.drivers.os_power import shutdown_argv
from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.pvs import DEVICE_INFO_COMMAND, DeviceInfo, parse_device_info
from labctl.drivers.ssh import SshTarget
from labctl.drivers.ssh_burst import BurstOutcome, ssh_burst
from labctl.drivers.wol import WolTarget
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.backend import Gate, Report, in_pool, outcome
from labctl.lab.power.model import MachineState, PowerOutcome, State

_OFF_VERBS = (PowerVerb.GRACEFUL_OFF, PowerVerb.FORCE_OFF)
PROBE_WORKERS = 64  # SSH-port probes at once when the streaming servers cannot say


class WolSshBackend:
    kind: ClassVar[PowerKind] = PowerKind.WOL_SSH

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def _outcome(
        self, m: Machine, ok: bool, detail: str, fix: str = "", **stamps: float | None
    ) -> PowerOutcome:
        return outcome(self.ctx.clock, self.kind, m, ok, detail, fix, **stamps)

    # --- actions -------------------------------------------------------------------------------
    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        if verb is PowerVerb.ON:
            self._wake(machines, gate, report)
        else:
            self._shutdown(verb, machines, gate, report)

    def _wake(self, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        targets: list[WolTarget] = []
        by_name = {m.name: m for m in machines}
        for m in machines:
            try:
                targets.append(self.ctx.wol_target(m))
            except EndpointError as exc:
                report(self._outcome(m, False, exc.reason, exc.fix))
        if not targets:
            gate.pass_(self.kind.value)
            return
        try:  # packets built and sockets open before the gate: the first packet leaves as it opens
            dispatch = self.ctx.wol.wake(targets, armed_hook=lambda: gate.pass_(self.kind.value))
        finally:
            gate.leave(self.kind.value)  # no-op once passed; lets the others go if arming failed
        for t in targets:
            m = by_name[t.name]
            if t.name in dispatch.errors:
                report(
                    self._outcome(
                        m,
                        False,
                        dispatch.errors[t.name],
                        "check the network's broadcast address and wol_port",
                    )
                )
            else:
                report(
                    self._outcome(
                        m,
                        True,
                        f"magic packet x{self.ctx.wol.repeat}",
                        sent_wall=dispatch.first_sent.get(t.name),
                    )
                )

    def _shutdown(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        jobs: list[tuple[SshTarget, list[str]]] = []
        by_name: dict[str, Machine] = {}
        for m in machines:
            try:
                target = self.ctx.ssh_target(m)
                jobs.append((target, shutdown_argv(verb, target.shell)))
                by_name[m.name] = m
            except EndpointError as exc:
                report(self._outcome(m, False, exc.reason, exc.fix))
        settings = self.ctx.settings
        try:
            results = ssh_burst(
                self.ctx.ssh,
                jobs,
                action=f"{verb.value} over SSH",
                timeout_s=settings.ssh_command_timeout_s,
                workers=settings.ssh_max_parallel,
                armed_hook=lambda: gate.pass_(self.kind.value),
            )
        finally:
            gate.leave(self.kind.value)  # no-op once passed; lets the others go if arming crashed
        argv_of = {t.name: " ".join(argv) for t, argv in jobs}
        for target, _ in jobs:
            self.ctx.ssh.forget(target)  # the machine goes down: its connection is of no further use
            o = results.get(target.name) or BurstOutcome(target.name)
            report(self._judge(verb, by_name[target.name], o, argv_of[target.name]))

    def _judge(self, verb: PowerVerb, m: Machine, o: BurstOutcome, command: str) -> PowerOutcome:
        if o.error is not None:
            if verb in _OFF_VERBS and o.sent_wall is None and o.error.kind in ("refused", "unreachable"):
                return self._outcome(m, True, "already off (SSH not answering)")
            return self._outcome(m, False, o.error.reason, o.error.fix, sent_wall=o.sent_wall)
        if o.sent_wall is None:
            return self._outcome(m, False, "no outcome from the SSH burst")
        if o.dropped:
            detail = f"{command}: delivered (session dropped)"
        elif o.exit_status == 0:
            detail = f"{command}: accepted (exit 0)"
        else:
            err = o.stderr.strip().splitlines()
            return self._outcome(
                m, False, f"{command} exited {o.exit_status}: {err[-1] if err else ''}", sent_wall=o.sent_wall
            )
        return self._outcome(m, True, detail, sent_wall=o.sent_wall, delivered_wall=o.delivered_wall)

    # --- state ---------------------------------------------------------------------------------
    def device_status(self) -> tuple[dict[str, DeviceInfo], dict[str, str]]:
        """Every client the streaming servers know (by name and by MAC), and per-server errors."""
        devices: dict[str, DeviceInfo] = {}
        errors: dict[str, str] = {}
        servers = self.ctx.streaming_servers

        def one(srv: Machine) -> tuple[Machine, list[DeviceInfo] | None, str]:
            try:
                res = self.ctx.ssh.run(
                    self.ctx.ssh_target(srv),
                    DEVICE_INFO_COMMAND,
                    timeout_s=min(60.0, self.ctx.settings.ssh_command_timeout_s),
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

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        devices, errors = self.device_status()
        out: dict[str, MachineState] = {}
        unknown: list[Machine] = []
        for m in machines:
            d = devices.get(m.name) or (devices.get(m.mac) if m.mac else None)
            if d is not None and d.active:
                st = State.ON if d.boot_time_s is not None else State.BOOTING
                out[m.name] = MachineState(
                    m.name,
                    m.kind.value,
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
                    m.name, m.kind.value, State.OFF, "inactive on the streaming server", "pvs"
                )
            else:
                unknown.append(m)

        # unknown to the streaming servers, or they could not be read: does it answer on SSH?
        def probe(m: Machine) -> None:
            host, port = m.ssh_host, (m.ssh.port if m.ssh else 22)
            if host is None:
                out[m.name] = MachineState(
                    m.name, m.kind.value, State.UNKNOWN, "no ssh access in the inventory", ""
                )
                return
            up = tcp_open(host, port, self.ctx.settings.probe_timeout_s)
            why = "; ".join(errors.values())
            if up:
                detail, st = "answers on SSH (not streaming)", State.ON
            elif errors and not devices:
                detail, st = f"no SSH answer; device status unavailable ({why})", State.OFF
            else:
                detail, st = "not known to the streaming server, no SSH answer", State.OFF
            out[m.name] = MachineState(m.name, m.kind.value, st, detail, "ssh")

        in_pool(probe, unknown, PROBE_WORKERS, "probe")
        return out


def tcp_open(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts a TCP connection on ``host:port`` within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
