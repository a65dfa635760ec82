"""Start govmomi's vcsim on a free loopback port for driver tests and benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from labctl.inventory.model import Tls, TlsMode, VCenter

VCSIM = Path(__file__).resolve().parents[2] / ".labctl" / "bin" / "vcsim"
GOVC = VCSIM.with_name("govc")


@dataclass(frozen=True)
class Vcsim:
    host: str
    port: int
    user: str
    password: str
    pid: int

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}/sdk"

    def vcenter(self, password_ref: str = "env:LABCTL_TEST_VC_PASSWORD", name: str = "vc-test") -> VCenter:
        return VCenter(
            name=name, url=self.url, user=self.user, password=password_ref, tls=Tls(mode=TlsMode.INSECURE)
        )

    def govc_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            GOVC_URL=self.url,
            GOVC_USERNAME=self.user,
            GOVC_PASSWORD=self.password,
            GOVC_INSECURE="1",
        )
        return env


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextmanager
def run_vcsim(
    *args: str, user: str = "labuser", password: str = "s3cret-vc", timeout_s: float = 20.0
) -> Iterator[Vcsim]:
    """vcsim with ``args`` (e.g. ``-vm 10``), listening on a free port; killed on exit."""
    if not VCSIM.exists():
        import pytest

        pytest.skip(f"vcsim not built at {VCSIM} (run `make install`)")
    host = "127.0.0.1"
    port = free_port(host)
    proc = subprocess.Popen(
        [str(VCSIM), "-l", f"{host}:{port}", "-username", user, "-password", password, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vcsim exited: {proc.stdout.read() if proc.stdout else ''}")
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("vcsim did not start listening in time") from None
                time.sleep(0.05)
        yield Vcsim(host, port, user, password, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
