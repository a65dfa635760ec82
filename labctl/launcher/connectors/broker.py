"""What a broker says about one logon, in the launcher's waterfall phases, and what its clients share.

A broker's API (Horizon's REST API, Citrix's Monitor service) knows parts of a logon the launcher
cannot see: the machine's power-on, the profile load, group policy. Its clients turn the vendor's
fields into ``BrokerLogon``: one ``BrokerSpan`` per waterfall phase the broker timed, and for every
other phase the reason it has none. Times are epoch seconds (UTC); each span names the vendor's
fields it came from, so a report can say where a number was read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

MAX_SECRET_BYTES = 64 * 1024
# The launcher's logon waterfall phases, in order (labctl/launcher/waterfall.py fills them), named
# here where the brokers' clients, which the waterfall imports, can name them.
PHASES = (
    "brokering",
    "machine_ready",
    "protocol_connect",
    "authentication",
    "profile_load",
    "group_policy",
    "shell_ready",
    "first_operation",
)


class BrokerError(RuntimeError):
    """One line naming the broker, the call and the fix; never a credential."""


@dataclass(frozen=True)
class BrokerSpan:
    duration_s: float
    source: str  # the vendor's field(s) the span was read from
    start_ts: float | None = None
    end_ts: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"duration_s": round(self.duration_s, 3), "source": self.source}
        if self.start_ts is not None:
            out["start_ts"] = self.start_ts
        if self.end_ts is not None:
            out["end_ts"] = self.end_ts
        return out


@dataclass(frozen=True)
class BrokerLogon:
    broker: str  # "citrix-monitor", "horizon-rest"
    session: str  # the broker's own key for the session
    spans: dict[str, BrokerSpan] = field(default_factory=dict)  # waterfall phase -> span
    unmeasured: dict[str, str] = field(default_factory=dict)  # waterfall phase -> why not
    extra: dict[str, Any] = field(default_factory=dict)  # what the broker gives beyond the phases

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "session": self.session,
            "spans": {k: v.as_dict() for k, v in self.spans.items()},
            "unmeasured": dict(self.unmeasured),
            **self.extra,
        }


def require_tls(url: str, verify_tls: bool, what: str) -> None:
    """Credentials cross this connection (a user's password, an API account's): plain http only
    when the configuration says insecure."""
    if url.lower().startswith("http://") and verify_tls:
        raise BrokerError(
            f"{what}: {url} is plain http, so passwords would cross the network in clear; "
            "use https, or set verify_tls: false to accept it (insecure)"
        )


def transport_error(exc: requests.RequestException) -> str:
    """Why a call did not reach its answer, in a lab engineer's words (no URL parameters, no secrets)."""
    if isinstance(exc, requests.exceptions.SSLError):
        return (
            "its TLS certificate is not trusted: add its CA to the launcher's trust store "
            "(REQUESTS_CA_BUNDLE), or set verify_tls: false for a lab broker only (insecure)"
        )
    if isinstance(exc, requests.exceptions.Timeout):
        return "no answer within the timeout"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return "the connection failed (name, address or port?)"
    return type(exc).__name__


def resolve_secret(ref: str, what: str) -> str:
    """A credential from its reference: ``env:NAME`` or ``file:/path`` (owner-only). Never logged."""
    if ref.startswith("env:"):
        name = ref[4:]
        value = os.environ.get(name)
        if not value:
            raise BrokerError(f"{what}: the environment variable {name} is not set; set it for the launcher")
        return value
    if ref.startswith("file:"):
        p = Path(ref[5:])
        try:
            st = p.stat()
        except OSError as exc:
            raise BrokerError(f"{what}: cannot read {p} ({exc.strerror}); give an existing file") from None
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SECRET_BYTES:
            raise BrokerError(f"{what}: {p} is not a small regular file; give the file holding the secret")
        if os.name == "posix" and st.st_mode & 0o077:
            raise BrokerError(f"{what}: {p} is readable by others; chmod 600 {p}")
        return p.read_text(encoding="utf-8").strip()
    raise BrokerError(f"{what}: secret must be a reference (env:NAME or file:/path), not the value itself")


def epoch_ms(value: Any, what: str) -> float | None:
    """Horizon's times: epoch *milliseconds* (its API reference, e.g. SessionInfo.start_time)."""
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise BrokerError(f"{what}: expected epoch milliseconds, got {value!r}")
    return float(value) / 1000.0


def utc_time(value: Any, what: str) -> float | None:
    """An ISO 8601 time the vendor documents as UTC (Citrix Monitor: Edm.DateTimeOffset with ``Z``;
    its older endpoints print no zone at all). A time with an offset keeps it; one without is UTC,
    never the launcher's local time."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BrokerError(f"{what}: expected an ISO 8601 time, got {value!r}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise BrokerError(f"{what}: {value!r} is not an ISO 8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.timestamp()
