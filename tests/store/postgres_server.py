"""A real PostgreSQL server for the tests, from the machine's own binaries.

``initdb`` into a fresh folder, ``pg_ctl start`` on a free loopback port with its unix socket in
that folder, and stop it by its postmaster's pid. Binaries: ``initdb`` on PATH, else
``/usr/lib/postgresql/15/bin`` (Debian's postgresql-15, which ``make install`` installs).
initdb refuses to run as root: as root the server runs as the ``postgres`` user in a folder it owns.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

DEBIAN_BIN = Path("/usr/lib/postgresql/15/bin")
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
USER = "labctl"


def pg_bin() -> Path | None:
    """The folder of initdb / pg_ctl, or None when PostgreSQL's server binaries are not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    return DEBIAN_BIN if (DEBIAN_BIN / "initdb").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _owner() -> tuple[int, int] | None:
    """(uid, gid) to run the server as: None for the current user, postgres's when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError as exc:
        raise RuntimeError(
            "running as root and there is no `postgres` user for initdb (apt-get install postgresql-15)"
        ) from exc
    return pw.pw_uid, pw.pw_gid


@contextlib.contextmanager
def postgres_server(base: Path) -> Iterator[str]:
    """Start a throwaway server under ``base``; yield its DSN; stop it (by pid) and remove it."""
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError(
            "PostgreSQL server binaries not found: initdb is neither on PATH nor in "
            f"{DEBIAN_BIN} (run `make install`, or apt-get install postgresql-15)"
        )
    owner = _owner()
    # as root, the server's user must reach its folder: pytest's tmp_path is private to root
    root = Path(tempfile.mkdtemp(prefix="labctl-pg-")) if owner else base / "pg"
    root.mkdir(parents=True, exist_ok=True)
    data, sock, log = root / "data", root / "sock", root / "server.log"
    sock.mkdir()
    if owner:
        for p in (root, sock):
            os.chown(p, *owner)
    kw: dict = {"user": owner[0], "group": owner[1]} if owner else {}
    port = _free_port()
    pid = None
    try:
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S,
            **kw,
        )
        opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        proc = subprocess.run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                opts,
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
            ],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S + 10,
            **kw,
        )
        pidfile = data / "postmaster.pid"
        if pidfile.exists():
            pid = int(pidfile.read_text().split()[0])
        if proc.returncode != 0:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({proc.returncode}): {proc.stderr.strip()} {tail}")
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if pid is not None:
            _stop(pid)
        shutil.rmtree(root, ignore_errors=True)


def _stop(pid: int) -> None:
    """Fast shutdown (SIGINT to the postmaster), then SIGQUIT, then SIGKILL, each with a deadline."""
    for sig, wait_s in ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGQUIT, 5), (signal.SIGKILL, 5)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
