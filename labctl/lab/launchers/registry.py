"""Which backend drives which kind of launcher (``vdi.launchers[].kind``): one line per kind."""

from __future__ import annotations

from collections.abc import Callable

from labctl.errors import BadInputError
from labctl.lab.context import LabContext
from labctl.lab.launchers.backend import LauncherBackend
from labctl.lab.launchers.ssh import SshLauncherBackend


def _ssh(ctx: LabContext) -> LauncherBackend:
    return SshLauncherBackend(ctx)


BACKENDS: dict[str, Callable[[LabContext], LauncherBackend]] = {
    SshLauncherBackend.kind: _ssh,
}


def backend_for(kind: str, ctx: LabContext) -> LauncherBackend:
    make = BACKENDS.get(kind)
    if make is None:
        raise BadInputError(
            f"launcher kind {kind!r} has no backend (kinds: {', '.join(sorted(BACKENDS))}; "
            "set vdi.launchers[].kind, or add a backend in labctl/lab/launchers/registry.py)"
        )
    return make(ctx)
