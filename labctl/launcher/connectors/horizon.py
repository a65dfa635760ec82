"""VMware (Omnissa) Horizon through the Horizon Client's documented command line.

Linux: ``vmware-view --serverURL=<broker> --userName=<u> --domainName=<d> --desktopName=<pool>
--nonInteractive [--protocol=BLAST|PCOIP]``; Windows: ``vmware-view.exe -serverURL <broker>
-userName <u> -domainName <d> -desktopName <pool> -nonInteractive [-desktopProtocol Blast|PCOIP|RDP]``
(single dash, separate values: the Windows client's syntax). The Connection Server picks the
desktop, which is brokering. The client reads no password from standard input and a password on a
command line is readable by every user of the launcher, so none is passed: the launcher's account
uses the client's saved credentials or single sign-on (``-logInAsCurrentUser`` on Windows).

With ``broker_api`` set, the Horizon REST API (``horizon_rest``) checks the pool before each launch
(it exists and is enabled) and afterwards finds the session the broker made, with its start time;
Horizon's REST API has no logon phases to give (see horizon_rest), which the waterfall says.
Unverified against a real Connection Server and client (docs/conformance.md).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import ClassVar

from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.base import Connector, Launch
from labctl.launcher.connectors.broker import BrokerError, BrokerLogon
from labctl.launcher.connectors.horizon_rest import HorizonRest

# The broker's clock and the launcher's may differ; a session is looked for this far around the logon.
CLOCK_SLACK_S = 120.0
WINDOWS_PROTOCOLS = {"BLAST": "Blast", "PCOIP": "PCOIP", "RDP": "RDP"}


def horizon_argv(
    windows: bool, client: str, server: str, user: str, domain: str, desktop: str, protocol: str
) -> list[str]:
    """The Horizon Client's command line in each platform's own syntax."""
    proto = protocol.upper()
    if windows:
        argv = [client, "-serverURL", server, "-userName", user, "-desktopName", desktop, "-nonInteractive"]
        if domain:
            argv += ["-domainName", domain]
        if proto:
            argv += ["-desktopProtocol", WINDOWS_PROTOCOLS.get(proto, protocol)]
        return argv
    argv = [
        client,
        f"--serverURL={server}",
        f"--userName={user}",
        f"--desktopName={desktop}",
        "--nonInteractive",
    ]
    if domain:
        argv.append(f"--domainName={domain}")
    if proto:
        argv.append(f"--protocol={proto}")
    return argv


class HorizonConnector(Connector):
    kind: ClassVar[str] = "horizon"
    unmeasured: ClassVar[dict[str, str]] = {
        "brokering": "the Horizon Client brokers inside its own process and prints no milestones the launcher reads",
        "protocol_connect": "the Horizon Client's Blast/PCoIP milestones are not read",
        "authentication": "the Horizon Client's milestones are not read",
    }

    def __init__(self, cfg: ConnectorConfig, *, windows: bool | None = None):
        super().__init__(cfg)
        self.windows = sys.platform == "win32" if windows is None else windows
        self.rest = HorizonRest(cfg.broker_api) if cfg.broker_api is not None else None
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def pool_name(self, desktop: str, user: str, session: str) -> str:
        return self.fill(self.cfg.pool or "{desktop}", desktop=desktop, user=user, session=session)

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        c = self.cfg
        pool = self.pool_name(desktop, user, session)
        if self.rest is not None:
            self._check_pool(pool)
        client = c.client or ("vmware-view.exe" if self.windows else "vmware-view")
        argv = horizon_argv(
            self.windows,
            client,
            self.fill(c.server, desktop=desktop, user=user, session=session),
            user,
            c.domain,
            pool,
            c.protocol,
        )
        return Launch(argv=argv + list(c.extra_args))

    def _check_pool(self, pool: str) -> None:
        with self._lock:
            if pool in self._checked:
                return
        assert self.rest is not None
        found = self.rest.pool(pool)
        if not found.enabled:
            raise BrokerError(
                f"Horizon: the desktop pool {pool!r} is disabled; enable it in the Horizon Console"
            )
        with self._lock:
            self._checked.add(pool)

    def broker_logon(
        self, desktop: str, user: str, launch_ts: float, end_ts: float
    ) -> tuple[BrokerLogon | None, str]:
        if self.rest is None:
            return None, "no broker_api in the connector: the Horizon REST API is not asked"
        pool = self.pool_name(desktop, user, "")
        try:
            logon = self.rest.logon(
                user, self.cfg.domain, pool, launch_ts - CLOCK_SLACK_S, end_ts + CLOCK_SLACK_S
            )
        except BrokerError as exc:
            return None, str(exc)
        if logon is None:
            return None, f"Horizon lists no session of {user} in pool {pool!r} that started during this logon"
        return logon, ""
