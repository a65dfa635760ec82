"""Citrix Virtual Apps and Desktops through StoreFront's web API and the Workspace app.

Brokering is timed at the launcher: log on to the store (``ExplicitAuth/LoginAttempt``), list the
resources (``Resources/List``), fetch the resource's ICA file from its ``launchurl``; the ICA file
is handed to the Workspace app (``wfica`` on Linux, ``wfica32.exe`` on Windows). Built from
Citrix's published StoreFront Web API; unverified against a real StoreFront (docs/conformance.md).
The Monitor service's logon durations are not read yet.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import ClassVar

import requests

from labctl.launcher.connectors.base import Connector, Launch

HTTP_TIMEOUT_S = 30.0


class CitrixConnector(Connector):
    kind: ClassVar[str] = "citrix"
    unmeasured: ClassVar[dict[str, str]] = {
        "protocol_connect": "the Workspace app's ICA milestones are not read yet",
        "authentication": "the Workspace app's milestones are not read yet",
    }

    def launch(self, desktop: str, user: str, password: str, session: str, workdir: Path) -> Launch:
        c = self.cfg
        store = self.fill(c.server, desktop=desktop, user=user, session=session).rstrip("/")
        resource = self.fill(c.pool or "{desktop}", desktop=desktop, user=user, session=session)
        t0 = time.monotonic()
        with requests.Session() as http:
            http.headers["X-Citrix-IsUsingHTTPS"] = "Yes" if store.startswith("https") else "No"
            http.post(f"{store}/Home/Configuration", timeout=HTTP_TIMEOUT_S).raise_for_status()
            csrf = http.cookies.get("CsrfToken", "")
            hdr = {"Csrf-Token": csrf}
            form = {
                "username": f"{c.domain}\\{user}" if c.domain else user,
                "password": password,
                "saveCredentials": "false",
                "loginBtn": "Log On",
                "StateContext": "",
            }
            r = http.post(
                f"{store}/ExplicitAuth/LoginAttempt", data=form, headers=hdr, timeout=HTTP_TIMEOUT_S
            )
            r.raise_for_status()
            r = http.post(
                f"{store}/Resources/List",
                data={"format": "json", "resourceDetails": "Default"},
                headers=hdr,
                timeout=HTTP_TIMEOUT_S,
            )
            r.raise_for_status()
            found = [x for x in r.json().get("resources", []) if resource in (x.get("name"), x.get("id"))]
            if not found:
                raise ValueError(f"StoreFront {store} offers {user} no resource named {resource!r}")
            ica = http.get(
                f"{store}/{found[0]['launchurl']}",
                params={"CsrfToken": csrf},
                headers=hdr,
                timeout=HTTP_TIMEOUT_S,
            )
            ica.raise_for_status()
        path = workdir / f"{session}.ica"
        path.write_bytes(ica.content)
        path.chmod(0o600)  # the ICA file holds a logon ticket
        client = c.client or ("wfica32.exe" if sys.platform == "win32" else "/opt/Citrix/ICAClient/wfica")
        return Launch(
            argv=[client, str(path), *c.extra_args], cleanup=(path,), brokering_s=time.monotonic() - t0
        )
