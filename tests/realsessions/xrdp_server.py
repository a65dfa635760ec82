"""A real RDP server for the tests: Debian's xrdp + xrdp-sesman serving Xvnc desktops on loopback.

The desktop users are real local accounts (xrdp authenticates through PAM), created for the test
run with a random password and removed after it. Each user's session runs the user's own
``~/startwm.sh`` (sesman's ``UserWindowManager``), which the tests write: it starts the in-session
workload, so the session counts as logged on only when the workload reports in.

Servers are started with ``--nodaemon`` and stopped by pid. xrdp keeps its pid files and sockets in
the compiled-in ``/run/xrdp``; sesman listens on loopback port 3350 (where xrdp looks for it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

XRDP = "/usr/sbin/xrdp"
SESMAN = "/usr/sbin/xrdp-sesman"
XVNC = "/usr/bin/Xvnc"
START_DEADLINE_S = 15.0


def missing() -> str:
    """Why a real RDP storm cannot run here ('' when it can)."""
    for tool in (XRDP, SESMAN, XVNC, "/usr/bin/xfreerdp", "/usr/bin/Xvfb", "/usr/bin/python3"):
        if not Path(tool).exists():
            return (
                f"{tool} is not installed (make install installs Debian's xrdp, tigervnc, freerdp2-x11, xvfb)"
            )
    if os.geteuid() != 0:
        return "creating the desktop users (useradd) and starting xrdp-sesman needs root"
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, host: str, deadline_s: float, proc: subprocess.Popen[bytes]) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening on {port}")
        for h in (host, "::1") if host == "localhost" else (host,):
            with contextlib.suppress(OSError), socket.create_connection((h, port), timeout=0.5):
                return
        time.sleep(0.1)
    raise RuntimeError(f"{proc.args[0]} did not listen on {host}:{port} within {deadline_s} s")


MACHINE_LOCK = Path(tempfile.gettempdir()) / "labctl-xrdp-machine.lock"
MACHINE_WAIT_S = 900.0  # another test session's realsessions suite takes a few minutes


@dataclass
class DesktopUser:
    name: str
    password: str
    home: Path


@dataclass
class XrdpServer:
    """xrdp on ``127.0.0.1:port``; users created by :meth:`add_user`."""

    workdir: Path
    port: int = 0
    users: list[DesktopUser] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    max_sessions: int = 50
    _machine: IO[bytes] | None = field(default=None, repr=False)  # the lock below, while held

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _configs(self) -> tuple[Path, Path]:
        xrdp_ini = (Path("/etc/xrdp/xrdp.ini")).read_text()
        out = []
        for line in xrdp_ini.splitlines():
            if line.startswith("port=") and "3389" in line and "ask" not in line:
                line = f"port=tcp://127.0.0.1:{self.port}"
            elif line.startswith("autorun="):
                line = "autorun=Xvnc"  # log straight on with the client's credentials
            elif line.startswith("LogFile="):
                line = f"LogFile={self.workdir / 'xrdp.log'}"
            elif line.startswith("EnableSyslog="):
                line = "EnableSyslog=false"
            out.append(line)
        xrdp = self.workdir / "xrdp.ini"
        xrdp.write_text("\n".join(out) + "\n")
        ses = []
        for line in Path("/etc/xrdp/sesman.ini").read_text().splitlines():
            if line.startswith("LogFile="):
                line = f"LogFile={self.workdir / 'sesman.log'}"
            elif line.startswith("EnableSyslog="):
                line = "EnableSyslog=false"
            elif line.startswith("MaxSessions="):
                line = f"MaxSessions={self.max_sessions}"
            elif line.startswith("KillDisconnected="):
                line = "KillDisconnected=true"  # a client that goes away ends its session
            elif line.startswith("DisconnectedTimeLimit="):
                line = "DisconnectedTimeLimit=5"
            ses.append(line)
        sesman = self.workdir / "sesman.ini"
        sesman.write_text("\n".join(ses) + "\n")
        return xrdp, sesman

    def _take_the_machine(self, deadline_s: float = MACHINE_WAIT_S) -> None:
        """One xrdp per machine at a time, across processes (test sessions, xdist workers, the
        benchmark): xrdp always reaches its sesman on port 3350, a second sesman cannot bind it,
        and the desktop users' fixed names are removed and re-created by whoever starts next."""
        fh = MACHINE_LOCK.open("ab")
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._machine = fh
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    fh.close()
                    raise RuntimeError(
                        f"another xrdp on this machine held {MACHINE_LOCK} for {deadline_s:.0f} s"
                    ) from None
                time.sleep(0.5)

    def start(self) -> None:
        if self._machine is None:
            self._take_the_machine()
        self.port = self.port or free_port()
        xrdp_ini, sesman_ini = self._configs()
        Path("/run/xrdp/sockdir").mkdir(parents=True, exist_ok=True)
        os.chmod("/run/xrdp/sockdir", 0o1777)
        for pidfile in ("/run/xrdp/xrdp.pid", "/run/xrdp/xrdp-sesman.pid"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pidfile)  # a stale pid file stops --nodaemon from starting
        sesman = subprocess.Popen(
            [SESMAN, "--nodaemon", "--config", str(sesman_ini)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(sesman)
        _wait_port(3350, "localhost", START_DEADLINE_S, sesman)
        xrdp = subprocess.Popen(
            [XRDP, "--nodaemon", "--config", str(xrdp_ini)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(xrdp)
        _wait_port(self.port, "127.0.0.1", START_DEADLINE_S, xrdp)

    def add_user(self, name: str, startwm: str) -> DesktopUser:
        """A local account whose RDP session runs ``startwm`` (a shell script's body)."""
        password = secrets.token_urlsafe(12)
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            self._remove_user(name)
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, timeout=30)
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n".encode(), check=True, timeout=30)
        home = Path(pwd.getpwnam(name).pw_dir)
        script = home / "startwm.sh"
        script.write_text("#!/bin/sh\n" + startwm)
        script.chmod(0o755)
        shutil.chown(script, name, name)
        user = DesktopUser(name, password, home)
        self.users.append(user)
        return user

    def _remove_user(self, name: str) -> None:
        subprocess.run(["pkill", "-KILL", "-u", name], check=False, timeout=10)
        subprocess.run(["userdel", "--remove", name], check=False, timeout=30, capture_output=True)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
        self.procs.clear()
        for u in self.users:
            self._remove_user(u.name)
        self.users.clear()
        if self._machine is not None:
            self._machine.close()  # releases the lock
            self._machine = None


@contextlib.contextmanager
def running(workdir: Path) -> Iterator[XrdpServer]:
    server = XrdpServer(workdir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
