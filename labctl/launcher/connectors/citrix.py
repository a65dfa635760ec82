"""Citrix Virtual Apps and Desktops through StoreFront and the Workspace app.

The launcher does what a browser on the Receiver for Web site does (``storefront``): log on with
the user's name and password, find the resource (``pool``, default the desktop's name), wait while
StoreFront says ``retry`` (the desktop powering on), and fetch its ICA file, which it hands to the
Workspace app (``wfica`` on Linux, ``wfica32.exe`` on Windows). That is timed at the launcher:
``brokering`` from the first call to the ICA file, and ``machine_ready`` from StoreFront's first
``retry`` to its ``success`` (inside brokering). The ICA file holds a logon ticket: it is written
owner-only and removed when the session ends.

With ``broker_api`` set, the Monitor service (``citrix_monitor``) gives what the launcher cannot
see: the VM start, HDX connection, authentication, profile load, group policy and interactive
phases of the same logon, as Director shows them.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.base import Connector, Launch
from labctl.launcher.connectors.broker import BrokerError, BrokerLogon
from labctl.launcher.connectors.citrix_monitor import MonitorClient
from labctl.launcher.connectors.storefront import LaunchTimes, StoreFront

HTTP_TIMEOUT_S = 30.0
CLOCK_SLACK_S = 120.0  # the broker's clock and the launcher's may differ


class CitrixConnector(Connector):
    kind: ClassVar[str] = "citrix"
    unmeasured: ClassVar[dict[str, str]] = {
        "protocol_connect": "the Workspace app (wfica) prints no ICA milestones the launcher reads",
        "authentication": "the Workspace app (wfica) prints no milestones the launcher reads",
    }

    def __init__(self, cfg: ConnectorConfig, *, sleep: Callable[[float], None] = time.sleep):
        super().__init__(cfg)
        self.sleep = sleep  # how the launch waits out StoreFront's pollTimeout (a test's own clock)
        self._monitor: MonitorClient | None = None
        self._lock = threading.Lock()

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        c = self.cfg
        store = self.fill(c.server, desktop=desktop, user=user, session=session)
        resource = self.fill(c.pool or "{desktop}", desktop=desktop, user=user, session=session)
        times = LaunchTimes()
        t0 = time.time()
        with StoreFront(store, verify_tls=c.verify_tls, timeout_s=HTTP_TIMEOUT_S, sleep=self.sleep) as sf:
            sf.configuration()
            sf.login(f"{c.domain}\\{user}" if c.domain else user, password)
            res = sf.find(resource)
            sf.wait_ready(res, c.launch_wait_s, times)
            ica = sf.ica(res)
            # No Authentication/Logoff: with workspace control its logoff action can disconnect the
            # user's sessions, the one just launched among them.
        t1 = time.time()
        path = workdir / f"{session}.ica"
        path.write_bytes(b"")
        path.chmod(0o600)  # the ICA file holds a logon ticket: owner-only before it is written
        path.write_bytes(ica)
        spans = {"brokering": (t0, t1)}
        if times.ready_wait_start_ts is not None and times.ready_ts is not None:
            spans["machine_ready"] = (times.ready_wait_start_ts, times.ready_ts)
        client = c.client or ("wfica32.exe" if sys.platform == "win32" else "/opt/Citrix/ICAClient/wfica")
        return Launch(
            argv=[client, str(path), *c.extra_args], cleanup=(path,), brokering_s=t1 - t0, spans=spans
        )

    def monitor(self) -> MonitorClient | None:
        with self._lock:
            if self._monitor is None and self.cfg.broker_api is not None:
                self._monitor = MonitorClient(self.cfg.broker_api)
            return self._monitor

    def broker_logon(
        self, desktop: str, user: str, launch_ts: float, end_ts: float
    ) -> tuple[BrokerLogon | None, str]:
        try:
            mon = self.monitor()
            if mon is None:
                return None, "no broker_api in the connector: the Citrix Monitor service is not asked"
            logon = mon.logon(user, launch_ts - CLOCK_SLACK_S, end_ts + CLOCK_SLACK_S)
        except BrokerError as exc:
            return None, str(exc)
        if logon is None:
            return None, f"the Citrix Monitor has no session of {user} that started during this logon (yet)"
        return logon, ""
