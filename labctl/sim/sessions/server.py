"""The simulated launcher machines: labctl's launcher script behind OpenSSH, answered from the twin.

One asyncssh listener per ``vdi.launchers`` entry with ``access`` (at its ``ip`` and port), all on
one event loop thread. What a client sees is what a Windows launcher with OpenSSH and the script
installed shows (docs/session-launchers.md): password or no login, ``cmd.exe`` refusing programs it
does not know, PowerShell refusing a ``-File`` that is not there, and the protocol's JSON lines.
Twin calls run in worker threads so one slow answer never holds the other launchers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import asyncssh

from labctl import __version__
from labctl.inventory.vdi import Launcher
from labctl.sim.endpoint import EndpointInfo, PortInUseError, SimContext
from labctl.sim.sessions.journal import Journal
from labctl.sim.ssh.cmdline import program_name, split_line
from labctl.sim.ssh.hostkeys import load_or_create_host_keys, server_options
from labctl.sim.twin.interface import VdiTwin

log = logging.getLogger(__name__)

PROTOCOL = "labctl-launcher/1"
SERVER_VERSION = "OpenSSH_for_Windows_8.1"
CALL_TIMEOUT_S = 10.0
CRLF = "\r\n"
USAGE = 2


class _Usage(Exception):
    pass


def parse_args(argv: list[str]) -> tuple[str, str, dict[str, str]]:
    """``powershell ... -File <script> <verb> -Name value ...`` -> (script, verb, {name: value})."""
    lower = [a.lower() for a in argv]
    if "-file" not in lower:
        raise _Usage("-File <script> missing")
    i = lower.index("-file")
    if i + 1 >= len(argv):
        raise _Usage("-File needs a script path")
    script = argv[i + 1]
    rest = argv[i + 2 :]
    if not rest:
        raise _Usage("no verb (hello, start, events, logoff)")
    verb, named = rest[0].lower(), {}
    k = 1
    while k < len(rest):
        name = rest[k]
        if not name.startswith("-") or k + 1 >= len(rest):
            raise _Usage(f"expected -Name value at {name!r}")
        named[name[1:].lower()] = rest[k + 1]
        k += 2
    return script, verb, named


class LauncherEndpoint:
    """One simulated launcher machine (a :class:`~labctl.sim.endpoint.SimEndpoint`)."""

    def __init__(self, manager: LauncherManager, launcher: Launcher):
        assert launcher.access is not None and launcher.ip is not None
        self.manager = manager
        self.launcher = launcher
        self.access = launcher.access
        self.info = EndpointInfo("launcher", launcher.name, launcher.ip, launcher.access.port, "ssh")
        self.journal = Journal(launcher.name, manager.twin)
        self.acceptor: asyncssh.SSHAcceptor | None = None

    def start(self) -> None:
        self.manager.call(self._listen())

    def stop(self) -> None:
        self.manager.call(self._unlisten())

    async def _listen(self) -> None:
        try:
            self.acceptor = await asyncssh.listen(
                self.info.host,
                self.info.port,
                server_factory=lambda: _Server(self),
                process_factory=self.handle,
                options=self.manager.options,
                reuse_address=True,
            )
        except OSError as exc:
            if exc.errno == 98:
                raise PortInUseError("launcher", self.launcher.name, self.info.host, self.info.port) from None
            raise

    async def _unlisten(self) -> None:
        acceptor, self.acceptor = self.acceptor, None
        if acceptor is not None:
            acceptor.close()

    async def handle(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        try:
            code = await self.run(process.command or "", process)
        except (BrokenPipeError, ConnectionError, asyncssh.Error):
            return
        process.exit(code)

    async def run(self, line: str, process: Any) -> int:
        def out(text: str) -> None:
            process.stdout.write(text.encode())

        def err(text: str) -> None:
            process.stderr.write(text.encode())

        segments = split_line(line)
        if len(segments) != 1 or not segments[0].argv:
            err("The syntax of the command is incorrect." + CRLF)
            return 1
        argv = segments[0].argv
        if program_name(argv[0]) != "powershell":
            err(f"'{argv[0]}' is not recognized as an internal or external command,{CRLF}")
            err("operable program or batch file." + CRLF)
            return 1
        try:
            script, verb, named = parse_args(argv)
        except _Usage as exc:
            err(f"launcher: {exc}{CRLF}")
            return USAGE
        if script.lower() != self.access.script.lower():
            err(f"The argument '{script}' to the -File parameter does not exist.{CRLF}")
            return 1
        try:
            lines = await asyncio.to_thread(self.answer, verb, named)
        except _Usage as exc:
            err(f"launcher: {exc}{CRLF}")
            return USAGE
        out("".join(json.dumps(o, separators=(",", ":")) + CRLF for o in lines))
        await process.stdout.drain()
        return 0

    def answer(self, verb: str, named: dict[str, str]) -> list[dict[str, Any]]:
        """The protocol's answer to one verb (runs in a worker thread: it calls the twin)."""
        now = self.manager.ctx.clock.now()
        j = self.journal
        if verb == "hello":
            return [
                {
                    "event": "hello",
                    "protocol": PROTOCOL,
                    "launcher": self.launcher.name,
                    "clock_ts": now,
                    "seq": j.seq,
                    # what `labctl launcher` says of itself too (labctl check prints it)
                    "labctl_version": __version__,
                    "connector": "simulated",
                    "sessions": j.live(),
                    "max_sessions": self.launcher.sessions,
                }
            ]
        if verb == "start":
            desktops = _list(named, "desktop")
            users = _list(named, "user")
            if len(desktops) != len(users):
                raise _Usage(f"{len(desktops)} desktops but {len(users)} users")
            return [j.start(d, u, now) for d, u in zip(desktops, users, strict=True)]
        if verb == "events":
            try:
                after = int(named.get("after", "0"))
            except ValueError:
                raise _Usage("-After takes a number") from None
            j.refresh(now)
            return [*j.after(after), {"event": "cursor", "seq": j.seq, "ts": now}]
        if verb == "logoff":
            return [e for sid in _list(named, "session") if (e := j.logoff(sid, now)) is not None]
        raise _Usage(f"unknown verb {verb!r} (hello, start, events, logoff)")


