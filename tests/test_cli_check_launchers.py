"""`labctl check` greets every session launcher of a VDI lab with ``labctl-launcher/1``'s ``hello``
through its transport: a real `labctl launcher` daemon behind a real OpenSSH server answers with
its labctl version, protocol, connector and sessions; a launcher whose daemon is down, one nobody
listens for and one whose port never speaks SSH each fail with one line, within the deadline, and
make the check exit 1 as an unreachable BMC does. No xrdp here: a ``custom`` connector's daemon
needs no display, and ``hello`` starts no session.

The servers listen on a loopback block of this process's own (tests/labfiles.py), so the fixed
port below is safe under xdist.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from labctl import __version__
from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from labctl.lab.launchers import greet, wire
from tests.labfiles import _free_block
from tests.realsessions.conftest import Daemon
from tests.realsessions.xrdp_server import _wait_port

pytestmark = pytest.mark.integration

SSHD = "/usr/sbin/sshd"
SSH_PORT = 2222  # on this process's own loopback block
REPO = Path(__file__).resolve().parents[1]
PASSWORD = "pw-of-launcher-gone-7f3a91"  # a credential that must reach no output


@dataclass
class Rig:
    block: int
    work: Path
    key: Path
    ok_config: Path  # its daemon runs
    down_config: Path  # its daemon is not running

    def ip(self, n: int) -> str:
        return f"127.{self.block}.2.{n}"


def _launcher_config(work: Path, name: str) -> Path:
    cfg = {
        "name": name,
        "state_dir": str(work / name),
        "control": {"host": "127.0.0.1", "port": 0},
        "collector": {"bind": "127.0.0.1", "port": 0},
        "max_sessions": 30,
        "connector": {"kind": "custom", "command": ["/bin/true", "{desktop}"]},
    }
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """sshd on two addresses of an own loopback block taking one client key, and one running
    `labctl launcher` (the second launcher's configuration has no daemon); stopped by pid."""
    if not Path(SSHD).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("OpenSSH's sshd is not installed (make install installs Debian's openssh-server)")
        pytest.skip("sshd not installed")
    block = _free_block(random.Random())
    d = tmp_path_factory.mktemp("launchcheck")
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True, timeout=30
        )
    shutil.copy(d / "client.pub", d / "authorized_keys")
    os.chmod(d / "authorized_keys", 0o600)
    (d / "sshd_config").write_text(
        f"Port {SSH_PORT}\nListenAddress 127.{block}.2.1\nListenAddress 127.{block}.2.2\n"
        f"HostKey {d / 'host'}\nAuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "PermitRootLogin prohibit-password\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    rig = Rig(
        block, d, d / "client", _launcher_config(d, "launcher-ok"), _launcher_config(d, "launcher-down")
    )
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL)
    daemon: Daemon | None = None
    try:
        _wait_port(SSH_PORT, rig.ip(1), 15, proc)
        _wait_port(SSH_PORT, rig.ip(2), 15, proc)
        daemon = Daemon(rig.ok_config)
        yield rig
    finally:
        if daemon is not None:
            daemon.stop()
        proc.terminate()
        proc.wait(timeout=10)


def _script(config: Path) -> str:
    return f"env PYTHONPATH={REPO} {sys.executable} -m labctl launcher --config {config}"


