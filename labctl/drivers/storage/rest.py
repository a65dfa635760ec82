"""One HTTPS session to an array's management REST API, shared by the REST backends.

What Unity, PowerStore and the SC Data Collector have in common: a ``requests`` session that
ignores proxy/.netrc settings from the environment, TLS verified as the inventory says (``verify``
passed on every request so $REQUESTS_CA_BUNDLE cannot override it), a timeout on every call,
503 backed off honouring Retry-After, an optional CSRF token the array hands out in a response
header and wants echoed, and one fresh login and one retry when the array says the session
expired (each API says it its own way: Unity and SC answer 401, PowerStore 403).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from labctl.drivers.base import Backoff, TlsAdapter, parse_retry_after, requests_verify, tls_fix
from labctl.drivers.storage.base import StorageDriver
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import StorageArray


class StorageApiError(EndpointError):
    """A storage REST call failed; ``status`` is the HTTP status when there was an answer."""

    def __init__(self, endpoint: str, action: str, reason: str, fix: str = "", status: int | None = None):
        super().__init__(endpoint, action, reason, fix)
        self.status = status


def short(exc: BaseException) -> str:
    """The useful part of a requests/urllib3 error message."""
    text = str(exc)
    if "Caused by" in text:
        text = text.split("Caused by", 1)[1].strip(" ()")
    return text[:200]


@dataclass
class RestSession:
    """The HTTP side of one array's driver; the driver supplies how to log in and read errors."""

    array: StorageArray
    endpoint: str
    base_url: str  # scheme://host:port plus the API's prefix, no trailing slash
    headers: dict[str, str]
    login: Callable[[], None]  # logs in (the driver's own exchange); raises on refusal
    error_message: Callable[[requests.Response], str]
    error_cls: type[StorageApiError] = StorageApiError
    expired_status: tuple[int, ...] = (401,)  # answers meaning "log in again"
    token_header: str | None = None  # response header carrying a CSRF token to echo
    token_methods: tuple[str, ...] = ("POST", "DELETE", "PUT", "PATCH")  # requests that echo it
    timeout_s: float = 15.0
    backoff: Backoff = field(default_factory=lambda: Backoff(attempts=4, base_s=0.5, max_s=8.0))
    sleep: Callable[[float], object] = time.sleep
    token: str | None = None
    logins: int = 0  # how many times we logged in (re-logins after expiry included)
    lock: threading.RLock = field(default_factory=threading.RLock)
    _session: requests.Session | None = None

    # --- lifecycle -----------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._session is not None

    def connect(self) -> None:
        """A fresh requests session (no login yet)."""
        with self.lock:
            if self._session is None:
                s = requests.Session()
                s.trust_env = False
                s.mount("https://", TlsAdapter(self.array.tls, self.endpoint))
                s.headers.update(self.headers)
                self._session = s

    def drop(self) -> None:
        with self.lock:
            s, self._session = self._session, None
            self.token = None
            if s is not None:
                s.close()

    def clear_cookies(self) -> None:
        if self._session is not None:
            self._session.cookies.clear()
        self.token = None

    # --- requests ------------------------------------------------------------------------------
    def send(self, method: str, path: str, action: str, **kw: Any) -> requests.Response:
        """One exchange with timeout, explicit TLS verification and 503 backoff; no re-login."""
        s = self._session
        if s is None:
            raise self.error_cls(self.endpoint, action, "not connected", "call open() first")
        headers = dict(kw.pop("headers", {}) or {})
        if self.token_header and self.token and method in self.token_methods:
            headers[self.token_header] = self.token
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = s.request(
                    method,
                    self.base_url + path,
                    headers=headers,
                    timeout=self.timeout_s,
                    verify=requests_verify(self.array.tls),
                    allow_redirects=False,
                    **kw,
                )
            except requests.exceptions.SSLError as exc:
                raise self.error_cls(
                    self.endpoint,
                    action,
                    f"TLS verification failed: {short(exc)}",
                    tls_fix(self.array.tls, "the array"),
                ) from None
            except requests.exceptions.Timeout:
                raise EndpointTimeout(
                    self.endpoint,
                    action,
                    f"no answer within {self.timeout_s:g} s",
                    "check the array's management port",
                ) from None
            except requests.RequestException as exc:
                raise self.error_cls(
                    self.endpoint,
                    action,
                    f"cannot connect: {short(exc)}",
                    "check the array URL in the inventory and that its management service is up",
                ) from None
            if resp.status_code == 503 and attempt < self.backoff.attempts:
                self.sleep(self.backoff.delay(attempt, parse_retry_after(resp.headers.get("Retry-After"))))
                continue
            if self.token_header:
                token = resp.headers.get(self.token_header)
                if token and resp.status_code < 400:
                    self.token = token  # the array may rotate it; the newest wins
            return resp

    def request(self, method: str, path: str, action: str, **kw: Any) -> requests.Response:
        """A request in the session; an 'expired' answer means log in once more and retry once."""
        with self.lock:
            if self._session is None:
                raise self.error_cls(self.endpoint, action, "not connected", "call open() first")
            resp = self.send(method, path, action, **kw)
            if resp.status_code in self.expired_status:
                self.login()
                resp = self.send(method, path, action, **kw)
                if resp.status_code in self.expired_status:
                    raise self.error_cls(
                        self.endpoint,
                        action,
                        f"the array rejected a fresh session ({resp.status_code})",
                        f"check the credential {self.array.password}",
                        status=resp.status_code,
                    )
            if resp.status_code == 503:
                raise self.error_cls(
                    self.endpoint,
                    action,
                    f"service unavailable (503) after {self.backoff.attempts} attempts",
                    "the array is busy; retry later",
                    status=503,
                )
            return resp

    def json(self, resp: requests.Response, action: str) -> Any:
        """The JSON of a response; a body that is not JSON is an error naming the array."""
        try:
            return resp.json()
        except ValueError:
            raise self.error_cls(
                self.endpoint,
                action,
                f"HTTP {resp.status_code} with a body that is not JSON: {(resp.text or '')[:120]!r}",
                "check that the URL points at the array's management REST API",
                status=resp.status_code,
            ) from None

    def call(self, method: str, path: str, action: str, ok: tuple[int, ...] = (200,), **kw: Any) -> Any:
        """A request whose answer must have one of the ``ok`` statuses; returns its JSON (or None)."""
        resp = self.request(method, path, action, **kw)
        if resp.status_code not in ok:
            raise self.status_error(action, resp)
        return self.json(resp, action) if resp.content else None

    def status_error(self, action: str, resp: requests.Response) -> StorageApiError:
        return self.error_cls(
            self.endpoint,
            action,
            f"HTTP {resp.status_code}: {self.error_message(resp)}",
            status=resp.status_code,
        )

    def refused(self, action: str, resp: requests.Response) -> StorageApiError:
        """A login the array refused: names the user and the credential reference, never its value."""
        return self.error_cls(
            self.endpoint,
            action,
            f"credentials rejected for user {self.array.user!r} ({resp.status_code})",
            f"check the user and the credential {self.array.password}",
            status=resp.status_code,
        )


