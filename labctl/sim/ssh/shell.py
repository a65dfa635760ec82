"""The execution environment of one command on one simulated Windows box.

:class:`Shell` is what a command module sees: the machine, the sim context (twin, clock, faults),
the file registry, and two output streams that honour cmd.exe redirections (``>nul``, ``2>&1``)
and the mid-command drop fault. Output is text with CRLF line ends, as Windows writes it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from labctl.inventory.model import Machine, MachineRole
from labctl.sim.endpoint import SimContext
from labctl.sim.ssh.files import FileStore

CRLF = "\r\n"


class CommandDropped(Exception):
    """The connection went away mid-command: no exit status is sent."""


class Io(Protocol):
    """The SSH channel, as the shell writes to it."""

    @property
    def alive(self) -> bool: ...

    async def write(self, data: str, *, stderr: bool = False) -> None: ...

    async def drop(self) -> None:
        """Close the TCP connection without an exit status or SSH disconnect, as a box going down."""


@dataclass
class MachineEnv:
    """What every command on one machine shares."""

    machine: Machine
    ctx: SimContext
    files: FileStore
    scheduled: set[asyncio.Task[None]] = field(default_factory=set)  # e.g. `shutdown /t 30`

    @property
    def name(self) -> str:
        return self.machine.name

    @property
    def netbios_name(self) -> str:
        """The name PDH puts in counter paths: upper case, at most 15 characters."""
        return self.machine.name.upper()[:15]

    @property
    def is_streaming_server(self) -> bool:
        conf = self.ctx.lab.configuration
        in_conf = conf is not None and self.machine.name in conf.streaming_servers
        return in_conf or self.machine.role is MachineRole.STREAMING

    def streaming_servers(self) -> list[str]:
        conf = self.ctx.lab.configuration
        names = list(conf.streaming_servers) if conf else []
        for m in self.ctx.lab.servers_with_role(MachineRole.STREAMING):
            if m.name not in names:
                names.append(m.name)
        return names


class Shell:
    def __init__(self, env: MachineEnv, io: Io, *, drop_armed: bool = False):
        self.env = env
        self.io = io
        self.drop_armed = drop_armed
        self.stdout_to: str | None = None
        self.stderr_to: str | None = None
        self._partial = ""  # text of the current, unfinished stdout line

    @property
    def machine(self) -> Machine:
        return self.env.machine

    @property
    def ctx(self) -> SimContext:
        return self.env.ctx

    @property
    def alive(self) -> bool:
        return self.io.alive

    # --- output --------------------------------------------------------------------------------
    async def out(self, text: str) -> None:
        """Write to stdout; with the drop fault armed, the connection drops after the first
        non-blank line has gone out."""
        if self.stdout_to is not None:
            return  # redirected to nul or a file
        if not self.drop_armed:
            await self.io.write(text)
            return
        cut = self._first_line_end(text)
        if cut is None:
            await self.io.write(text)
            return
        await self.io.write(text[:cut])
        await self.drop()

    def _first_line_end(self, text: str) -> int | None:
        pos = 0
        while True:
            nl = text.find("\n", pos)
            if nl < 0:
                self._partial += text[pos:]
                return None
            line = self._partial + text[pos:nl]
            self._partial = ""
            if line.strip():
                return nl + 1
            pos = nl + 1

    async def err(self, text: str) -> None:
        if self.stderr_to == "&1":
            await self.out(text)
        elif self.stderr_to is None:
            await self.io.write(text, stderr=True)

    async def drop(self) -> NoReturn:
        await self.io.drop()
        raise CommandDropped

    # --- lab time ------------------------------------------------------------------------------
    async def sleep_lab(self, lab_seconds: float) -> None:
        if not self.io.alive:
            raise CommandDropped
        await asyncio.sleep(max(0.0, self.ctx.clock.to_wall_s(lab_seconds)))
        if not self.io.alive:
            raise CommandDropped

    async def sleep_until_lab(self, lab_time: float) -> None:
        await self.sleep_lab(lab_time - self.ctx.clock.now())
