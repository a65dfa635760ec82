"""Any client by a command template: ``command: [myclient, --host, "{desktop}", --user, "{user}"]``.

The password is never substituted into the command line; a client that reads it from standard
input gets it there (``extra_args: [stdin-password]`` is not needed: it is always offered).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from labctl.launcher.connectors.base import Connector, Launch


class CustomConnector(Connector):
    kind: ClassVar[str] = "custom"
    unmeasured: ClassVar[dict[str, str]] = {
        "brokering": "a custom command's own steps are not visible to the launcher",
        "protocol_connect": "a custom command prints no milestones the launcher can read",
        "authentication": "a custom command prints no milestones the launcher can read",
    }

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        if not self.cfg.command:
            raise ValueError("connector kind custom needs command: [program, args...] with {desktop} {user}")
        names = {"desktop": desktop, "user": user, "session": session, "server": self.cfg.server}
        if any("{password}" in a for a in self.cfg.command):
            raise ValueError(
                "connector command may not name {password}: credentials never go on a command line"
            )
        return Launch(argv=[self.fill(a, **names) for a in self.cfg.command], stdin=password + "\n")
