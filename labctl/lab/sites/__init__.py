"""The site agents as the lab sees them: the :class:`Sites` service (:mod:`.service`), the NATS
link to the agents (:mod:`.link`, loaded only for a lab with agents) and the metric sources the
agents stream back (:mod:`.feed`)."""

from labctl.lab.sites.errors import AgentDown
from labctl.lab.sites.service import (
    AgentLink,
    Sites,
    agent_feeds,
    link_for,
    open_link,
    require_agents,
    set_run_context,
)

__all__ = [
    "AgentDown",
    "AgentLink",
    "Sites",
    "agent_feeds",
    "link_for",
    "open_link",
    "require_agents",
    "set_run_context",
]
