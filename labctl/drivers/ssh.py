"""SSH to lab machines (paramiko): pooled connections, timeouts, quoting, clear errors.

Windows boxes run OpenSSH with ``cmd.exe`` as the remote shell, so every argument is quoted for
cmd (a machine name with a space or ``&`` stays one argument, never a second command); a POSIX
relay host gets POSIX quoting. One :class:`SshPool` is shared by a lab session: it keeps one
connection per (host, port, user), reuses it for every command, bounds how many connections are
open and how many commands run at once, and closes idle connections past its cap.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import paramiko

from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import HostKeyPolicy, Machine, SshAccess


class Shell(StrEnum):
    CMD = "cmd"  # Windows OpenSSH default shell
    POSIX = "posix"


# --- quoting -------------------------------------------------------------------------------------

_CMD_SAFE = re.compile(r"^[A-Za-z0-9_\-.:/\\=@,+]+$")
_CMD_FORBIDDEN = ('"', "\r", "\n", "\0")


def cmd_quote(arg: str) -> str:
    """Quote one argument for ``cmd.exe /c`` and the MSVC argument parser behind it.

    Inside double quotes cmd takes ``& | < > ^ ( )`` and spaces literally, so wrapping is enough
    for them. A trailing backslash is doubled so it does not escape the closing quote. A double
    quote, CR, LF or NUL inside an argument cannot be carried through cmd safely and is refused.
    ``%NAME%`` is left alone (typeperf counter paths need a literal ``%``); cmd only expands it
    when NAME is a defined variable.
    """
    if arg and _CMD_SAFE.match(arg):
        return arg
    for ch in _CMD_FORBIDDEN:
        if ch in arg:
            raise ValueError(f"argument {arg!r} holds {ch!r}, which cannot be passed safely through cmd.exe")
    trailing = len(arg) - len(arg.rstrip("\\"))
    return '"' + arg + "\\" * trailing + '"'


def join_command(argv: Sequence[str], shell: Shell = Shell.CMD) -> str:
    """One command line for the remote shell from a list of arguments."""
    if not argv:
        raise ValueError("empty command")
    if shell is Shell.POSIX:
        return shlex.join(argv)
    return " ".join(cmd_quote(a) for a in argv)


# --- targets and results -------------------------------------------------------------------------


@dataclass(frozen=True)
class SshTarget:
    """Where and how to log in; credentials are references, resolved at connect time."""

    name: str  # the machine, for messages
    host: str
    port: int
    user: str
    password_ref: str | None = None
    key_file_ref: str | None = None
    host_key_policy: HostKeyPolicy = HostKeyPolicy.STRICT
    known_hosts: str | None = None
    shell: Shell = Shell.CMD

    @classmethod
    def for_machine(cls, machine: Machine) -> SshTarget:
        ssh: SshAccess | None = machine.ssh
        host = machine.ssh_host
        if ssh is None or host is None:
            raise EndpointError(
                machine.name,
                "ssh",
                "the inventory gives no ssh access",
                "add ssh: {user: ..., password: ...}",
            )
        shell = Shell.CMD if ("windows" in machine.os.lower() or not machine.os) else Shell.POSIX
        return cls(
            name=machine.name,
            host=host,
            port=ssh.port,
            user=ssh.user,
            password_ref=ssh.password,
            key_file_ref=ssh.key_file,
            host_key_policy=ssh.host_key_policy,
            known_hosts=ssh.known_hosts,
            shell=shell,
        )

    @property
    def endpoint(self) -> str:
        return f"{self.name} (ssh {self.user}@{self.host}:{self.port})"

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.host, self.port, self.user)


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_status: int
    stdout: str
    stderr: str
    duration_s: float
    dropped: bool = False  # the connection closed before an exit status (expected for shutdown)

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.dropped


class SshError(EndpointError):
    """An SSH failure; ``kind`` is one of refused, unreachable, auth, hostkey, dropped, timeout, exit."""

    def __init__(self, endpoint: str, action: str, reason: str, fix: str = "", kind: str = "error"):
        super().__init__(endpoint, action, reason, fix)
        self.kind = kind


class SshTimeout(SshError, EndpointTimeout):
    """An SSH step that did not finish in time (an :class:`SshError` of kind ``timeout``)."""

    def __init__(self, endpoint: str, action: str, reason: str, fix: str = ""):
        super().__init__(endpoint, action, reason, fix, kind="timeout")


def close_channel(chan: paramiko.Channel) -> None:
    """Close a channel whose transport may already be dead.

    paramiko sends a close message, which raises EOFError or OSError when the socket went away
    under a live-looking transport (a machine that just rebooted): the command's own outcome has
    been decided by then, and such an exception must not replace it (it surfaced as a bare EOFError
    that broke two cells).
    """
    try:
        chan.close()
    except (paramiko.SSHException, EOFError, OSError):
        pass


# --- host keys -----------------------------------------------------------------------------------


class _AcceptNewPolicy(paramiko.MissingHostKeyPolicy):
    """Trust on first use: remember an unknown key in known_hosts; a changed key still fails."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        with self._lock:
            client.get_host_keys().add(hostname, key.get_name(), key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as fh:
                fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def _known_hosts_path(target: SshTarget) -> Path:
    return (
        Path(target.known_hosts).expanduser()
        if target.known_hosts
        else Path("~/.ssh/known_hosts").expanduser()
    )


# --- the pool ------------------------------------------------------------------------------------


class _Conn:
    def __init__(self, client: paramiko.SSHClient):
        self.client = client
        self.users = 0
        self.last_used = time.monotonic()

    @property
    def alive(self) -> bool:
        t = self.client.get_transport()
        return t is not None and t.is_active()


class SshPool:
    """Connections reused per (host, port, user), bounded in number, with timeouts everywhere."""

    def __init__(
        self,
        *,
        max_connections: int = 256,
        max_parallel: int = 64,
        connect_timeout_s: float = 10.0,
        command_timeout_s: float = 120.0,
    ):
        self.max_connections = max_connections
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        self._parallel = threading.BoundedSemaphore(max_parallel)
        self._lock = threading.Lock()
        self._conns: OrderedDict[tuple[str, int, str], _Conn] = OrderedDict()
        self._connecting: dict[tuple[str, int, str], threading.Lock] = {}

    # -- connections --
    def _connect(self, target: SshTarget, action: str) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        policy = target.host_key_policy
        if policy is HostKeyPolicy.INSECURE:
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        else:
            path = _known_hosts_path(target)
            if policy is HostKeyPolicy.STRICT and not target.known_hosts:
                try:
                    client.load_system_host_keys()
                except OSError:
                    pass
            elif path.exists():
                try:
                    client.get_host_keys().load(str(path))
                except OSError:
                    pass
            client.set_missing_host_key_policy(
                _AcceptNewPolicy(path) if policy is HostKeyPolicy.ACCEPT_NEW else paramiko.RejectPolicy()
            )
        password = resolve_credential(target.password_ref, target.endpoint) if target.password_ref else None
        key_file = resolve_credential(target.key_file_ref, target.endpoint) if target.key_file_ref else None
        t0 = time.monotonic()
        try:
            client.connect(
                target.host,
                port=target.port,
                username=target.user,
                password=password,
                key_filename=key_file,
                timeout=self.connect_timeout_s,
                banner_timeout=self.connect_timeout_s,
                auth_timeout=self.connect_timeout_s,
                channel_timeout=self.connect_timeout_s,
                allow_agent=password is None and key_file is None,
                look_for_keys=password is None and key_file is None,
            )
        except paramiko.AuthenticationException:
            client.close()
            what = target.password_ref or target.key_file_ref or "your SSH agent/keys"
            raise SshError(
                target.endpoint,
                action,
                f"authentication failed for user {target.user!r}",
                f"check the credential {what} and the user name in the inventory",
                kind="auth",
            ) from None
        except paramiko.BadHostKeyException:
            client.close()
            raise SshError(
                target.endpoint,
                action,
                "the host key differs from the one in known_hosts (possible man-in-the-middle, or a reinstalled machine)",
                f"verify the machine, then remove its old entry: ssh-keygen -R {target.host}",
                kind="hostkey",
            ) from None
        except paramiko.ssh_exception.NoValidConnectionsError as exc:
            client.close()
            raise SshError(
                target.endpoint,
                action,
                f"connection refused ({exc.strerror or 'no SSH server listening'})",
                "is the machine powered on and booted, and its SSH server running on that port?",
                kind="refused",
            ) from None
        except TimeoutError:
            client.close()
            raise SshTimeout(
                target.endpoint,
                action,
                f"no answer within {self.connect_timeout_s:g} s",
                "check the address and that the machine is on the network",
            ) from None
        except EOFError:
            client.close()
            raise SshError(
                target.endpoint,
                action,
                "the connection closed during the SSH handshake",
                "is the machine shutting down, or its SSH server restarting? retry once it is up",
                kind="dropped",
            ) from None
        except paramiko.SSHException as exc:
            client.close()
            msg = str(exc)
            if time.monotonic() - t0 >= self.connect_timeout_s * 0.9:
                raise SshTimeout(
                    target.endpoint,
                    action,
                    f"no SSH banner within {self.connect_timeout_s:g} s (the port accepts connections but "
                    "nothing answers as an SSH server)",
                    "check the SSH service on the machine; it may be hung",
                ) from None
            if "not found in known_hosts" in msg or ("Server " in msg and "not found" in msg):
                raise SshError(
                    target.endpoint,
                    action,
                    "its host key is not in known_hosts and the host-key policy is strict",
                    f"add it (ssh-keyscan -p {target.port} {target.host} >> ~/.ssh/known_hosts) or set "
                    "host_key_policy: accept-new in the inventory",
                    kind="hostkey",
                ) from None
            raise SshError(
                target.endpoint,
                action,
                f"SSH handshake failed: {msg or type(exc).__name__}",
                "is an SSH server listening on that port?",
                kind="dropped",
            ) from None
        except OSError as exc:
            client.close()
            kind = "refused" if isinstance(exc, ConnectionRefusedError) else "unreachable"
            raise SshError(
                target.endpoint,
                action,
                f"cannot connect: {exc.strerror or exc}",
                "is the machine powered on and on the network?",
                kind=kind,
            ) from None
        return client

    def _reuse_locked(self, key: tuple[str, int, str]) -> _Conn | None:
        """The live cached connection for ``key``, taken by one more user (most recently used)."""
        conn = self._conns.get(key)
        if conn is None or not conn.alive:
            return None
        conn.users += 1
        conn.last_used = time.monotonic()
        self._conns.move_to_end(key)
        return conn

    def _acquire(self, target: SshTarget, action: str) -> _Conn:
        key = target.key
        with self._lock:
            conn = self._reuse_locked(key)
            if conn is not None:
                return conn
            lock = self._connecting.setdefault(key, threading.Lock())
        with lock:  # one handshake per host at a time; a second caller reuses its result
            with self._lock:
                reused = self._reuse_locked(key)
                if reused is not None:
                    return reused
                conn = self._conns.get(key)
                if conn is not None:
                    conn.client.close()
                    del self._conns[key]
            client = self._connect(target, action)
            with self._lock:
                conn = _Conn(client)
                conn.users = 1
                self._conns[key] = conn
                self._evict_locked()
                return conn

    def _evict_locked(self) -> None:
        while len(self._conns) > self.max_connections:
            for key, conn in self._conns.items():
                if conn.users == 0:
                    conn.client.close()
                    del self._conns[key]
                    break
            else:
                return  # all busy: allow the overshoot until one is released

    def _release(self, target: SshTarget, conn: _Conn, broken: bool) -> None:
        with self._lock:
            conn.users -= 1
            conn.last_used = time.monotonic()
            if broken or not conn.alive:
                if self._conns.get(target.key) is conn:
                    del self._conns[target.key]
                if conn.users <= 0:
                    conn.client.close()
            else:
                self._evict_locked()

    def stream(
        self,
        target: SshTarget,
        argv: Sequence[str] | str,
        *,
        idle_timeout_s: float = 60.0,
        action: str | None = None,
    ) -> SshStream:
        """Start a long-running command and read its output line by line."""
        command = argv if isinstance(argv, str) else join_command(argv, target.shell)
        return SshStream(self, target, command, idle_timeout_s, action or f"stream {command[:60]}")

    def forget(self, target: SshTarget) -> None:
        """Drop a cached connection (e.g. after the machine rebooted)."""
        with self._lock:
            conn = self._conns.pop(target.key, None)
        if conn is not None:
            conn.client.close()

    def close(self) -> None:
        with self._lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for c in conns:
            c.client.close()

    def __enter__(self) -> SshPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands --
    def run(
        self,
        target: SshTarget,
        argv: Sequence[str] | str,
        *,
        timeout_s: float | None = None,
        action: str | None = None,
        expect_drop: bool = False,
        check: bool = False,
    ) -> CommandResult:
        """Run one command. ``argv`` is a list (quoted here for the target's shell) or a ready line.

        ``expect_drop``: the command takes the connection down (shutdown, reboot); a drop is then
        a success with ``dropped=True``. Otherwise a drop raises. ``check`` raises on a non-zero
        exit status with the command's stderr in the reason.
        """
        command = argv if isinstance(argv, str) else join_command(argv, target.shell)
        action = action or f"run {command[:60]}"
        timeout = self.command_timeout_s if timeout_s is None else timeout_s
        with self._parallel:
            conn = self._acquire(target, action)
            broken = False
            try:
                result = self._exec(conn, target, command, timeout, action, expect_drop)
                broken = result.dropped
            except SshError:
                broken = True
                raise
            finally:
                self._release(target, conn, broken)
        if check and not result.ok and not (expect_drop and result.dropped):
            err = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise SshError(
                target.endpoint,
                action,
                f"exit status {result.exit_status}: {err[-1] if err else 'no output'}",
                "check the command exists on the machine and its arguments",
                kind="exit",
            )
        return result

    def _exec(
        self, conn: _Conn, target: SshTarget, command: str, timeout: float, action: str, expect_drop: bool
    ) -> CommandResult:
        start = time.monotonic()
        deadline = start + timeout
        transport = conn.client.get_transport()
        if transport is None or not transport.is_active():
            raise SshError(target.endpoint, action, "the connection was closed", "retry", kind="dropped")
        try:
            chan = transport.open_session(timeout=min(timeout, self.connect_timeout_s))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if expect_drop:
                return CommandResult(command, -1, "", "", time.monotonic() - start, dropped=True)
            raise SshError(
                target.endpoint,
                action,
                f"cannot open a channel: {exc or type(exc).__name__}",
                "retry",
                kind="dropped",
            ) from None
        out, err = bytearray(), bytearray()
        stdout_eof = False
        try:
            chan.exec_command(command)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SshTimeout(
                        target.endpoint,
                        action,
                        f"the command did not finish within {timeout:g} s",
                        "raise the timeout, or check the machine is not hung",
                    )
                if not stdout_eof:
                    chan.settimeout(min(0.2, remaining))
                    try:
                        data = chan.recv(65536)
                    except TimeoutError:
                        data = None
                    if data == b"":
                        stdout_eof = True
                    elif data:
                        out += data
                _drain_stderr(chan, err)
                # exit-status (or the channel closing without one) ends the command
                if stdout_eof and chan.status_event.wait(min(0.2, max(0.0, remaining))):
                    _drain_stderr(chan, err)
                    break
        except SshTimeout:
            raise
        except (paramiko.SSHException, EOFError, OSError):
            return self._dropped(target, command, action, start, out, err, expect_drop)
        finally:
            close_channel(chan)
        status = chan.exit_status
        if status == -1:
            return self._dropped(target, command, action, start, out, err, expect_drop)
        return CommandResult(
            command,
            status,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            time.monotonic() - start,
        )

    def _dropped(
        self,
        target: SshTarget,
        command: str,
        action: str,
        start: float,
        out: bytearray,
        err: bytearray,
        expect_drop: bool,
    ) -> CommandResult:
        if expect_drop:
            return CommandResult(
                command,
                -1,
                out.decode("utf-8", "replace"),
                err.decode("utf-8", "replace"),
                time.monotonic() - start,
                dropped=True,
            )
        raise SshError(
            target.endpoint,
            action,
            "the connection dropped before the command finished (no exit status)",
            "the machine may have rebooted or lost its network; check it and retry",
            kind="dropped",
        )


def _drain_stderr(chan: paramiko.Channel, err: bytearray) -> None:
    """Append whatever stderr the channel holds now to ``err``, without waiting."""
    while chan.recv_stderr_ready():
        data = chan.recv_stderr(65536)
        if not data:
            break
        err += data


class SshStream:
    """A long-running command whose stdout is read line by line (``typeperf`` without ``-sc``).

    Iterate :meth:`lines`; :meth:`close` (from any thread) ends the command by closing the
    channel. A connection that drops mid-stream raises :class:`SshError` (kind ``dropped``);
    ``idle_timeout_s`` without a line raises :class:`SshTimeout`.
    """

    def __init__(self, pool: SshPool, target: SshTarget, command: str, idle_timeout_s: float, action: str):
        self.pool = pool
        self.target = target
        self.command = command
        self.idle_timeout_s = idle_timeout_s
        self.action = action
        self._closed = threading.Event()
        self._conn = pool._acquire(target, action)
        transport = self._conn.client.get_transport()
        try:
            if transport is None:
                raise paramiko.SSHException("no transport")
            self._chan = transport.open_session(timeout=pool.connect_timeout_s)
            self._chan.exec_command(command)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            pool._release(target, self._conn, True)
            raise SshError(
                target.endpoint,
                action,
                f"cannot start the command: {exc or type(exc).__name__}",
                "retry",
                kind="dropped",
            ) from None
        self.exit_status: int | None = None
        self._dropped = False

    def lines(self) -> Iterator[str]:
        buf = b""
        last = time.monotonic()
        try:
            while not self._closed.is_set():
                self._chan.settimeout(0.2)
                try:
                    data = self._chan.recv(65536)
                except TimeoutError:
                    if time.monotonic() - last > self.idle_timeout_s:
                        raise SshTimeout(
                            self.target.endpoint,
                            self.action,
                            f"no output for {self.idle_timeout_s:g} s",
                            "check the machine is not hung",
                        ) from None
                    continue
                except (paramiko.SSHException, EOFError, OSError):
                    data = b""
                if not data:
                    break
                last = time.monotonic()
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    yield line.decode("utf-8", "replace").rstrip("\r")
            if buf and not self._closed.is_set():
                yield buf.decode("utf-8", "replace").rstrip("\r")
            if self._closed.is_set():
                return
            self._chan.status_event.wait(1.0)
            if self._chan.exit_status == -1:
                self._dropped = True
                raise SshError(
                    self.target.endpoint,
                    self.action,
                    "the connection dropped before the command finished (no exit status)",
                    "the machine may have rebooted or lost its network",
                    kind="dropped",
                )
            self.exit_status = self._chan.exit_status
        finally:
            self.close()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        close_channel(self._chan)
        self.pool._release(self.target, self._conn, self._dropped)
