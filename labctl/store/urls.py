"""Store URLs as a person may see them: a password in one is refused, and never printed back.

    safe_url("postgresql://u:pw@db/x?sslmode=require&password=pw")  # 'postgresql://u:***@db/x?sslmode=require&password=***'
    check_no_password(url)                                          # BadInputError naming the safe form

A password belongs in ``PGPASSWORD`` or ``~/.pgpass``: a URL reaches shell history, CI logs, error
messages, ``run.json``'s pytest arguments and the ``runs`` listing. libpq takes it from three places
in a URL or DSN (``user:password@``, ``?password=`` and ``password=`` of a ``key=value`` string);
all three are masked and refused. ``sslpassword`` (a client key's pass phrase) is treated the same.
"""

from __future__ import annotations

import re

from labctl.errors import BadInputError

MASK = "***"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# password=... / sslpassword=... as a query parameter (URL) or a keyword (libpq DSN), quoted or not
_KEYWORD = re.compile(r"(?P<key>(?:^|[?&\s])(?:ssl)?password\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|[^&\s#]*)", re.I)


def safe_url(url: str) -> str:
    """``url`` with every password in it replaced by ``***`` (what messages and listings show)."""
    text = url
    scheme = _SCHEME.match(url)
    if scheme:  # user:password@host: the user info ends at the LAST @ of the authority, as libpq reads it
        rest = url[scheme.end() :]
        end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, tail = rest[:end], rest[end:]
        userinfo, at, host = authority.rpartition("@")
        if at and ":" in userinfo:
            text = f"{url[: scheme.end()]}{userinfo.split(':', 1)[0]}:{MASK}@{host}{tail}"
    return _KEYWORD.sub(lambda m: f"{m['key']}{MASK}", text)


def has_password(url: str) -> bool:
    return safe_url(url) != url


def check_no_password(url: str) -> str:
    """``url`` unless it carries a password (BadInputError, naming the URL with the password masked)."""
    if has_password(url):
        raise BadInputError(
            f"store URL {safe_url(url)} contains a password: remove it and set PGPASSWORD or a "
            "~/.pgpass line instead (a URL is printed, logged and kept in run.json)"
        )
    return url
