"""Which backend carries ``labctl-launcher/1`` to which launcher (its ``transport``: the inventory's
``vdi.launchers[].kind``, or ``agent`` when ``agents:`` places it at a site agent): one line each."""

from __future__ import annotations

from collections.abc import Callable

from labctl.errors import BadInputError
from labctl.lab.context import LabContext
from labctl.lab.launchers.agent import AgentLauncherBackend, LauncherRelay
from labctl.lab.launchers.backend import LauncherBackend
from labctl.lab.launchers.ssh import SshLauncherBackend


def _ssh(ctx: LabContext, relay: LauncherRelay | None) -> LauncherBackend:
    return SshLauncherBackend(ctx)


def _agent(ctx: LabContext, relay: LauncherRelay | None) -> LauncherBackend:
    return AgentLauncherBackend(ctx, relay)


BACKENDS: dict[str, Callable[[LabContext, LauncherRelay | None], LauncherBackend]] = {
    SshLauncherBackend.kind: _ssh,
    AgentLauncherBackend.kind: _agent,
}


def backend_for(kind: str, ctx: LabContext, relay: LauncherRelay | None = None) -> LauncherBackend:
    make = BACKENDS.get(kind)
    if make is None:
        hint = (
            "a local launcher is hosted by the site agent it is placed at: name it under "
            "agents.sites[].launchers"
            if kind == "local"
            else "set vdi.launchers[].kind, or add a backend in labctl/lab/launchers/registry.py"
        )
        raise BadInputError(
            f"launcher kind {kind!r} has no backend here (kinds: {', '.join(sorted(BACKENDS))}; {hint})"
        )
    return make(ctx, relay)
