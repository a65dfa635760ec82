"""The simulated SSH endpoints: one asyncssh listener per machine, all on one asyncio loop.

:class:`SshManager` owns a background thread running one event loop, the host keys, the file
registry and a watcher task; :class:`SshEndpoint` is the per-machine :class:`SimEndpoint` the
simulator host starts and stops. The loop starts with the first endpoint and ends with the last.

What a client sees (paramiko):
- **OS down** (the twin's ``is_os_up`` is false: off, booting, shutting down): the machine does
  not listen, so ``connect`` fails with *connection refused* (``NoValidConnectionsError``,
  errno ECONNREFUSED), as a booting Windows box whose TCP stack answers before sshd runs. The
  watcher polls the twin every 25 ms of wall time and opens or closes listeners; a connection
  that slips in between is reset (RST) before the SSH banner (paramiko: ``ConnectionResetError``,
  errno ECONNRESET). When the OS goes down, or the twin's boot count moves on, every open
  connection of that machine is closed under its sessions: no exit status, no SSH disconnect.
- **Auth**: password (``ctx.credential(machine.ssh.password)``) or a public key listed in
  ``ctx.state_dir/authorized_keys`` (re-read when it changes); user names compare
  case-insensitively, as on Windows. The ``ssh_refuse_auth`` fault makes every attempt fail
  (paramiko: ``AuthenticationException``).
- **Commands** (exec requests) run through :mod:`labctl.sim.ssh.dispatch`; output is CRLF text;
  the exit status is sent, then the channel closes. An interactive shell gets a cmd.exe-like
  prompt that runs one command per line until ``exit``.
- **ssh_drop_mid_command** (checked once per command): the TCP connection closes after the first
  non-blank line of stdout (for typeperf: after the header), or, for a copy, one lab second into
  the copy, or before the exit status for commands that print nothing. The client gets the
  output up to there, then EOF; ``recv_exit_status()`` returns -1.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import logging
import socket
import threading
from pathlib import Path
from typing import Any

import asyncssh
from asyncssh.packet import UInt32

from labctl.inventory.faults import FaultKind
from labctl.inventory.model import Machine
from labctl.sim.endpoint import EndpointInfo, PortInUseError, SimContext, check_address_free
from labctl.sim.ssh.dispatch import run_line
from labctl.sim.ssh.files import FileStore
from labctl.sim.ssh.hostkeys import load_or_create_host_keys, server_options, write_known_hosts
from labctl.sim.ssh.shell import CRLF, CommandDropped, MachineEnv, Shell

log = logging.getLogger(__name__)

SERVER_VERSION = "OpenSSH_for_Windows_7.7"
WATCH_INTERVAL_WALL_S = 0.025
CALL_TIMEOUT_S = 10.0
FLUSH_TIMEOUT_S = 0.5


class _AuthorizedKeys:
    """``state_dir/authorized_keys``, re-read when its mtime changes."""

    def __init__(self, path: Path):
        self.path = path
        self._mtime: float | None = None
        self._keys: set[bytes] = set()
        self._lock = threading.Lock()

    def contains(self, key: asyncssh.SSHKey) -> bool:
        with self._lock:
            try:
                mtime = self.path.stat().st_mtime_ns
            except OSError:
                self._mtime, self._keys = None, set()
                return False
            if mtime != self._mtime:
                self._keys = self._read()
                self._mtime = mtime
            return key.public_data in self._keys

    def _read(self) -> set[bytes]:
        keys: set[bytes] = set()
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return keys
        for line in lines:
            tokens = line.split()
            for i, tok in enumerate(tokens):  # skip any options before the key type
                if tok.startswith(("ssh-", "ecdsa-", "sk-")) and i + 1 < len(tokens):
                    with contextlib.suppress(asyncssh.KeyImportError, ValueError):
                        keys.add(asyncssh.import_public_key(f"{tok} {tokens[i + 1]}").public_data)
                    break
        return keys


class _Connection:
    """One accepted TCP connection: its asyncssh object and the command tasks running on it."""

    def __init__(self, conn: asyncssh.SSHServerConnection):
        self.conn = conn
        self.tasks: set[asyncio.Task[Any]] = set()
        self.dropped = False


class _Server(asyncssh.SSHServer):
    def __init__(self, ep: SshEndpoint):
        self.ep = ep
        self.record: _Connection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        ep = self.ep
        if not ep.manager.os_up(ep.machine.name):
            _reset(conn)  # the watcher has not closed the listener yet
            return
        self.record = _Connection(conn)
        ep.connections.add(self.record)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.record is None:
            return
        self.ep.connections.discard(self.record)
        current = asyncio.current_task()
        for t in self.record.tasks:
            if t is not current:
                t.cancel()

    def begin_auth(self, username: str) -> bool:
        return True

    def _user_ok(self, username: str) -> bool:
        ssh = self.ep.machine.ssh
        if ssh is None or username.lower() != ssh.user.lower():
            return False
        return not self.ep.manager.ctx.faults.active(FaultKind.SSH_REFUSE_AUTH, self.ep.machine.name)

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        ssh = self.ep.machine.ssh
        expected = self.ep.manager.ctx.credential(ssh.password if ssh else None)
        return expected is not None and self._user_ok(username) and password == expected

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return self._user_ok(username) and self.ep.manager.authorized_keys.contains(key)

    def kbdint_auth_supported(self) -> bool:
        return False


def _exit(process: asyncssh.SSHServerProcess[bytes], code: int) -> None:
    """Send the exit status and close the channel. Windows exit codes are 32 bits (e.g. 1116 from
    ``shutdown /a``) and Win32-OpenSSH sends them whole; asyncssh's ``exit()`` keeps only the low
    8 bits, as POSIX does, so larger codes go out through the channel's request sender."""
    code &= 0xFFFFFFFF
    chan = process.channel
    send = getattr(chan, "_send_request", None)
    if code <= 0xFF or send is None or chan.is_closing():
        process.exit(code)
        return
    send(b"exit-status", UInt32(code))
    chan.close()


