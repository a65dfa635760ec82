"""RDP through FreeRDP (``xfreerdp`` under the launcher's X display; ``wfreerdp`` on Windows).

The password goes to the client on standard input (``/from-stdin:force``), never on its command
line. Progress is read from FreeRDP's own log (``/log-level:DEBUG``): the TCP connect, the
negotiated security (TLS, or NLA where the server authenticates before the session), and the
connection reaching ``CONNECTION_STATE_ACTIVE``. Errors are FreeRDP's ``ERRCONNECT_*`` codes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import ClassVar

from labctl.launcher.connectors.base import Connector, Launch, Progress

_ERR = re.compile(r"ERRCONNECT_([A-Z_]+)")
_SECURITY = re.compile(r"Negotiated (\w+) security")
# FreeRDP's connection errors, as a lab engineer would say them.
REASONS = {
    "LOGON_FAILURE": "logon failure: wrong user name or password",
    "AUTHENTICATION_FAILED": "authentication failed (wrong credentials, or NLA refused)",
    "PASSWORD_EXPIRED": "the user's password has expired",
    "PASSWORD_MUST_CHANGE": "the user must change the password first",
    "ACCOUNT_DISABLED": "the user's account is disabled",
    "ACCOUNT_LOCKED_OUT": "the user's account is locked out",
    "CONNECT_FAILED": "the desktop refused the connection",
    "CONNECT_TRANSPORT_FAILED": "the desktop refused the connection (transport failed)",
    "DNS_NAME_NOT_FOUND": "the desktop's name does not resolve",
    "SECURITY_NEGO_CONNECT_FAILED": "security negotiation failed",
    "TLS_CONNECT_FAILED": "the TLS connection failed",
    "SERVER_INSUFFICIENT_PRIVILEGES": "the user may not log on over RDP",
    "CONNECT_CANCELLED": "the connection was cancelled",
}


class RdpConnector(Connector):
    kind: ClassVar[str] = "rdp"
    unmeasured: ClassVar[dict[str, str]] = {
        "brokering": "direct RDP has no broker (a gateway's time is part of protocol_connect)",
    }

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        c = self.cfg
        client = c.client or ("wfreerdp.exe" if sys.platform == "win32" else "xfreerdp")
        server = (
            c.addresses.get(desktop)
            or f"{self.fill(c.server, desktop=desktop, user=user, session=session)}:{c.port}"
        )
        if ":" not in server:
            server = f"{server}:{c.port}"
        argv = [client, f"/v:{server}", f"/u:{user}"]
        if c.domain:
            argv.append(f"/d:{c.domain}")
        if c.gateway:
            argv.append(f"/g:{c.gateway}")  # the gateway takes the user's own credentials
        argv += ["/from-stdin:force", f"/size:{c.size}", "/log-level:DEBUG", f"/cert:{c.certificate}"]
        if c.certificate == "verify":
            argv.pop()  # FreeRDP verifies by default; 'verify' is not one of its words
        argv += list(c.extra_args)
        return Launch(argv=argv, stdin=password + "\n")

    def progress(self, line: str) -> Progress | None:
        if "connecting to peer" in line:
            return Progress("connect_start")
        m = _SECURITY.search(line)
        if m:
            return Progress("security", m.group(1))
        if "--> CONNECTION_STATE_ACTIVE" in line:
            return Progress("active")
        m = _ERR.search(line)
        if m:
            return Progress("error", REASONS.get(m.group(1), f"FreeRDP error {m.group(1)}"))
        if "Authentication failure, check credentials" in line:
            return Progress("error", REASONS["LOGON_FAILURE"])
        return None