def lab_file(rig: Rig, tmp: Path, launchers: list[str]) -> Path:
    """A VDI lab on the rig's block with these launchers (flow-style inventory entries)."""
    b = rig.block
    items = "\n".join(f"    - {ln}" for ln in launchers)
    text = f"""
lab: {{name: launchcheck, time_scale: 1}}
networks:
  - {{name: net, subnet: 127.0.0.0/8, broadcast: 127.255.255.255, speed_gbps: 10}}
vcenters:
  - {{name: vc-01, url: 'https://127.{b}.3.1:1/sdk', user: administrator@vsphere.local, password: 'env:LABCTL_TEST_NO_VC'}}
storage:
  - {{name: arr-1, kind: unity, url: 'https://127.{b}.3.2:2', user: admin, password: 'env:LABCTL_TEST_NO_ARRAY'}}
vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: esx-01, sockets: 1, cores: 2, ghz: 2.0, ram_gb: 8, nics: {{count: 1, speed_gbps: 1}}, ip: 127.{b}.4.1}}
  arrays:
    - {{array: arr-1, model: test, cache_gb: 2, ports: {{count: 2, speed_gbps: 10}}, tiers: [{{drive: ssd, count: 4, capacity_gb: 400, raid: 10}}]}}
  datastores:
    - {{name: ds-1, array: arr-1, capacity_gb: 500}}
  pools:
    - {{name: pool, desktops: "desk[1-4]", cluster: vdi, datastores: [ds-1], vcpus: 1, ram_gb: 1, workload: task, ip: 127.{b}.1.1,
       provisioning: {{kind: full_clone}}}}
  launchers:
{items}
"""
    path = tmp / "launchcheck.yaml"
    path.write_text(text)
    return path


def _key_access(rig: Rig, tmp: Path, config: Path) -> str:
    return (
        f"{{user: {os.environ.get('USER', 'root')}, key_file: 'env:LABCTL_TEST_LAUNCHER_KEY', port: {SSH_PORT},"
        f" host_key_policy: accept-new, known_hosts: '{tmp / 'known_hosts'}', script: '{_script(config)}'}}"
    )