class RestDriver(StorageDriver):
    """What the REST backends' drivers share: open = connect and log in, the login count, close."""

    http: RestSession

    @property
    def logins(self) -> int:
        return self.http.logins

    def open(self) -> RestDriver:
        with self.http.lock:
            self.http.connect()
            try:
                self._login()
            except BaseException:
                self.http.drop()
                raise
            return self

    @property
    def is_open(self) -> bool:
        return self.http.connected and self.http.logins > 0

    def _login(self) -> None:
        """Log in once (each API its own way); raises on refusal."""
        raise NotImplementedError

    def basic_login(self, method: str, path: str, **kw: Any) -> requests.Response:
        """A login exchange with basic auth: 401 is refused credentials, anything but 200 an error."""
        password = resolve_credential(self.array.password, self.endpoint)
        self.http.clear_cookies()
        resp = self.http.send(method, path, "log in", auth=(self.array.user, password), **kw)
        if resp.status_code == 401:
            raise self.http.refused("log in", resp)
        if resp.status_code != 200:
            raise self.http.status_error("log in", resp)
        self.http.logins += 1
        return resp

    def close(self) -> None:
        with self.http.lock:
            if not self.http.connected:
                return
            try:
                self.stop_metrics()
            except Exception:
                pass
            try:
                self._logout()
            except Exception:
                pass
            self.http.drop()

    def _logout(self) -> None:
        """End the session on the array (best effort)."""
