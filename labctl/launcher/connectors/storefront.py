"""A Citrix StoreFront "Receiver for Web" client: log a user on, find a resource, wait until it is
ready, fetch its ICA file. What a browser does, from Citrix's StoreFront Web API reference
(citrix/storefront-sdk, docs/requests.md) and checked against recorded answers of real stores
(tests/conformance/brokers/, docs/conformance.md):

1. ``Home/Configuration`` sets the ``CsrfToken`` cookie, echoed in a ``Csrf-Token`` header after.
2. ``Authentication/GetAuthMethods`` lists the methods; the explicit-forms URL is taken from it,
   never hard-coded (the reference: "these may change from release to release").
3. The explicit-forms conversation: the form's requirements say which fields to post back; a
   wrong password or an expired one comes back as *another form* with HTTP 200, never as an error
   status, so success is only an ``AuthenticationStatus`` whose ``Result`` is ``success``.
4. ``Resources/List`` (JSON); a ``CitrixWebReceiver-Authenticate`` header means "not logged on".
5. ``GetLaunchStatus``: ``retry`` with ``pollTimeout`` (seconds) while the desktop powers on.
6. ``LaunchIca``: the ICA file, or a JSON status as text/plain when the launch failed.

Real stores name their XML namespaces (``http://citrix.com/delivery-services/webAPI/2-6/...``)
where the reference's examples show none: elements are matched by local name.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import requests

from labctl.launcher.connectors.broker import BrokerError, require_tls, transport_error

MAX_BODY_BYTES = 4 * 1024 * 1024  # a store's answers are small; a resource list of thousands fits


@dataclass(frozen=True)
class Resource:
    id: str
    name: str
    launchurl: str
    launchstatusurl: str = ""
    disabled: bool = False
    clienttypes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Resource:
        return cls(
            id=str(raw.get("id", "")),
            name=str(raw.get("name", "")),
            launchurl=str(raw.get("launchurl", "")),
            launchstatusurl=str(raw.get("launchstatusurl") or ""),
            disabled=bool(raw.get("disabled", False)),
            clienttypes=tuple(str(c) for c in raw.get("clienttypes") or ()),
        )


@dataclass
class LaunchTimes:
    """Epoch seconds of the launch's steps, for the waterfall."""

    ready_wait_start_ts: float | None = None  # the first "retry": the desktop was not ready
    ready_ts: float | None = None  # the launch status said "success"
    retries: int = 0
    statuses: list[str] = field(default_factory=list)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(el: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in el.iter() if _local(c.tag) == name]


def _first_text(el: ET.Element, name: str) -> str:
    found = _children(el, name)
    return (found[0].text or "").strip() if found else ""


def parse_xml(body: bytes, what: str) -> ET.Element:
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise BrokerError(
            f"StoreFront {what}: the answer is not XML ({exc}); is the URL the store's web site?"
        ) from None


@dataclass(frozen=True)
class Form:
    """An explicit-forms page: where to post, what it asks for, and what it says."""

    result: str  # more-info, update-credentials, fail, success
    postback: str
    state_context: str
    fields: tuple[tuple[str, str, str], ...]  # (id, credential type, button text)
    messages: tuple[str, ...]  # labels of type error / information / confirmation

    @classmethod
    def parse(cls, root: ET.Element) -> Form:
        fields = []
        messages = []
        for req in _children(root, "Requirement"):
            cred = next(iter(_children(req, "Credential")), None)
            cid = _first_text(cred, "ID") if cred is not None else ""
            ctype = _first_text(cred, "Type") if cred is not None else ""
            button = _first_text(req, "Button")
            label = next(iter(_children(req, "Label")), None)
            if label is not None and _first_text(label, "Type") in ("error", "information", "confirmation"):
                text = _first_text(label, "Text")
                if text:
                    messages.append(text)
            if cid:
                fields.append((cid, ctype, button))
        return cls(
            result=_first_text(root, "Result"),
            postback=_first_text(root, "PostBack"),
            state_context=_first_text(root, "StateContext"),
            fields=tuple(fields),
            messages=tuple(messages),
        )


