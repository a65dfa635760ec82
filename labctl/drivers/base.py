"""What every driver shares: retry with backoff, TLS settings from the inventory, endpoint names.

Drivers own their timeouts and retries; this module keeps the policy in one place so a Redfish
503 and a Unity 503 back off the same way, and so TLS means the same thing for every HTTP client.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import certifi
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from labctl.inventory.model import Tls, TlsMode

log = logging.getLogger(__name__)

# requests reads these when a request does not say what to verify against; we always say.
CA_BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@dataclass(frozen=True)
class Backoff:
    """Bounded retries: ``attempts`` tries in all, exponential delay with jitter, capped.

    A server's ``Retry-After`` wins over the computed delay (it knows when it will have room),
    but is capped too, so a BMC asking for an hour cannot stall a storm.
    """

    attempts: int = 4
    base_s: float = 0.5
    factor: float = 2.0
    max_s: float = 10.0
    jitter: float = 0.1  # +/- share of the delay, so 100 clients do not retry in lock step

    def delay(
        self, attempt: int, retry_after_s: float | None = None, rng: random.Random | None = None
    ) -> float:
        """The pause before try number ``attempt + 1`` (``attempt`` counts from 1)."""
        if retry_after_s is not None and retry_after_s >= 0:
            return min(retry_after_s, self.max_s)
        d = min(self.base_s * self.factor ** max(0, attempt - 1), self.max_s)
        r = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, d * (1 + r))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: either delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def requests_verify(tls: Tls) -> bool | str:
    """The ``verify=`` value for requests, from the inventory's TLS settings.

    Passed explicitly on every request: requests lets $REQUESTS_CA_BUNDLE replace ``verify`` when
    a request leaves it unset (even over ``session.verify = False``), so an endpoint marked
    insecure or pinned to its own CA file would silently follow the environment instead.
    ``verify`` without a ``ca_file`` means the default trust store; $REQUESTS_CA_BUNDLE (or
    $CURL_CA_BUNDLE) still names that store when set, as it does for requests itself.
    """
    if tls.mode is TlsMode.INSECURE:
        return False
    if tls.ca_file:
        return tls.ca_file
    for var in CA_BUNDLE_VARS:
        path = os.environ.get(var)
        if path:
            return path
    return default_ca_bundle()


def default_ca_bundle() -> str:
    return str(certifi.where())


def ssl_context(tls: Tls) -> ssl.SSLContext:
    """An ``ssl.SSLContext`` for libraries that take one (pyVmomi, raw sockets)."""
    if tls.mode is TlsMode.INSECURE:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if tls.ca_file:
        return ssl.create_default_context(cafile=tls.ca_file)
    verify = requests_verify(tls)
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return ssl.create_default_context()


_CONTEXTS: dict[tuple[str, str], ssl.SSLContext] = {}
_CONTEXTS_LOCK = threading.Lock()


def shared_ssl_context(tls: Tls) -> ssl.SSLContext:
    """One ``SSLContext`` per TLS setting, shared by every connection that uses it.

    Building a context loads a CA store (tens of milliseconds of CPU each time); urllib3 would
    build one per connection pool, i.e. per BMC, which is what limits a 100-BMC storm.
    """
    verify = requests_verify(tls)
    key = (tls.mode.value, verify if isinstance(verify, str) else "")
    with _CONTEXTS_LOCK:
        ctx = _CONTEXTS.get(key)
        if ctx is None:
            ctx = _CONTEXTS[key] = ssl_context(tls)
        return ctx


class _InventoryInsecurePool(HTTPSConnectionPool):
    """HTTPS to an endpoint the inventory marks ``tls: {mode: insecure}``, without urllib3's
    InsecureRequestWarning on every request: the choice was made, and said once, in the inventory
    (:func:`note_insecure` logs it once per endpoint). Every other endpoint keeps the warning."""

    def _validate_conn(self, conn: HTTPConnection) -> None:  # type: ignore[override]
        HTTPConnectionPool._validate_conn(self, conn)  # the HTTPS override only adds the warning
        if conn.is_closed:
            conn.connect()


_NOTED_INSECURE: set[str] = set()
_NOTED_LOCK = threading.Lock()


def note_insecure(endpoint: str) -> None:
    """Log once per endpoint that its certificate is not verified (the inventory says so)."""
    with _NOTED_LOCK:
        if endpoint in _NOTED_INSECURE:
            return
        _NOTED_INSECURE.add(endpoint)
    log.info("%s: TLS certificate not verified (tls: {mode: insecure} in the inventory)", endpoint)


class TlsAdapter(HTTPAdapter):
    """A requests adapter whose connection pools use :func:`shared_ssl_context` for ``tls``.

    requests still passes ``verify`` on every request (``False`` or a CA path, never left to the
    environment), and urllib3 applies it to the context; the shared context only saves loading
    the CA store for every new connection pool. For an endpoint marked insecure the pools do not
    warn per request; ``endpoint`` (the name messages use) is logged once instead.
    """

    def __init__(self, tls: Tls, endpoint: str = "", **kwargs: Any):
        self._ctx = shared_ssl_context(tls)
        self._insecure = tls.mode is TlsMode.INSECURE
        if self._insecure:
            note_insecure(endpoint or "an endpoint")
        super().__init__(**kwargs)

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        pool_kwargs["ssl_context"] = self._ctx
        super().init_poolmanager(connections, maxsize, block=block, **pool_kwargs)
        if self._insecure:
            # this adapter's pool manager only: a copy, never urllib3's module-wide table
            classes = dict(self.poolmanager.pool_classes_by_scheme)
            classes["https"] = _InventoryInsecurePool
            self.poolmanager.pool_classes_by_scheme = classes


def tls_fix(tls: Tls, what: str) -> str:
    """What to tell the user when a TLS handshake fails."""
    if tls.ca_file:
        return f"check that {tls.ca_file} holds the CA that signed {what}'s certificate"
    return (
        f"give {what} a certificate from a trusted CA, set tls: {{ca_file: <pem>}} for it, "
        "or mark it tls: {mode: insecure} in the inventory if it has a self-signed certificate"
    )


T = TypeVar("T")


class KeyedLimits:
    """One bounded semaphore per key (a BMC URL, a vCenter), shared by every client of that key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sems: dict[str, threading.BoundedSemaphore] = {}

    def get(self, key: str, limit: int) -> threading.BoundedSemaphore:
        with self._lock:
            sem = self._sems.get(key)
            if sem is None:
                sem = self._sems[key] = threading.BoundedSemaphore(max(1, limit))
            return sem


def retry_call(
    fn: Callable[[], T],
    *,
    backoff: Backoff,
    should_retry: Callable[[BaseException], float | bool | None],
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Call ``fn`` until it succeeds or ``backoff.attempts`` are spent.

    ``should_retry(exc)`` returns False to re-raise at once, True to retry after the computed
    delay, or a number of seconds (a server's Retry-After) to retry after that.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            verdict = should_retry(exc)
            if verdict is False or attempt >= backoff.attempts:
                raise
            retry_after = None if verdict is True else float(verdict) if verdict is not None else None
            sleep(backoff.delay(attempt, retry_after))
