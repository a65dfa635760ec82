"""``session.files``: a machine copies a file through its own OS (the 2007 paper's copy traffic).

    copied = session.files.copy(machine, r"C:\\labctl\\file512.bin", r"\\\\fs-01\\share\\out.bin",
                                timeout_s=600, action="copy 512 MB (local_to_share)")
    copied.ok, copied.detail

The command and how its answer is read are the driver's (:mod:`labctl.drivers.os_files`: cmd.exe's
``copy /Y`` on Windows, ``cp -f`` elsewhere); this service runs it on the pooled SSH connection
of the lab context. An SSH failure raises :class:`~labctl.errors.EndpointError` naming the machine,
as every other action over SSH does; a copy the OS refused is ``ok=False`` with its words.
"""

from __future__ import annotations

from dataclasses import dataclass

from labctl.drivers.os_files import copy_argv, copy_outcome
from labctl.inventory.model import Machine
from labctl.lab.context import LabContext


@dataclass(frozen=True)
class CopyResult:
    machine: str
    ok: bool
    detail: str = ""  # why not, in the OS's words ("" when copied)


class Files:
    """File operations on the lab's machines, over the lab context's SSH pool."""

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def copy(
        self, machine: Machine, src: str, dst: str, *, timeout_s: float, action: str = "copy"
    ) -> CopyResult:
        """Copy ``src`` to ``dst`` on ``machine`` (its OS's paths), within ``timeout_s`` wall seconds."""
        target = self.ctx.ssh_target(machine)
        res = self.ctx.ssh.run(target, copy_argv(src, dst, target.shell), timeout_s=timeout_s, action=action)
        ok, detail = copy_outcome(res, target.shell)
        return CopyResult(machine.name, ok, detail)
