"""Login sessions of a simulated array's REST API: cookie, CSRF token, idle timeout, forced expiry.

Unity, PowerStore and the SC Data Collector all log a client in with basic auth, hand back a session
cookie (and Unity and PowerStore a CSRF token in a response header) and end the session after an
idle time. Fault ``storage_token_expiry``: a session lives ``after_s`` lab seconds
(``default_lifetime_s`` when 0); the first request after that is refused, each API in its own way.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass
from enum import Enum

from labctl.errors import MissingCredentialError
from labctl.inventory.faults import FaultKind
from labctl.inventory.model import StorageArray
from labctl.sim.endpoint import SimContext
from labctl.sim.http import Request, credentials_match

log = logging.getLogger(__name__)


def array_password(ctx: SimContext, array: StorageArray) -> str:
    """The password (or SNMP community / key) the simulated array accepts for its credential."""
    password = ctx.credential(array.password)
    if password is None:
        raise MissingCredentialError(
            array.password, f"simulated array {array.name}", "the simulator has no value for it"
        )
    return password


@dataclass
class Session:
    cookie: str
    csrf: str
    user: str
    created_lab_s: float
    last_used_lab_s: float


class SessionState(Enum):
    OK = "ok"
    NEW = "new"  # a login with basic auth made a new session
    EXPIRED = "expired"  # the cookie's session ended (fault storage_token_expiry)
    UNAUTHORIZED = "unauthorized"  # no session cookie and no valid basic auth


class SessionBook:
    def __init__(
        self,
        ctx: SimContext,
        array: StorageArray,
        cookie_name: str,
        *,
        idle_timeout_s: float,
        default_lifetime_s: float,
    ):
        self.ctx = ctx
        self.array = array
        self.cookie_name = cookie_name
        self.idle_timeout_s = idle_timeout_s
        self.default_lifetime_s = default_lifetime_s
        self._user = array.user
        self._password = array_password(ctx, array)
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def lifetime(self) -> float | None:
        spec = self.ctx.faults.spec(FaultKind.STORAGE_TOKEN_EXPIRY, self.array.name)
        if spec is None:
            return None
        return spec.after_s or self.default_lifetime_s

    def resolve(self, req: Request, *, allow_login: bool = True) -> tuple[Session | None, SessionState]:
        """The request's session (its cookie), or a new one from basic auth."""
        now = self.ctx.clock.now()
        cookie = req.cookies.get(self.cookie_name)
        with self._lock:
            for sid in [
                s.cookie for s in self._sessions.values() if now - s.last_used_lab_s > self.idle_timeout_s
            ]:
                del self._sessions[sid]
            s = self._sessions.get(cookie) if cookie else None
            if s is not None:
                lifetime = self.lifetime()
                if lifetime is not None and now - s.created_lab_s >= lifetime:
                    del self._sessions[s.cookie]
                    log.info("%s: session expired (fault storage_token_expiry)", self.array.name)
                    return None, SessionState.EXPIRED
                s.last_used_lab_s = now
                return s, SessionState.OK
        if not allow_login:
            return None, SessionState.UNAUTHORIZED
        basic = req.basic_auth()
        if basic is None or not credentials_match(*basic, self._user, self._password):
            return None, SessionState.UNAUTHORIZED
        s = Session(secrets.token_urlsafe(24), secrets.token_urlsafe(24), self._user, now, now)
        with self._lock:
            self._sessions[s.cookie] = s
        return s, SessionState.NEW

    def end(self, s: Session) -> None:
        with self._lock:
            self._sessions.pop(s.cookie, None)

    def count(self) -> int:
        with self._lock:
            return len(self._sessions)

    def set_cookie(self, s: Session) -> tuple[str, str]:
        return ("Set-Cookie", f"{self.cookie_name}={s.cookie}; Path=/; Secure; HttpOnly")

    def clear_cookie(self) -> tuple[str, str]:
        return ("Set-Cookie", f"{self.cookie_name}=; Path=/; Max-Age=0; Secure; HttpOnly")
