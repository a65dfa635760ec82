"""Make a generated HTML page self-contained: it must not contact anyone when opened.

Allure's single-file report inlines its code and data as ``data:`` URLs but also carries an
analytics loader (``<script async src="https://www.googletagmanager.com/...">``) and its inline
``gtag(...)`` set-up. :func:`make_offline` removes every element that would load something from
another host (scripts, stylesheets, images, frames, media, preconnects), the analytics set-up,
CSS ``url(...)``/``@import`` of remote files, and the ``href`` of links to other hosts (the text
stays). It then adds a Content-Security-Policy that lets the page load nothing from the network
at all, so even code we did not see cannot phone home.

:func:`external_references` lists what is left; the report build checks it is empty.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}

# Everything from the page itself: inline code and styles, data:/blob: URLs. No network.
CSP = (
    "default-src 'none'; "
    "script-src 'unsafe-inline' 'unsafe-eval' data: blob:; "
    "style-src 'unsafe-inline' data: blob:; "
    "img-src data: blob:; font-src data: blob:; media-src data: blob:; "
    "connect-src data: blob:; frame-src data: blob:; worker-src data: blob:; "
    "form-action 'none'; base-uri 'self'"
)

_URL_ATTRS = ("src", "href", "srcset", "poster", "data", "action", "formaction", "background")
_ATTR = re.compile(
    r"""\s(?P<name>"""
    + "|".join(_URL_ATTRS)
    + r""")\s*=\s*(?:"(?P<v1>[^"]*)"|'(?P<v2>[^']*)'|(?P<v3>[^\s>"']+))""",
    re.I,
)


def _value(m: re.Match[str]) -> str:
    return (
        m.group("v1")
        if m.group("v1") is not None
        else (m.group("v2") if m.group("v2") is not None else m.group("v3"))
    )


_LOADING_TAGS = (
    "script",
    "link",
    "img",
    "iframe",
    "frame",
    "embed",
    "object",
    "source",
    "audio",
    "video",
    "track",
    "input",
    "image",
    "use",
)
_CONTAINER_TAGS = ("script", "iframe", "object", "audio", "video", "frame")
_ANALYTICS = re.compile(r"gtag\s*\(|googletagmanager|google-analytics|dataLayer\s*=|_gaq|\bga\s*\(", re.I)
_CSS_URL = re.compile(r"""url\(\s*(["']?)(?P<u>(?:https?:)?//[^)"']+)\1\s*\)""", re.I)
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*["']?(?:https?:)?//[^;]+;""", re.I)


def is_remote(url: str) -> bool:
    """An http(s) or protocol-relative URL to a host other than this machine."""
    u = url.strip()
    low = u.lower()
    if not (low.startswith(("http://", "https://", "//"))):
        return False
    host = (urlsplit(u if not low.startswith("//") else "http:" + u).hostname or "").lower()
    return host not in LOCAL_HOSTS and not host.startswith("127.")


def _tag_urls(tag: str) -> list[tuple[str, str]]:
    return [(m.group("name").lower(), _value(m)) for m in _ATTR.finditer(tag)]


def _remote_in(name: str, value: str) -> bool:
    if name == "srcset":
        return any(is_remote(part.strip().split(" ")[0]) for part in value.split(",") if part.strip())
    return is_remote(value)


def external_references(html: str) -> list[str]:
    """Every remote URL left in a URL-bearing attribute or a CSS ``url()`` of the page."""
    found = []
    for m in re.finditer(r"<[a-zA-Z][^>]*>", html):
        for name, value in _tag_urls(m.group(0)):
            if _remote_in(name, value):
                found.append(f"{name}={value}")
    for m in _CSS_URL.finditer(html):
        found.append(f"url({m.group('u')})")
    return found


def make_offline(html: str) -> str:
    """The page with every reference to another host removed and a no-network CSP added."""

    # 1. elements that load from another host, with their content for script-like containers
    def drop_container(m: re.Match[str]) -> str:
        return "" if any(_remote_in(n, v) for n, v in _tag_urls(m.group("open"))) else m.group(0)

    for tag in _CONTAINER_TAGS:
        html = re.sub(
            rf"(?P<open><{tag}\b[^>]*>)(?P<body>.*?)</{tag}\s*>", drop_container, html, flags=re.I | re.S
        )

    # 2. inline analytics set-up (gtag/dataLayer)
    def drop_analytics(m: re.Match[str]) -> str:
        return "" if _ANALYTICS.search(m.group("body")) else m.group(0)

    html = re.sub(
        r"(?P<open><script\b[^>]*>)(?P<body>.*?)</script\s*>", drop_analytics, html, flags=re.I | re.S
    )

    # 3. void / remaining tags: drop loaders pointing elsewhere, strip remote hrefs of anything else
    def fix_tag(m: re.Match[str]) -> str:
        tag = m.group(0)
        name = m.group("name").lower()
        urls = _tag_urls(tag)
        if not any(_remote_in(n, v) for n, v in urls):
            return tag
        if name in _LOADING_TAGS:
            return ""
        return _ATTR.sub(lambda a: "" if _remote_in(a.group("name").lower(), _value(a)) else a.group(0), tag)

    html = re.sub(r"<(?P<name>[a-zA-Z][a-zA-Z0-9-]*)\b[^>]*>", fix_tag, html)

    # 4. remote CSS
    html = _CSS_IMPORT.sub("", html)
    html = _CSS_URL.sub("url()", html)

    # 5. belt and braces: the browser may load nothing from the network
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    if "Content-Security-Policy" not in html:
        head = re.search(r"<head\b[^>]*>", html, re.I)
        if head:
            html = html[: head.end()] + "\n    " + meta + html[head.end() :]
        else:
            html = meta + html
    return html
