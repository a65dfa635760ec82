"""The controller's side of a real storm: the lab's launchers (labctl.lab.launchers) reach
`labctl launcher` over a real OpenSSH server, start real RDP sessions on xrdp and read back their
states, operations and logon waterfalls in labctl's words."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from labctl.clock import LabClock
from labctl.inventory.load import load_lab
from labctl.lab.launchers import wire
from labctl.lab.launchers.facade import open_launchers
from labctl.lab.launchers.model import SessionState
from labctl.lab.session import LabSession
from tests.realsessions.conftest import GOOD_USERS
from tests.realsessions.xrdp_server import _wait_port, free_port

SSHD = "/usr/sbin/sshd"
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
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPermitRootLogin prohibit-password\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, "127.0.0.1", 15, proc)
        yield port, d / "client"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _lab_file(tmp: Path, ssh_port: int, launcher_cfg: Path) -> Path:
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
  - {{name: vc-01, url: 'https://127.0.0.1:1/sdk', user: administrator@vsphere.local, password: 'env:LABCTL_TEST_NO_VC'}}
storage:
  - {{name: arr-1, kind: unity, url: 'https://127.0.0.1:2', user: admin, password: 'env:LABCTL_TEST_NO_ARRAY'}}
vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: esx-01, sockets: 1, cores: 2, ghz: 2.0, ram_gb: 8, nics: {{count: 1, speed_gbps: 1}}, ip: 127.0.0.1}}
  arrays:
    - {{array: arr-1, model: test, cache_gb: 2, ports: {{count: 2, speed_gbps: 10}}, tiers: [{{drive: ssd, count: 4, capacity_gb: 400, raid: 10}}]}}
  datastores:
    - {{name: ds-1, array: arr-1, capacity_gb: 500}}
  pools:
    - {{name: pool, desktops: "desk[1-4]", cluster: vdi, datastores: [ds-1], vcpus: 1, ram_gb: 1, workload: task, ip: 127.0.0.1,
       provisioning: {{kind: full_clone}}}}
  launchers:
    - {{name: launcher-ssh, sessions: 4, pool: pool, ip: 127.0.0.1, access: {access}}}
"""
    path = tmp / "rdp-lab.yaml"
    path.write_text(text)
    return path


def test_the_lab_drives_a_real_launcher_over_ssh(rdp_lab, daemon_factory, sshd, tmp_path, monkeypatch):
    port, key = sshd
    cfg = rdp_lab.launcher_config("launcher-ssh")
    daemon_factory(cfg)
    monkeypatch.setenv("LABCTL_TEST_LAUNCHER_KEY", str(key))
    lab = load_lab(_lab_file(tmp_path, port, cfg))
    with LabSession(lab, LabClock(scale=1.0)) as s:
        ls = open_launchers(s, pool="pool")
        assert ls.hello() == {}
        started = ls.start(list(zip(("desk1", "desk2"), GOOD_USERS[:2], strict=True)), workload="task")
        ids = [e.session for e in started if hasattr(e, "session")]
        assert len(ids) == 2
        states: dict[str, SessionState] = {}
        logons, ops = [], []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            len(logons) >= 2 and all(states.get(i) == SessionState.ACTIVE for i in ids)
        ):
            p = ls.poll()
            assert p.errors == {}
            states.update({e.session: e.state for e in p.sessions})
            logons += p.logons
            ops += p.operations
            time.sleep(1.0)
        assert all(states[i] == SessionState.ACTIVE for i in ids), states
        assert {w.session for w in logons} == set(ids)
        for w in logons:
            by = {ph.name: ph for ph in w.phases}
            assert by["protocol_connect"].measured and by["protocol_connect"].duration_s is not None
            assert not by["profile_load"].measured and by["profile_load"].why
        assert ops and all(o.response_s > 0 for o in ops)
        assert ls.logoff(ids) == {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(states.get(i) == SessionState.ENDED for i in ids):
            states.update({e.session: e.state for e in ls.poll().sessions})
            time.sleep(1.0)
        assert all(states[i] == SessionState.ENDED for i in ids), states
        ls.close()


def test_the_wire_speaks_posix_to_labctl_launcher_and_powershell_to_scripts():
    assert wire.command("/opt/labctl/bin/labctl launcher --config /etc/l.yaml", "events", after=3) == [
        "/opt/labctl/bin/labctl",
        "launcher",
        "--config",
        "/etc/l.yaml",
        "events",
        "-After",
        "3",
    ]
    assert wire.command(r"C:\labctl\launcher.ps1", "hello")[:1] == ["powershell"]
    batch = wire.events(
        "l1",
        '{"event":"logon","session":"s1","desktop":"d","user":"u","connector":"rdp","launch_ts":1.0,"total_s":2.5,'
        '"phases":[{"name":"protocol_connect","measured":true,"duration_s":1.5,"start_ts":1.0},'
        '{"name":"profile_load","measured":false,"why":"not read"}]}\n{"event":"cursor","seq":4,"ts":9.0}\n',
        0,
    )
    assert (
        batch.logons[0].phases[1].why == "not read" and batch.logons[0].total_s == 2.5 and batch.cursor == 4
    )
