"""Third-party servers the conformance tests start: a child process on loopback, stopped by its pid.

Each server is started from its installed executable (PyPI's sushy-emulator, Debian's ipmi_sim);
a test waits for it to answer before using it and stops exactly the process it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def executable(name: str, install: str) -> str:
    """The path of an installed executable: the venv's own first, then PATH; skip naming the
    install step when it is absent (``make install`` puts every one of them in place)."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: {install}")
    return found


@contextmanager
def started(
    argv: Sequence[str],
    *,
    ready: Callable[[], bool],
    log: Path,
    deadline_s: float = 20.0,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a child process (its own process group), until ``ready()`` is true; stopped by
    pid on exit (SIGTERM, then SIGKILL after 5 s)."""
    out = log.open("wb")
    proc = subprocess.Popen(
        list(argv),
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        start_new_session=True,
    )
    try:
        end = time.monotonic() + deadline_s
        while not ready():
            if proc.poll() is not None:
                pytest.fail(f"{argv[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}")
            if time.monotonic() > end:
                pytest.fail(f"{argv[0]} did not answer within {deadline_s:g} s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this test started, by its leader's pid
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        out.close()


def tcp_open(host: str, port: int) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    return probe