def _reset(conn: asyncssh.SSHServerConnection) -> None:
    """Close with a TCP reset, before any byte of the SSH banner."""
    sock = conn.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    conn.abort()


class _ChannelIo:
    """The shell's view of one SSH session channel."""

    def __init__(
        self, ep: SshEndpoint, process: asyncssh.SSHServerProcess[bytes], record: _Connection | None
    ):
        self.ep = ep
        self.process = process
        self.record = record

    @property
    def alive(self) -> bool:
        if self.record is not None and self.record.dropped:
            return False
        return not self.process.channel.is_closing()

    async def write(self, data: str, *, stderr: bool = False) -> None:
        if not self.alive:
            raise CommandDropped
        writer = self.process.stderr if stderr else self.process.stdout
        try:
            writer.write(data.encode("utf-8"))
            await writer.drain()
        except (BrokenPipeError, ConnectionError, asyncssh.Error):
            raise CommandDropped from None

    async def drop(self) -> None:
        conn = self.process.get_extra_info("connection")
        await self.ep.manager.drop_connection(conn, self.record)


class SshEndpoint:
    """The SSH endpoint of one machine (a :class:`~labctl.sim.endpoint.SimEndpoint`)."""

    def __init__(self, manager: SshManager, machine: Machine):
        assert machine.ssh is not None and machine.ssh_host is not None
        self.manager = manager
        self.machine = machine
        self.info = EndpointInfo("ssh", machine.name, machine.ssh_host, machine.ssh.port, "ssh")
        self.env = MachineEnv(machine, manager.ctx, manager.files)
        self.acceptor: asyncssh.SSHAcceptor | None = None
        self.connections: set[_Connection] = set()
        self.boot_seen = 0
        self.started = False
        self.listen_failed = False

    @property
    def listening(self) -> bool:
        """Accepting connections now (false while the machine's OS is down)."""
        return self.acceptor is not None

    def start(self) -> None:
        self.manager.start_endpoint(self)

    def stop(self) -> None:
        self.manager.stop_endpoint(self)

    def __repr__(self) -> str:
        return f"SshEndpoint({self.machine.name} {self.info.host}:{self.info.port})"

    # --- sessions (run on the manager's loop) -------------------------------------------------
    async def handle(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        conn = process.get_extra_info("connection")
        owner = conn.get_owner() if conn is not None else None
        record = owner.record if isinstance(owner, _Server) else None
        task = asyncio.current_task()
        if record is not None and task is not None:
            record.tasks.add(task)
        io = _ChannelIo(self, process, record)
        try:
            if process.command is None:
                await self._interactive(process, io)
                return
            code = await self._run(io, process.command)
            await process.stdout.drain()
            _exit(process, code)
        except (CommandDropped, asyncio.CancelledError):
            pass
        except (BrokenPipeError, ConnectionError, asyncssh.Error):
            pass
        finally:
            if record is not None and task is not None:
                record.tasks.discard(task)

    async def _interactive(self, process: asyncssh.SSHServerProcess[bytes], io: _ChannelIo) -> None:
        home = self.manager.files.home(self.machine)
        os_name = self.machine.os.lower()
        if "xp" in os_name:
            banner = (
                "Microsoft Windows XP [Version 5.1.2600]" + CRLF + "(C) Copyright 1985-2001 Microsoft Corp."
            )
        else:
            banner = "Microsoft Windows [Version 5.2.3790]" + CRLF + "(C) Copyright 1985-2003 Microsoft Corp."
        prompt = f"{CRLF}{home}>"
        await io.write(banner + CRLF + prompt)
        while True:
            raw = await process.stdin.readline()
            if not raw:
                process.exit(0)
                return
            line = raw.decode("utf-8", "replace").strip()
            if process.term_type:
                await io.write(line + CRLF)  # the console echoes what was typed
            if line.lower() in ("exit", "exit /b"):
                process.exit(0)
                return
            if line:
                await self._run(io, line)
            await io.write(prompt)

    async def _run(self, io: _ChannelIo, line: str) -> int:
        """Run one command line; with ssh_drop_mid_command armed for it the connection drops
        (CommandDropped) even if the command printed nothing."""
        armed = self.manager.ctx.faults.active(FaultKind.SSH_DROP_MID_COMMAND, self.machine.name)
        sh = Shell(self.env, io, drop_armed=armed)
        code = await run_line(sh, line)
        if sh.drop_armed:
            await sh.drop()
        return code


class SshManager:
    """Runs every SSH endpoint of one simulated lab on one event loop in a background thread."""

    def __init__(self, ctx: SimContext, *, watch_interval_s: float = WATCH_INTERVAL_WALL_S):
        self.ctx = ctx
        self.watch_interval_s = watch_interval_s
        self.files = FileStore(ctx.lab, self._boot_count)
        self.authorized_keys = _AuthorizedKeys(ctx.state_dir / "authorized_keys")
        self.endpoints: dict[str, SshEndpoint] = {}
        for m in ctx.lab.machines.values():
            if m.ssh is not None and m.ssh_host:
                self.endpoints[m.name] = SshEndpoint(self, m)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._options: asyncssh.SSHServerConnectionOptions | None = None
        self._active = 0

    @property
    def running(self) -> bool:
        """The loop thread is alive (between the first start and the last stop)."""
        return self._thread is not None and self._thread.is_alive()

    # --- the twin, defensively ----------------------------------------------------------------
    def os_up(self, machine: str) -> bool:
        try:
            return bool(self.ctx.twin.is_os_up(machine))
        except Exception:
            log.exception("twin.is_os_up(%s) failed; treating the machine as down", machine)
            return False

    def _boot_count(self, machine: str) -> int:
        try:
            return int(self.ctx.twin.boot_count(machine))
        except Exception:
            return 0

    # --- loop thread ---------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            return self._loop
        keys = load_or_create_host_keys(self.ctx.state_dir)
        write_known_hosts(
            self.ctx.state_dir, [(e.info.host, e.info.port) for e in self.endpoints.values()], keys
        )
        self._options = server_options(keys, SERVER_VERSION)
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()
            # stopped: finish what is left, then close
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="labctl-sim-ssh", daemon=True)
        self._thread.start()
        ready.wait(CALL_TIMEOUT_S)
        self._loop = loop
        return loop

    def _call(self, coro: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        loop = self._loop
        assert loop is not None
        fut = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        self._watcher = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(CALL_TIMEOUT_S)

    # --- endpoints -----------------------------------------------------------------------------
    def start_endpoint(self, ep: SshEndpoint) -> None:
        with self._lock:
            if ep.started:
                return
            self._ensure_loop()
            try:
                self._call(self._start(ep))
            except BaseException:
                if self._active == 0:
                    self._stop_loop()
                raise
            ep.started = True
            self._active += 1

    def stop_endpoint(self, ep: SshEndpoint) -> None:
        with self._lock:
            if not ep.started or self._loop is None:
                return
            try:
                self._call(self._stop(ep))
            finally:
                ep.started = False
                self._active -= 1
                if self._active == 0:
                    self._stop_loop()

    def start_all(self) -> None:
        """Start every endpoint in one call (what the simulator host may prefer for 100+ boxes)."""
        with self._lock:
            todo = [ep for ep in self.endpoints.values() if not ep.started]
            if not todo:
                return
            self._ensure_loop()
            results = self._call(self._start_many(todo), timeout=CALL_TIMEOUT_S + len(todo) * 0.1)
            first_error: BaseException | None = None
            for ep, res in zip(todo, results, strict=True):
                if isinstance(res, BaseException):
                    first_error = first_error or res
                else:
                    ep.started = True
                    self._active += 1
            if first_error is not None:
                if self._active == 0:
                    self._stop_loop()
                raise first_error

    def stop_all(self) -> None:
        for ep in list(self.endpoints.values()):
            ep.stop()

    async def _start_many(self, eps: list[SshEndpoint]) -> list[Any]:
        return list(await asyncio.gather(*(self._start(ep) for ep in eps), return_exceptions=True))

    async def _start(self, ep: SshEndpoint) -> None:
        ep.boot_seen = self._boot_count(ep.machine.name)
        if self.os_up(ep.machine.name):
            await self._listen(ep, raise_in_use=True)
        else:
            # a box that is off does not listen, but its address must be free
            check_address_free("ssh", ep.machine.name, ep.info.host, ep.info.port)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _stop(self, ep: SshEndpoint) -> None:
        # mark first: the watcher skips endpoints that are no longer started
        ep.started = False
        await self._unlisten(ep)
        for t in list(ep.env.scheduled):
            t.cancel()
        if not any(e.started for e in self.endpoints.values() if e is not ep) and self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def _listen(self, ep: SshEndpoint, *, raise_in_use: bool = False) -> None:
        if ep.acceptor is not None:
            return
        try:
            ep.acceptor = await asyncssh.listen(
                ep.info.host,
                ep.info.port,
                server_factory=lambda: _Server(ep),
                process_factory=ep.handle,
                options=self._options,
                reuse_address=True,
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE and raise_in_use:
                raise PortInUseError("ssh", ep.machine.name, ep.info.host, ep.info.port) from None
            if raise_in_use:
                raise
            if not ep.listen_failed:  # the watcher retries every poll; say it once
                log.warning(
                    "ssh %s: cannot listen on %s:%s: %s (retrying)",
                    ep.machine.name,
                    ep.info.host,
                    ep.info.port,
                    exc,
                )
            ep.listen_failed = True
            return
        ep.listen_failed = False

    async def _unlisten(self, ep: SshEndpoint) -> None:
        acceptor, ep.acceptor = ep.acceptor, None
        if acceptor is not None:
            acceptor.close()
        for rec in list(ep.connections):
            await self.drop_connection(rec.conn, rec, flush=False)

    async def _watch(self) -> None:
        while True:
            for ep in list(self.endpoints.values()):
                if not ep.started:
                    continue
                name = ep.machine.name
                up = self.os_up(name)
                boots = self._boot_count(name)
                if boots != ep.boot_seen:
                    ep.boot_seen = boots
                    for rec in list(ep.connections):  # sessions of an earlier boot are gone
                        await self.drop_connection(rec.conn, rec, flush=False)
                if up and ep.acceptor is None:
                    await self._listen(ep)
                elif not up and (ep.acceptor is not None or ep.connections):
                    await self._unlisten(ep)
            await asyncio.sleep(self.watch_interval_s)

    async def drop_connection(
        self, conn: asyncssh.SSHServerConnection | None, record: _Connection | None, *, flush: bool = True
    ) -> None:
        """Close the TCP connection under the SSH session: what was written goes out first, then
        FIN; no SSH disconnect message, no exit status."""
        if record is not None:
            if record.dropped:
                return
            record.dropped = True
        if conn is None:
            return
        transport = getattr(conn, "_transport", None)  # asyncssh keeps the asyncio transport here
        if flush and transport is not None:
            deadline = asyncio.get_running_loop().time() + FLUSH_TIMEOUT_S
            while transport.get_write_buffer_size() and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.002)
        sock = conn.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        conn.abort()


def build_endpoints(ctx: SimContext) -> list[SshEndpoint]:
    """One SSH endpoint per machine that has ``ssh`` in the inventory, sharing one loop thread."""
    return list(SshManager(ctx).endpoints.values())
