"""VMware Horizon through the Horizon Client's documented command line (``vmware-view``).

``vmware-view --serverURL <broker> --userName <u> --domainName <d> --desktopName <pool>
--nonInteractive``: the broker (Connection Server) picks the desktop, which is the brokering phase.
The Horizon Client reads no password from standard input, and a password on a command line is
readable by every user of the launcher: this connector passes none, so the launcher's account needs
the client's saved credentials or Horizon's single sign-on. Unverified against a real Connection
Server (docs/conformance.md); its milestones are not read from the client's log yet.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from labctl.launcher.connectors.base import Connector, Launch


class HorizonConnector(Connector):
    kind: ClassVar[str] = "horizon"
    unmeasured: ClassVar[dict[str, str]] = {
        "brokering": "the Horizon Client brokers inside its own process (its log is not read yet)",
        "protocol_connect": "the Horizon Client's Blast/PCoIP milestones are not read yet",
        "authentication": "the Horizon Client's milestones are not read yet",
    }

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        c = self.cfg
        client = c.client or ("vmware-view.exe" if sys.platform == "win32" else "vmware-view")
        argv = [
            client,
            "--serverURL",
            self.fill(c.server, desktop=desktop, user=user, session=session),
            "--userName",
            user,
            "--desktopName",
            self.fill(c.pool or "{desktop}", desktop=desktop, user=user, session=session),
            "--nonInteractive",
        ]
        if c.domain:
            argv += ["--domainName", c.domain]
        return Launch(argv=argv + list(c.extra_args))