def _list(named: dict[str, str], key: str) -> list[str]:
    value = named.get(key)
    if not value:
        raise _Usage(f"-{key.capitalize()} is required")
    return [v for v in value.split(",") if v]


class _Server(asyncssh.SSHServer):
    def __init__(self, ep: LauncherEndpoint):
        self.ep = ep

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        expected = self.ep.manager.ctx.credential(self.ep.access.password)
        return (
            expected is not None and username.lower() == self.ep.access.user.lower() and password == expected
        )


class LauncherManager:
    """Every simulated launcher of a lab on one asyncio loop in a background thread."""

    def __init__(self, ctx: SimContext, twin: VdiTwin):
        self.ctx = ctx
        self.twin = twin
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.options: asyncssh.SSHServerConnectionOptions | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is not None:
                return self._loop
            self.options = server_options(load_or_create_host_keys(self.ctx.state_dir), SERVER_VERSION)
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="labctl-sim-launchers", daemon=True).start()
            ready.wait(CALL_TIMEOUT_S)
            self._loop = loop
            return loop

    def call(self, coro: Any) -> Any:
        loop = self._ensure_loop()
        return asyncio.run_coroutine_threadsafe(coro, loop).result(CALL_TIMEOUT_S)


def build_endpoints(ctx: SimContext) -> list[LauncherEndpoint]:
    """One endpoint per launcher the inventory gives an address and access; none without desktops."""
    vdi = ctx.lab.vdi
    if vdi is None or not isinstance(ctx.twin, VdiTwin):
        return []
    manager = LauncherManager(ctx, ctx.twin)
    return [LauncherEndpoint(manager, ln) for ln in vdi.launchers if ln.access is not None and ln.ip]
