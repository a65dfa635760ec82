"""Host keys of the simulated SSH endpoints: generated once per state dir, never committed.

Every simulated box presents the same host keys. That is what a PVS standard-image lab really
looks like: the clients all boot one vDisk image, so they share the image's host key.
A ``known_hosts`` file naming every endpoint is written next to the keys, for clients that check
host keys strictly.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import asyncssh

KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256")
_lock = threading.Lock()


def ssh_dir(state_dir: Path) -> Path:
    return state_dir / "ssh"


def load_or_create_host_keys(state_dir: Path) -> list[asyncssh.SSHKey]:
    """The host keys under ``state_dir/ssh/``, generated on first use (0600)."""
    d = ssh_dir(state_dir)
    keys = []
    with _lock:
        d.mkdir(parents=True, exist_ok=True)
        for alg in KEY_TYPES:
            short = alg.split("-")[1] if alg.startswith("ssh-") else alg.split("-")[0]
            path = d / f"ssh_host_{short}_key"
            if path.exists():
                keys.append(asyncssh.read_private_key(str(path)))
                continue
            key = asyncssh.generate_private_key(alg)
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key.export_private_key())
            os.replace(tmp, path)
            key.write_public_key(str(path.with_suffix(".pub")))
            keys.append(key)
    return keys


def write_known_hosts(state_dir: Path, endpoints: list[tuple[str, int]], keys: list[asyncssh.SSHKey]) -> Path:
    """``state_dir/ssh/known_hosts`` with ``[host]:port`` entries for every endpoint."""
    path = ssh_dir(state_dir) / "known_hosts"
    lines = []
    for host, port in endpoints:
        name = host if port == 22 else f"[{host}]:{port}"
        for key in keys:
            lines.append(f"{name} {key.export_public_key('openssh').decode().strip()}\n")
    path.write_text("".join(lines))
    return path


def server_options(host_keys: list[asyncssh.SSHKey], version: str) -> asyncssh.SSHServerConnectionOptions:
    """What every simulated Windows OpenSSH server offers: these host keys, this version string,
    bytes (not text) on channels, and no SCP, agent or X11 forwarding (Windows' sshd has none of
    them configured); a login must finish within 30 s."""
    return asyncssh.SSHServerConnectionOptions(
        server_host_keys=host_keys,
        server_version=version,
        encoding=None,
        allow_scp=False,
        agent_forwarding=False,
        x11_forwarding=False,
        login_timeout=30,
    )
