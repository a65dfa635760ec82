"""Launchers placed at a site agent: ``labctl-launcher/1`` carried over NATS to the agent, which
relays each call to the launcher where its wire is (``kind: local``: the ``labctl launcher`` it hosts
on its own machine; ``kind: ssh``: over OpenSSH from the site) and answers with the launcher's text.

The registry picks this backend for every launcher the inventory's ``agents:`` section places at
an agent (``agents.sites[].launchers``, :attr:`labctl.inventory.vdi.Launcher.transport`), as power
picks its ``agent`` backend for the machines an agent serves. It is handed the lab's link to its
agents (:class:`LauncherRelay`, which :class:`labctl.lab.sites.Sites` is), so the launchers never
import the sites. Every call has a deadline; an agent that is down, or dies mid-storm, is an
:class:`~labctl.errors.EndpointError` naming the agent and the launcher (the storm's lab fault).
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from labctl.errors import BadInputError
from labctl.inventory.vdi import Launcher
from labctl.lab.context import LabContext
from labctl.lab.launchers.backend import Args, ProtocolBackend

# The agent gives the launcher this long for one call (its own client's limit is 30 s); the link
# waits a little longer for the agent's answer (LinkSettings.launcher_grace_s).
CALL_TIMEOUT_WALL_S = 30.0


@runtime_checkable
class LauncherRelay(Protocol):
    """What the agent backend needs of the link to the site agents."""

    def launcher_call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float) -> str:
        """The launcher's answer to ``verb`` through the agent it is placed at (its stdout text);
        an EndpointError naming the agent and the launcher when none comes in time."""


class AgentLauncherBackend(ProtocolBackend):
    kind: ClassVar[str] = "agent"

    def __init__(self, ctx: LabContext, relay: LauncherRelay | None = None):
        self.ctx = ctx
        self.relay = relay

    def call(self, launcher: Launcher, verb: str, args: Args, timeout_s: float | None = None) -> str:
        if self.relay is None:
            raise BadInputError(
                f"launcher {launcher.name}: placed at site agent {launcher.agent}, but these launchers of lab "
                f"{self.ctx.lab.name} were opened without the link to its agents (open them from a LabSession)"
            )
        return self.relay.launcher_call(
            launcher, verb, args, CALL_TIMEOUT_WALL_S if timeout_s is None else timeout_s
        )
