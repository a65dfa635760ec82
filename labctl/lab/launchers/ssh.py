"""Launchers over SSH: labctl's launcher script on Windows launcher machines (OpenSSH for Windows),
or ``labctl launcher`` on Linux or Windows ones.

The lab engineer installs the script (docs/session-launchers.md) and gives each launcher
``access: {user, password or key_file, script}`` in the inventory. Each call is one command on
one pooled SSH connection (paramiko, :class:`~labctl.drivers.ssh.SshPool`): a start names many
sessions at once, an events poll returns everything since the last cursor. A site agent a
launcher is placed at runs this same backend where its wire is (:mod:`labctl.agents.launchers`).
"""

from __future__ import annotations

from typing import ClassVar

from labctl.drivers.ssh import Shell, SshTarget
from labctl.errors import EndpointError
from labctl.inventory.model import HostKeyPolicy
from labctl.inventory.vdi import Launcher
from labctl.lab.context import LabContext
from labctl.lab.launchers import wire
from labctl.lab.launchers.backend import Args, ProtocolBackend

CALL_TIMEOUT_WALL_S = 60.0  # one protocol call; a start of hundreds of sessions returns at once


class SshLauncherBackend(ProtocolBackend):
    kind: ClassVar[str] = "ssh"

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def target(self, launcher: Launcher) -> SshTarget:
        a = launcher.access
        if a is None or launcher.ip is None:
            raise EndpointError(
                launcher.name,
                "launcher",
                "the inventory gives it no access or address",
                "add ip: and access: {user: ..., password: secret:...} to its vdi.launchers entry",
            )
        return SshTarget(
            name=launcher.name,
            host=launcher.ip,
            port=a.port,
            user=a.user,
            password_ref=a.password,
            key_file_ref=a.key_file,
            host_key_policy=HostKeyPolicy(a.host_key_policy),
            known_hosts=a.known_hosts,
            # labctl's PowerShell script runs under cmd.exe; `labctl launcher` under a POSIX shell.
            shell=Shell.CMD if wire.is_powershell(a.script) else Shell.POSIX,
        )

    def call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float | None = None) -> str:
        script = launcher.access.script if launcher.access is not None else ""
        res = self.ctx.ssh.run(
            self.target(launcher),
            wire.command(script, verb, **args),
            timeout_s=CALL_TIMEOUT_WALL_S if timeout_s is None else timeout_s,
            action=f"launcher {verb}",
            check=True,
        )
        return res.stdout
