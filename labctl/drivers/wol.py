"""Wake-on-LAN with the ``wakeonlan`` library: one burst per group, the dispatch spread recorded.

Magic packets go to each network's broadcast address and WoL port from the inventory. A whole
group is sent in one burst over one socket per (broadcast, port), repeated ``repeat`` times with
``gap_s`` between rounds (UDP is lossy; a NIC in S5 ignores duplicates). Every packet's send time
is kept, so the caller learns how simultaneous "simultaneous" was: the *spread* is the time from
the first machine's first packet to the last machine's first packet.

Broadcasts do not cross routers: for a network with ``wol_relay``, the packets are sent by that
relay host over SSH with its ``wakeonlan``. Two programs answer to that name and disagree on the
address flag: Debian's and Ubuntu's (Perl) take ``-i <broadcast>``, the PyPI package's script
(``pip install wakeonlan``, 4.x) takes ``-o <broadcast>`` and refuses ``-i``. With the default
command the sender asks each relay's ``wakeonlan -h`` once, before the burst, and uses its flag.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import wakeonlan

from labctl.drivers.ssh import SshPool, SshTarget, join_command
from labctl.errors import EndpointError, LabctlError

# The relay runs this; {broadcast}, {port}, {macs} are filled in (macs quoted for its shell).
# Debian's wakeonlan (Perl, 0.41): -i address, -p port.
DEFAULT_RELAY_COMMAND = ("wakeonlan", "-i", "{broadcast}", "-p", "{port}", "{macs}")
# The PyPI package's script (wakeonlan 4.x): -o/--host address, -p port; -i is an error.
PYPI_RELAY_COMMAND = ("wakeonlan", "-o", "{broadcast}", "-p", "{port}", "{macs}")


@dataclass(frozen=True)
class WolTarget:
    name: str
    mac: str
    broadcast: str
    port: int
    relay: SshTarget | None = None  # send from this host instead of from here

    @property
    def route(self) -> tuple[str, int, str | None]:
        return (self.broadcast, self.port, self.relay.name if self.relay else None)


@dataclass(frozen=True)
class WolDispatch:
    """When each machine's first magic packet left, and how spread out the burst was."""

    first_sent: dict[str, float]  # machine -> wall time (time.time) of its first packet
    packets: int
    burst_s: float  # first packet to last packet, every repeat included
    started_wall: float
    errors: dict[str, str] = field(default_factory=dict)  # machine -> why its packets were not sent

    @property
    def spread_s(self) -> float:
        """First machine's first packet to the last machine's first packet."""
        if not self.first_sent:
            return 0.0
        return max(self.first_sent.values()) - min(self.first_sent.values())


