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
from tests.realsessions.xrdp_server import XrdpServer, _wait_port, free_port, missing

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


SSHD = "/usr/sbin/sshd"
# The launcher machine's own loopback address (labctl run refuses a launcher sharing one with vCenter or a desktop).
LAUNCHER_IP = "127.0.0.2"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """OpenSSH's sshd on a loopback port, taking one client key for this user."""
    if not Path(SSHD).exists():
        pytest.fail(
            "OpenSSH's sshd is not installed (make install installs Debian's openssh-server)"
        ) if os.environ.get("CI") == "true" else pytest.skip("sshd not installed")
    d = tmp_path_factory.mktemp("sshd")
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True, timeout=30
        )
    shutil.copy(d / "client.pub", d / "authorized_keys")
    os.chmod(d / "authorized_keys", 0o600)
    port = free_port()  # free on 127.0.0.1; sshd binds it on LAUNCHER_IP (nothing else binds there)
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress {LAUNCHER_IP}\nHostKey {d / 'host'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPermitRootLogin prohibit-password\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, LAUNCHER_IP, 15, proc)
        yield port, d / "client"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def lab_file(
    tmp: Path,
    ssh_port: int,
    launcher_cfg: Path,
    vcenter: str = "{name: vc-01, url: 'https://127.0.0.1:1/sdk', user: administrator@vsphere.local, password: 'env:LABCTL_TEST_NO_VC'}",
) -> Path:
    """A VDI lab file: desktops desk1-4 (the xrdp server on loopback), one launcher reached over
    the sshd fixture, ``vcenter`` its vCenter (an inventory entry, flow style). Its array is not
    reachable: plans on it record only the sources they name (session_storm's record_sources)."""
    script = f"env PYTHONPATH={REPO} {sys.executable} -m labctl launcher --config {launcher_cfg}"
    access = (
        f"{{user: {os.environ.get('USER', 'root')}, key_file: 'env:LABCTL_TEST_LAUNCHER_KEY', port: {ssh_port},"
        f" host_key_policy: accept-new, known_hosts: '{tmp / 'known_hosts'}', script: '{script}'}}"
    )
    text = f"""
lab: {{name: rdp-loopback, time_scale: 1}}
networks:
  - {{name: net, subnet: 127.0.0.0/8, broadcast: 127.255.255.255, speed_gbps: 10}}
vcenters:
  - {vcenter}
storage:
  - {{name: arr-1, kind: unity, url: 'https://127.0.3.1:2', user: admin, password: 'env:LABCTL_TEST_NO_ARRAY'}}
vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: esx-01, sockets: 1, cores: 2, ghz: 2.0, ram_gb: 8, nics: {{count: 1, speed_gbps: 1}}, ip: 127.0.2.1}}
  arrays:
    - {{array: arr-1, model: test, cache_gb: 2, ports: {{count: 2, speed_gbps: 10}}, tiers: [{{drive: ssd, count: 4, capacity_gb: 400, raid: 10}}]}}
  datastores:
    - {{name: ds-1, array: arr-1, capacity_gb: 500}}
  pools:
    - {{name: pool, desktops: "desk[1-4]", cluster: vdi, datastores: [ds-1], vcpus: 1, ram_gb: 1, workload: task, ip: 127.0.1.1,
       provisioning: {{kind: full_clone}}}}
  launchers:
    - {{name: launcher-ssh, sessions: 4, pool: pool, ip: {LAUNCHER_IP}, access: {access}}}
"""
    path = tmp / "rdp-lab.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def vcsim() -> Iterator[Any]:
    """govmomi's vcsim (third-party, .labctl/bin/vcsim) on a free loopback port: the lab's vCenter
    (its default inventory's hosts are what the storm records); stopped by pid."""
    from tests.drivers.vcsim import VCSIM, run_vcsim

    if not VCSIM.exists() and os.environ.get("CI") == "true":
        pytest.fail(f"vcsim not built at {VCSIM} (make install builds it)")
    with run_vcsim() as vc:
        yield vc
