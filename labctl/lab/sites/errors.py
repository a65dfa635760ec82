"""The one error of the site agents the lab names, below both the service and the link."""

from __future__ import annotations

from labctl.errors import BadInputError


class AgentDown(BadInputError):
    """An agent the run needs has no fresh heartbeat: the run refuses to start (one line)."""