class WolSender:
    def __init__(
        self,
        *,
        repeat: int = 3,
        gap_s: float = 0.05,
        ssh: SshPool | None = None,
        relay_command: Sequence[str] = DEFAULT_RELAY_COMMAND,
        relay_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ):
        if repeat < 1:
            raise ValueError("repeat must be at least 1")
        self.repeat = repeat
        self.gap_s = gap_s
        self.ssh = ssh
        self.relay_command = tuple(relay_command)
        self.relay_timeout_s = relay_timeout_s
        self._clock = clock
        self._relay_commands: dict[str, tuple[str, ...]] = {}  # relay name -> the command it takes

    def wake(
        self, targets: Sequence[WolTarget], *, armed_hook: Callable[[], None] | None = None
    ) -> WolDispatch:
        """Send the burst. Local routes go out together; relayed routes run concurrently over SSH.

        ``armed_hook`` is called once every packet is built and every socket open, just before
        the first packet leaves (a power gate: other backends, or other sites, fire together)."""
        packets = {t.name: wakeonlan.create_magic_packet(t.mac) for t in targets}
        routes: dict[tuple[str, int, str | None], list[WolTarget]] = {}
        for t in targets:
            routes.setdefault(t.route, []).append(t)
        local = {r: ts for r, ts in routes.items() if r[2] is None}
        relayed = {r: ts for r, ts in routes.items() if r[2] is not None}
        first_sent: dict[str, float] = {}
        errors: dict[str, str] = {}
        count = 0
        commands: dict[tuple[str, int, str | None], tuple[str, ...]] = {}
        for route, ts in list(relayed.items()):  # before the gate: a relay's program is asked once
            try:
                commands[route] = self.relay_command_for(ts[0].relay)
            except LabctlError as exc:  # e.g. the relay refused us, or its credential is not set
                for t in ts:
                    errors[t.name] = str(exc)
                del relayed[route]

        relay_futs = []
        pool = (
            ThreadPoolExecutor(max_workers=max(1, len(relayed)), thread_name_prefix="wol-relay")
            if relayed
            else None
        )
        socks: dict[tuple[str, int], socket.socket] = {}
        try:
            try:
                for route in local:
                    bcast, port, _ = route
                    try:
                        socks[(bcast, port)] = wakeonlan.create_socket(
                            host=bcast, port=port, family=socket.AF_INET
                        )
                    except OSError as exc:
                        for t in local[route]:
                            errors[t.name] = (
                                f"cannot open a broadcast socket to {bcast}:{port}: {exc.strerror or exc}"
                            )
                if armed_hook is not None:
                    armed_hook()
                started = self._clock()
                last = started
                if pool is not None:
                    for route, ts in relayed.items():
                        relay_futs.append((route, ts, pool.submit(self._relay, route, ts, commands[route])))
                for rnd in range(self.repeat):
                    if rnd and self.gap_s > 0:
                        time.sleep(self.gap_s)
                    for route, ts in local.items():
                        sock = socks.get(route[:2])
                        if sock is None:
                            continue
                        for t in ts:
                            try:
                                sock.send(packets[t.name])
                            except OSError as exc:
                                errors.setdefault(t.name, f"send failed: {exc.strerror or exc}")
                                continue
                            now = self._clock()
                            count += 1
                            last = now
                            if rnd == 0:
                                first_sent[t.name] = now
            finally:
                for s in socks.values():
                    s.close()
            for _route, ts, fut in relay_futs:
                try:
                    sent_at, n = fut.result()
                except LabctlError as exc:  # e.g. the relay refused us, or its credential is not set
                    for t in ts:
                        errors[t.name] = str(exc)
                    continue
                count += n
                last = max(last, sent_at)
                for t in ts:
                    first_sent[t.name] = sent_at
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        return WolDispatch(first_sent, count, max(0.0, last - started), started, errors)

    def relay_command_for(self, relay: SshTarget | None) -> tuple[str, ...]:
        """The command ``relay`` runs: the one given, or with the default, the flag its
        ``wakeonlan`` takes (asked once with ``wakeonlan -h``: the PyPI script names ``--host``)."""
        if relay is None or self.relay_command != DEFAULT_RELAY_COMMAND:
            return self.relay_command
        known = self._relay_commands.get(relay.name)
        if known is not None:
            return known
        if self.ssh is None:
            raise EndpointError(relay.endpoint, "relay Wake-on-LAN", "no SSH pool given to the WoL sender")
        res = self.ssh.run(
            relay,
            ["wakeonlan", "-h"],
            timeout_s=self.relay_timeout_s,
            action="ask the Wake-on-LAN relay's wakeonlan for its options",
            check=True,  # no wakeonlan there: its route fails now, naming why, before the burst
        )
        text = f"{res.stdout}\n{res.stderr}"
        command = PYPI_RELAY_COMMAND if "--host" in text else DEFAULT_RELAY_COMMAND
        self._relay_commands[relay.name] = command
        return command

    def relay_argv(
        self, broadcast: str, port: int, macs: Sequence[str], command: Sequence[str] | None = None
    ) -> list[str]:
        argv: list[str] = []
        for part in self.relay_command if command is None else command:
            if part == "{macs}":
                argv.extend(macs)
            else:
                argv.append(part.format(broadcast=broadcast, port=port))
        return argv

    def _relay(
        self, route: tuple[str, int, str | None], targets: list[WolTarget], command: Sequence[str]
    ) -> tuple[float, int]:
        relay = targets[0].relay
        assert relay is not None
        if self.ssh is None:
            raise EndpointError(relay.endpoint, "relay Wake-on-LAN", "no SSH pool given to the WoL sender")
        argv = self.relay_argv(route[0], route[1], [t.mac for t in targets], command)
        command = join_command(argv, relay.shell)
        # one command per repeat, so the relay repeats like a local burst would
        sent_at = self._clock()
        for rnd in range(self.repeat):
            if rnd and self.gap_s > 0:
                time.sleep(self.gap_s)
            self.ssh.run(
                relay,
                command,
                timeout_s=self.relay_timeout_s,
                action=f"relay Wake-on-LAN for {len(targets)} machine(s) to {route[0]}:{route[1]}",
                check=True,
            )
        return sent_at, len(targets) * self.repeat
