"""Which backend drives which kind of launcher (``vdi.launchers[].kind``): one line per kind."""

from __future__ import annotations

from collections.abc import Callable

from labctl.errors import BadInputError
from labctl.lab.launchers.backend import LauncherBackend
from labctl.lab.launchers.ssh import SshLauncherBackend
from labctl.lab.session import LabSession


def _ssh(session: LabSession) -> LauncherBackend:
    return SshLauncherBackend(session)


BACKENDS: dict[str, Callable[[LabSession], LauncherBackend]] = {
    SshLauncherBackend.kind: _ssh,
}


def backend_for(kind: str, session: LabSession) -> LauncherBackend:
    make = BACKENDS.get(kind)
    if make is None:
        raise BadInputError(
            f"launcher kind {kind!r} has no backend (kinds: {', '.join(sorted(BACKENDS))}; "
            "set vdi.launchers[].kind, or add a backend in labctl/lab/launchers/registry.py)"
        )
    return make(session)