class StoreFront:
    """One user's conversation with one store (``https://sf/Citrix/StoreWeb``)."""

    def __init__(
        self,
        store_url: str,
        *,
        verify_tls: bool = True,
        timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        require_tls(store_url, verify_tls, "connector.server")
        self.base = store_url.rstrip("/") + "/"
        self.timeout_s = timeout_s
        self.sleep = sleep
        self.verify_tls = verify_tls
        self.http = requests.Session()
        self.http.headers["X-Citrix-IsUsingHTTPS"] = "Yes" if self.base.startswith("https") else "No"
        self.http.headers["X-Requested-With"] = "XMLHttpRequest"

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> StoreFront:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the wire ---------------------------------------------------------------------------------

    def url(self, path: str) -> str:
        return urljoin(self.base, path.lstrip("/"))

    def _send(self, method: str, path: str, what: str, **kw: Any) -> requests.Response:
        csrf = self.http.cookies.get("CsrfToken")
        headers = dict(kw.pop("headers", {}))
        if csrf:
            headers["Csrf-Token"] = csrf
        try:
            r = self.http.request(
                method,
                self.url(path),
                headers=headers,
                timeout=self.timeout_s,
                # per call: a Session's verify=False is overridden by REQUESTS_CA_BUNDLE (psf/requests#3829)
                verify=self.verify_tls,
                **kw,
            )
        except requests.RequestException as exc:
            raise BrokerError(f"StoreFront {self.base}: {what} failed ({transport_error(exc)})") from None
        if len(r.content) > MAX_BODY_BYTES:
            raise BrokerError(f"StoreFront {self.base}: {what} answered {len(r.content)} bytes; refused")
        if r.status_code == 403:
            raise BrokerError(
                f"StoreFront {self.base}: {what} refused (403: the CSRF token or X-Citrix-IsUsingHTTPS was "
                "not accepted; http vs https in the store URL must match the site's)"
            )
        if r.status_code >= 400:
            raise BrokerError(f"StoreFront {self.base}: {what} answered HTTP {r.status_code}")
        return r

    # --- the steps --------------------------------------------------------------------------------

    def configuration(self) -> None:
        self._send("POST", "Home/Configuration", "Home/Configuration", data=b"")
        if not self.http.cookies.get("CsrfToken"):
            raise BrokerError(
                f"StoreFront {self.base}: Home/Configuration set no CsrfToken cookie; is this a "
                "Receiver for Web site URL (…/Citrix/<Store>Web)?"
            )

    def auth_methods(self) -> dict[str, str]:
        r = self._send("POST", "Authentication/GetAuthMethods", "GetAuthMethods", data=b"")
        root = parse_xml(r.content, "GetAuthMethods")
        return {m.get("name", ""): m.get("url", "") for m in _children(root, "method")}

    def login(self, username: str, password: str) -> str:
        """Explicit-forms logon; returns the AuthType. A refused logon raises with the store's words."""
        methods = self.auth_methods()
        url = methods.get("ExplicitForms")
        if not url:
            raise BrokerError(
                f"StoreFront {self.base}: the site offers no ExplicitForms (user name and password) logon, "
                f"only {sorted(methods) or 'none'}; enable it on the Receiver for Web site"
            )
        r = self._send("POST", url, "ExplicitAuth/Login", data=b"")
        form = Form.parse(parse_xml(r.content, "ExplicitAuth/Login"))
        for attempt in range(2):
            if not form.postback:
                raise BrokerError(f"StoreFront {self.base}: the logon form names no PostBack URL")
            data = self._fill(form, username, password)
            r = self._send("POST", form.postback, "ExplicitAuth/LoginAttempt", data=data)
            root = parse_xml(r.content, "LoginAttempt")
            if _local(root.tag) == "AuthenticationStatus":
                result = _first_text(root, "Result")
                if result == "success":
                    return _first_text(root, "AuthType") or "ExplicitForms"
                why = _first_text(root, "LogMessage") or result or "no result"
                raise BrokerError(f"StoreFront refused the logon of {username}: {why}")
            form = Form.parse(root)
            if form.result == "more-info" and attempt == 0 and not form.messages:
                continue  # a second page of the same conversation (e.g. a domain), answered once more
            break
        words = "; ".join(form.messages) or f"the store answered {form.result or 'another form'}"
        if form.result == "update-credentials":
            raise BrokerError(f"StoreFront refused the logon of {username}: {words} (change the password)")
        raise BrokerError(f"StoreFront refused the logon of {username}: {words}")

    @staticmethod
    def _fill(form: Form, username: str, password: str) -> dict[str, str]:
        data: dict[str, str] = {}
        for cid, ctype, button in form.fields:
            if ctype == "username" or cid == "username":
                data[cid] = username
            elif ctype == "password" or cid == "password":
                data[cid] = password
            elif ctype == "savecredentials":
                data[cid] = "false"
            elif button:
                data[cid] = button  # the button's own (localised) text, e.g. "Log On"
        data["StateContext"] = form.state_context
        return data

    def resources(self) -> list[Resource]:
        r = self._send(
            "POST",
            "Resources/List",
            "Resources/List",
            data={"format": "json", "resourceDetails": "Default"},
            headers={"Accept": "application/json"},
        )
        if r.headers.get("CitrixWebReceiver-Authenticate"):
            raise BrokerError(
                f"StoreFront {self.base}: Resources/List asks for a logon; the session is not logged on"
            )
        try:
            raw = r.json()
        except ValueError:
            raise BrokerError(f"StoreFront {self.base}: Resources/List did not answer JSON") from None
        return [Resource.from_json(x) for x in raw.get("resources") or [] if isinstance(x, dict)]

    def find(self, wanted: str) -> Resource:
        resources = self.resources()
        found = [x for x in resources if wanted in (x.name, x.id)]
        if not found:
            names = ", ".join(sorted(x.name for x in resources)[:10]) or "none"
            raise BrokerError(
                f"StoreFront {self.base} offers no resource named {wanted!r} (it offers: {names})"
            )
        if found[0].disabled:
            raise BrokerError(f"StoreFront {self.base}: the resource {wanted!r} is disabled")
        return found[0]

    def wait_ready(self, res: Resource, deadline_s: float, times: LaunchTimes) -> None:
        """Poll GetLaunchStatus until ``success``; ``retry`` (a desktop powering on) waits its pollTimeout."""
        path = res.launchstatusurl or res.launchurl.replace("LaunchIca", "GetLaunchStatus").removesuffix(
            ".ica"
        )
        end = time.monotonic() + deadline_s
        slept_s = 0.0  # the waits asked for: the deadline holds whatever clock ``sleep`` keeps
        while True:
            r = self._send("POST", path, "GetLaunchStatus", data={"displayNameDesktopTitle": res.name})
            status = _json_status(r, "GetLaunchStatus")
            state = str(status.get("status", ""))
            times.statuses.append(state)
            if state == "success":
                times.ready_ts = time.time()
                return
            if state != "retry":
                raise BrokerError(f"StoreFront could not launch {res.name!r}: {_launch_error(status)}")
            if times.ready_wait_start_ts is None:
                times.ready_wait_start_ts = time.time()
            times.retries += 1
            left = min(end - time.monotonic(), deadline_s - slept_s)
            if left <= 0:
                raise BrokerError(
                    f"StoreFront: {res.name!r} was not ready after {deadline_s:.0f} s ({times.retries} retries); "
                    "raise launch_wait_s or look at the desktop's power state"
                )
            poll = status.get("pollTimeout")  # seconds (the reference's example: 5)
            wait = min(float(poll) if isinstance(poll, int | float) and poll > 0 else 5.0, left)
            self.sleep(wait)
            slept_s += wait

    def ica(self, res: Resource) -> bytes:
        params = {
            "CsrfToken": self.http.cookies.get("CsrfToken", ""),
            "IsUsingHttps": "Yes" if self.base.startswith("https") else "No",
            "launchId": str(int(time.time() * 1000)),  # the reference: a fresh value defeats caches
            "displayNameDesktopTitle": res.name,
        }
        r = self._send("GET", res.launchurl, "LaunchIca", params=params)
        body = r.content
        if body.lstrip().startswith(b"{"):
            status = _json_status(r, "LaunchIca")
            raise BrokerError(f"StoreFront could not launch {res.name!r}: {_launch_error(status)}")
        if b"[ApplicationServers]" not in body and b"[WFClient]" not in body:
            raise BrokerError(
                f"StoreFront: LaunchIca for {res.name!r} answered something that is not an ICA file"
            )
        return body

    def logoff(self) -> None:
        try:
            self._send("POST", "Authentication/Logoff", "Logoff", data=b"")
        except BrokerError:
            pass  # the web session times out by itself; the desktop session is the launcher's to end


def _json_status(r: requests.Response, what: str) -> dict[str, Any]:
    try:
        raw = json.loads(r.content.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        raise BrokerError(f"StoreFront {what}: the answer is neither JSON nor an ICA file") from None
    if not isinstance(raw, dict):
        raise BrokerError(f"StoreFront {what}: the answer is not a JSON object")
    return raw


def _launch_error(status: dict[str, Any]) -> str:
    parts = [f"status {status.get('status') or 'missing'}"]
    if status.get("errorId"):
        parts.append(f"errorId {status['errorId']}")
    return ", ".join(parts)


def parse_ica(body: bytes) -> dict[str, dict[str, str]]:
    """The ICA file's sections (INI). Used to name the desktop it points at, never to change it."""
    out: dict[str, dict[str, str]] = {}
    section: dict[str, str] | None = None
    for raw in body.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = out.setdefault(line[1:-1], {})
        elif section is not None and "=" in line:
            k, v = line.split("=", 1)
            section[k.strip()] = v.strip()
    return out
