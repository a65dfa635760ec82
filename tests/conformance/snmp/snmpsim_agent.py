"""snmpsim (PyPI) serving .snmprec recordings on loopback, in a process of its own, stopped by pid."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

START_DEADLINE_S = 30.0


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int, community: str) -> bool:
    """One raw SNMPv2c GET of sysUpTime.0: any answer means the agent is up."""
    # a fixed GetRequest PDU for 1.3.6.1.2.1.1.3.0 with this community (BER, request id 1)
    oid = bytes([0x06, 0x08, 0x2B, 0x06, 0x01, 0x02, 0x01, 0x01, 0x03, 0x00])
    varbind = bytes([0x30, len(oid) + 2]) + oid + bytes([0x05, 0x00])
    varbinds = bytes([0x30, len(varbind)]) + varbind
    pdu_body = bytes([0x02, 0x01, 0x01, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00]) + varbinds
    pdu = bytes([0xA0, len(pdu_body)]) + pdu_body
    comm = community.encode()
    msg_body = bytes([0x02, 0x01, 0x01, 0x04, len(comm)]) + comm + pdu
    msg = bytes([0x30, len(msg_body)]) + msg_body
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.5)
        s.sendto(msg, ("127.0.0.1", port))
        try:
            s.recvfrom(4096)
            return True
        except OSError:
            return False


class Snmpsim:
    """``snmpsim-command-responder`` over a data directory; each file's stem is a community."""

    def __init__(self, work: Path, recordings: dict[str, str]):
        self.port = free_udp_port()
        self.data = work / "data"
        self.cache = work / "cache"
        self.data.mkdir(parents=True)
        self.cache.mkdir()
        for community, text in recordings.items():
            (self.data / f"{community}.snmprec").write_text(text)
        self.first = next(iter(recordings))
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Snmpsim:
        exe = shutil.which("snmpsim-command-responder", path=str(Path(sys.executable).parent))
        if exe is None:
            pytest.fail("snmpsim is not installed: run `make install` (pyproject dev extras)")
        argv = [
            exe,
            f"--data-dir={self.data}",
            f"--cache-dir={self.cache}",
            f"--agent-udpv4-endpoint=127.0.0.1:{self.port}",
            "--logging-method=stderr",
            "--log-level=error",
        ]
        # As root (CI) snmpsim drops to another user unless told not to; that user could not read
        # this interpreter's files. It binds a loopback port above 1024 and needs no privileges.
        env = {**os.environ, "SNMPSIM_ALLOW_ROOT": "true"}
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                pytest.fail(f"snmpsim exited {self.proc.returncode}: {err[-500:]}")
            if _answers(self.port, self.first):
                return self
            time.sleep(0.2)
        self.__exit__()
        pytest.fail(f"snmpsim did not answer on 127.0.0.1:{self.port} within {START_DEADLINE_S:g} s")

    def __exit__(self, *exc: object) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, 15)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, 9)
                proc.wait(timeout=10)
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()
