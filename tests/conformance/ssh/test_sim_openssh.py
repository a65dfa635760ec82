"""The simulated Windows servers' SSH endpoint (labctl.sim.ssh) checked with OpenSSH's own client.

labctl's driver (paramiko) and the simulator (asyncssh) were written here; OpenSSH's `ssh` was not.
It logs on with the password (handed over by SSH_ASKPASS, never on its command line), runs
commands the way a lab engineer would by hand, and reads what Windows' OpenSSH server would answer:
the command's output and exit status, and cmd.exe's refusal of a program it does not know.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from labctl.inventory.model import Machine
from tests.drivers.simparts import SECRETS, endpoints, write_secrets

pytestmark = pytest.mark.integration
SSH = shutil.which("ssh")


def _ssh(tmp: Path, m: Machine, password: str, *command: str) -> subprocess.CompletedProcess[str]:
    askpass = tmp / "askpass.sh"
    (tmp / "pw").write_text(password)
    (tmp / "pw").chmod(0o600)
    askpass.write_text(f"#!/bin/sh\ncat {tmp / 'pw'}\n")
    askpass.chmod(0o700)
    assert m.ssh is not None
    env = {**os.environ, "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}
    argv = [
        SSH or "ssh",
        "-F", "/dev/null",
        "-o", "StrictHostKeyChecking=no",
        "-o", f"UserKnownHostsFile={tmp / 'known_hosts'}",
        "-o", "PreferredAuthentications=password,keyboard-interactive",
        "-o", "PubkeyAuthentication=no",
        "-o", "NumberOfPasswordPrompts=1",
        "-o", "ConnectTimeout=10",
        "-p", str(m.ssh.port),
        f"{m.ssh.user}@{m.ip}",
        *command,
    ]  # fmt: skip
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    if SSH is None:
        pytest.fail("OpenSSH's client is not installed (Debian openssh-client)")
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.ssh", clients=1) as parts:
        yield parts


def test_openssh_logs_on_and_runs_a_command(servers, tmp_path: Path) -> None:
    m = servers.lab.machine("pvs-01")
    r = _ssh(tmp_path, m, SECRETS["secret:sim.server_password"], "hostname")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "pvs-01"
    # the server's host key was offered and recorded as an OpenSSH client keeps it
    assert (tmp_path / "known_hosts").read_text().strip()


def test_openssh_sees_cmd_refuse_an_unknown_program_with_its_exit_status(servers, tmp_path: Path) -> None:
    m = servers.lab.machine("pvs-01")
    r = _ssh(tmp_path, m, SECRETS["secret:sim.server_password"], "no-such-program")
    assert r.returncode == 1
    assert "is not recognized as an internal or external command" in r.stdout + r.stderr


def test_openssh_is_refused_a_wrong_password(servers, tmp_path: Path) -> None:
    m = servers.lab.machine("pvs-01")
    r = _ssh(tmp_path, m, "not-the-password", "hostname")
    assert r.returncode == 255 and "Permission denied" in r.stderr
