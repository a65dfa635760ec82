"""A real RDP lab on this machine: xrdp serving desktops, `labctl launcher` with FreeRDP under Xvfb,
and `labctl workload` (the zipapp a desktop image would carry) started by each session's logon.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from labctl.workload import zipapp_build
from tests.realsessions.xrdp_server import XrdpServer, free_port, missing

SERVE_DEADLINE_S = 30.0
# Desktop users: four that run the workload, one whose logon script never starts it.
GOOD_USERS = ("lcrdp1", "lcrdp2", "lcrdp3", "lcrdp4")
SILENT_USER = "lcrdp5"
WRONG_PW_USER = "lcrdp6"
REFUSED_USER = "lcrdp7"


def _need_real_lab() -> None:
    why = missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the real RDP storm cannot run: {why}")  # CI must run it, never skip it
        pytest.skip(why)


@dataclass
class RdpLab:
    server: XrdpServer
    collector_port: int
    workdir: Path

    def launcher_config(self, name: str, **over: Any) -> Path:
        creds = self.workdir / f"{name}-users.yaml"
        passwords = {u.name: u.password for u in self.server.users}
        passwords[WRONG_PW_USER] = "not-" + passwords.get(WRONG_PW_USER, "x")
        passwords[REFUSED_USER] = "any"  # its desktop refuses the connection before any password
        creds.write_text(yaml.safe_dump(passwords))
        creds.chmod(0o600)
        cfg = {
            "name": name,
            "state_dir": str(self.workdir / name),
            "control": {"host": "127.0.0.1", "port": 0},
            "collector": {"bind": "127.0.0.1", "port": self.collector_port},
            "max_sessions": 30,
            "logon_timeout_s": 45,
            "logoff_timeout_s": 20,
            "credentials_file": str(creds),
            "connector": {
                "kind": "rdp",
                "server": "127.0.0.1",
                "port": self.server.port,
                "certificate": "ignore",
                "size": "800x600",
                # A desktop whose RDP server refuses connections: a loopback port nobody listens on.
                "addresses": {"refusing-desktop": f"127.0.0.1:{free_port()}"},
            },
            **over,
        }
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        return path


def _startwm(collector_port: int) -> str:
    return (
        'cd "$HOME"\n'
        f'exec /usr/bin/python3 "$HOME/labctl-workload.pyz" --report http://127.0.0.1:{collector_port} '
        "--profile task --max-ops 4\n"
    )


@pytest.fixture(scope="module")
def rdp_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RdpLab]:
    _need_real_lab()
    work = tmp_path_factory.mktemp("rdp")
    pyz = zipapp_build.build(work / "labctl-workload.pyz")
    collector_port = free_port()
    server = XrdpServer(work)
    try:
        server.start()
        for name in (*GOOD_USERS, WRONG_PW_USER):
            u = server.add_user(name, _startwm(collector_port))
            shutil.copy(pyz, u.home / pyz.name)
            shutil.chown(u.home / pyz.name, name, name)
        server.add_user(SILENT_USER, "sleep 600\n")  # logs on, never starts the workload
        yield RdpLab(server, collector_port, work)
    finally:
        server.stop()


def labctl(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labctl", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


class Daemon:
    def __init__(self, config: Path):
        self.config = config
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "labctl", "launcher", "--config", str(config), "serve"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # {"event": "serving", ...} once both servers listen
        if not line:
            raise RuntimeError(
                f"launcher did not start: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.serving = json.loads(line)

    def verb(self, *args: str) -> list[dict[str, Any]]:
        r = labctl("launcher", "--config", str(self.config), *args)
        assert r.returncode == 0, r.stderr
        return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def daemon_factory() -> Iterator[Any]:
    started: list[Daemon] = []

    def make(config: Path) -> Daemon:
        d = Daemon(config)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()


def poll_until(daemon: Daemon, done: Any, deadline_s: float) -> tuple[list[dict[str, Any]], int]:
    """Every journal line until ``done(lines)`` holds (cursor polling, as the controller does)."""
    lines: list[dict[str, Any]] = []
    cursor = 0
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        batch = daemon.verb("events", "-After", str(cursor))
        assert batch[-1]["event"] == "cursor"
        lines += batch[:-1]
        cursor = batch[-1]["seq"]
        if done(lines):
            return lines, cursor
        time.sleep(1.0)
    raise AssertionError(f"not done within {deadline_s} s; journal: {json.dumps(lines)[-3000:]}")