def launcher_ok(rig: Rig, tmp: Path, sessions: int = 4) -> str:
    return (
        f"{{name: launcher-ok, sessions: {sessions}, pool: pool, ip: {rig.ip(1)}, "
        f"access: {_key_access(rig, tmp, rig.ok_config)}}}"
    )


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, ["check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def env(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("LABCTL_TEST_LAUNCHER_KEY", str(rig.key))
    monkeypatch.setenv("LABCTL_TEST_LAUNCHER_PW", PASSWORD)


@pytest.mark.usefixtures("env")
def test_check_greets_a_real_launcher_over_ssh(rig: Rig, tmp_path: Path, capsys) -> None:
    # the inventory gives it more sessions than its max_sessions: said in a note, not a failure
    lab = lab_file(rig, tmp_path, [launcher_ok(rig, tmp_path, sessions=40)])
    code, out, err = check(capsys, "--lab", str(lab), "--kind", "launcher", "--timeout", "5")
    assert code == EXIT_OK, err
    row = next(line for line in out.splitlines() if "launcher-ok launcher" in line)
    assert f"{rig.ip(1)}:{SSH_PORT}" in row and "ok" in row
    assert f"labctl {__version__}, labctl-launcher/1" in row
    assert "connector custom; sessions 0/30" in row
    assert "1/1 endpoints ok" in out and "vc-01" not in out  # --kind: the launchers only
    assert "note: launcher-ok launcher: the inventory gives it 40 sessions, it holds at most 30" in out
    assert "clock is" not in out  # the launcher's clock is this machine's: inside the call's window


@pytest.mark.usefixtures("env")
def test_unreachable_launchers_fail_the_check_with_one_line_each(rig: Rig, tmp_path: Path, capsys) -> None:
    b = rig.block
    down = f"{{name: launcher-down, sessions: 4, pool: pool, ip: {rig.ip(2)}, access: {_key_access(rig, tmp_path, rig.down_config)}}}"
    gone = (
        f"{{name: launcher-gone, sessions: 4, pool: pool, ip: {rig.ip(3)}, access: {{user: vsi, "
        f"password: 'env:LABCTL_TEST_LAUNCHER_PW', port: {SSH_PORT}, host_key_policy: insecure, script: '{_script(rig.ok_config)}'}}}}"
    )
    mute = (
        f"{{name: launcher-mute, sessions: 4, pool: pool, ip: {rig.ip(4)}, access: {{user: vsi, "
        f"password: 'env:LABCTL_TEST_LAUNCHER_PW', port: {SSH_PORT}, host_key_policy: insecure, script: '{_script(rig.ok_config)}'}}}}"
    )
    lab = lab_file(rig, tmp_path, [launcher_ok(rig, tmp_path), down, gone, mute])
    # a port that takes connections and never says a word: the greeting's deadline ends it
    with socket.socket() as silent:
        silent.bind((f"127.{b}.2.4", SSH_PORT))
        silent.listen(4)
        code, out, err = check(capsys, "--lab", str(lab), "--kind", "launcher", "--timeout", "2", "--json")
    assert code == EXIT_FAILED
    got = {e["endpoint"]: e for e in json.loads(out)["endpoints"]}
    assert set(got) == {f"launcher-{n} launcher" for n in ("ok", "down", "gone", "mute")}
    assert {e["kind"] for e in got.values()} == {"launcher"}
    ok = got["launcher-ok launcher"]
    assert ok["ok"] and ok["capabilities"] == "connector custom; sessions 0/30"
    for name in ("down", "gone", "mute"):
        assert not got[f"launcher-{name} launcher"]["ok"], got[f"launcher-{name} launcher"]
    # sshd answers, `labctl launcher hello` does not: the launcher's own one line comes back
    assert "no daemon is running" in got["launcher-down launcher"]["reason"]
    assert "labctl launcher serve" in got["launcher-down launcher"]["reason"]
    assert "docs/session-launchers.md" in got["launcher-down launcher"]["fix"]
    assert "refused" in got["launcher-gone launcher"]["reason"].lower()
    assert "banner" in got["launcher-mute launcher"]["reason"].lower()
    failed = [line for line in err.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 3 and all("launcher-ok" not in line for line in failed)
    assert any(
        line.startswith(f"FAILED launcher-gone launcher [launcher {rig.ip(3)}:{SSH_PORT}]") for line in failed
    )
    assert "3 of 4 endpoints failed the preflight" in err
    assert PASSWORD not in out + err


def test_kind_launcher_on_a_lab_without_launchers_is_bad_input(tmp_path: Path, capsys) -> None:
    code, _, err = check(capsys, "--lab", str(REPO / "hardware" / "sim-2007.yaml"), "--kind", "launcher")
    assert code == EXIT_BAD_INPUT
    assert "has no endpoint of kind launcher" in err


def test_a_hello_without_the_optional_fields_is_read_as_not_given() -> None:
    # a launcher script of the lab's own may answer only what the protocol needs
    h = greet.parse(
        "l1", '{"event":"hello","protocol":"labctl-launcher/1","launcher":"l1","clock_ts":5,"seq":7}\r\n'
    )
    assert (h.clock_ts, h.seq, h.labctl_version, h.connectors, h.sessions) == (5.0, 7, "", (), None)
    assert h.version_text == "labctl (not given), labctl-launcher/1"
    assert h.load_text == "connector (not given); sessions (not given)"
    h = greet.parse(
        "l2",
        '{"event":"hello","protocol":"labctl-launcher/1","clock_ts":5,"seq":0,"connectors":["rdp","horizon"],'
        '"max_sessions":30}',
    )
    assert h.load_text == "connector rdp,horizon; sessions ?/30"
    with pytest.raises(wire.ProtocolError, match="l3: speaks 'labctl-launcher/0'"):
        greet.parse("l3", '{"event":"hello","protocol":"labctl-launcher/0","clock_ts":5,"seq":0}')


def test_a_launcher_clock_outside_the_call_window_is_an_offset() -> None:
    assert greet.clock_offset_s(105.0, 100.0, 110.0) == 0.0  # within the round trip: no evidence
    assert greet.clock_offset_s(95.5, 100.0, 110.0) == -4.5
    assert greet.clock_offset_s(130.0, 100.0, 110.0) == 20.0
