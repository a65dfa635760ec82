"""Redaction: nothing a run writes may hold a secret value.

Credential *references* (``env:BMC_PASSWORD``) are harmless and stay. What must never reach a run
folder, a log or a report is the *value* behind one: an error message that echoes a URL with a
password, a device that answers with its credentials, a parameter someone pasted a token into.
A :class:`Redactor` knows every value the lab's references resolve to (and every value in the
secrets file) and replaces each with ``***`` wherever it appears; it also masks passwords written
inside URLs and values under password-like keys. Every writer of the run folder (run metadata,
recorder, report) passes its text or JSON through one.

    redactor = Redactor.from_lab(lab)
    path.write_text(redactor.text(message))
    json.dump(redactor.obj(detail), f)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from labctl.inventory.credentials import (
    lab_credential_refs,
    plain_credentials,
    secret_values,
    secrets_file_values,
)

if TYPE_CHECKING:
    from labctl.inventory.model import Lab

MASK = "***"

# scheme://user:password@host -> scheme://user:***@host
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)(?P<pw>[^@\s/]+)(?P<at>@)")
# keys whose string value is a secret unless it is a reference (env:NAME / secret:KEY)
# (not a bare "pass": criteria bands are written {"pass": ..., "marginal": ..., "fail": ...})
_SENSITIVE_KEY = re.compile(
    r"(^|[_.-])(password|passwd|secret|token|api[_-]?key|private[_-]?key)$", re.IGNORECASE
)
_REFERENCE = re.compile(r"^(env|secret):[A-Za-z_][A-Za-z0-9_.-]*$")
# ?password=... / &token=... in a URL or a DSN's keyword form (password=... in "host=x password=y")
_QUERY_SECRET = re.compile(
    r"(?P<head>(?:[?&;\s]|^)(?:password|passwd|pwd|secret|token|api[_-]?key|sslpassword)=)(?P<value>[^&\s#;]+)",
    re.IGNORECASE,
)


def redact_patterns(s: str) -> str:
    """``s`` with what *looks* like a credential masked, without knowing any secret value: a
    password inside a URL (``scheme://user:***@host``) and password-like query or DSN keywords
    (``?password=***``). For text about to reach a terminal from anywhere (the CLI's error lines,
    a store URL echoed back), where no lab's secrets are at hand."""
    s = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}{m['at']}", s)
    return _QUERY_SECRET.sub(lambda m: f"{m['head']}{MASK}", s)


class Redactor:
    """Replaces known secret values with ``***`` in text and in JSON-like objects. Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.add(*secrets)

    @classmethod
    def from_lab(cls, lab: Lab) -> Redactor:
        """Every value the lab's credential references resolve to now, plus the secrets file's, plus
        any password written as a value instead of a reference (validation refuses one; a lab
        built another way may still hold it, and it must not reach a single output)."""
        return cls(
            [*secret_values(lab_credential_refs(lab)), *secrets_file_values(), *plain_credentials(lab)]
        )

    def add(self, *secrets: str) -> None:
        """Learn more secret values (e.g. credentials the simulated lab generated after start)."""
        with self._lock:
            self._secrets.update(s for s in secrets if s)
            # longest first, so a secret that contains another is masked whole
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None

    def __len__(self) -> int:
        return len(self._secrets)

    def text(self, s: str) -> str:
        """``s`` with every known secret value, every password inside a URL and every
        password-like URL or DSN keyword masked."""
        pattern = self._pattern
        if pattern is not None:
            s = pattern.sub(MASK, s)
        return redact_patterns(s)

    def obj(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, tuples, scalars) with secrets masked.

        Strings are masked as by :meth:`text` (keys too); a string under a password-like key is
        masked whole unless it is a credential reference. Other scalars are returned as they are.
        """
        return self._obj(value, sensitive=False)

    def _obj(self, value: Any, *, sensitive: bool) -> Any:
        if isinstance(value, str):
            if sensitive and value and not _REFERENCE.match(value):
                return MASK
            return self.text(value)
        if isinstance(value, dict):
            return {
                (self.text(k) if isinstance(k, str) else k): self._obj(
                    v, sensitive=isinstance(k, str) and bool(_SENSITIVE_KEY.search(k))
                )
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._obj(v, sensitive=sensitive) for v in value]
        return value
