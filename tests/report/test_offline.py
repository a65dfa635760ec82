"""Post-processing that keeps a generated page from contacting anyone."""

from __future__ import annotations

import pytest

from labctl.report.offline import external_references, is_remote, make_offline

PAGE = """<!DOCTYPE html><html><head>
<link rel="icon" href="data:image/svg+xml,%3Csvg width='32'%3E">
<link rel="preconnect" href="https://fonts.gstatic.com">
<link rel=stylesheet href=//cdn.example.com/x.css>
<style>@import url("https://fonts.googleapis.com/css?family=Inter"); body{background:url('https://img.example.com/bg.png')}</style>
<script>window.allure = window.allure || {};</script>
<script   src="data:text/javascript;base64,YWxlcnQoMSk="></script>
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>
<script>
  window.dataLayer = window.dataLayer || [];
  function gtag(){dataLayer.push(arguments);}
  gtag('config', 'G-XXXX');
</script>
</head><body>
<img src='https://tracker.example.com/p.gif' alt="x">
<img srcset="a.png 1x, https://cdn.example.com/b.png 2x">
<iframe src="https://evil.example.com/"></iframe>
<a href="https://allurereport.org">Allure</a> <a href="figures.html">figures</a>
<a href="http://localhost:8080/x">local</a> <img src="http://127.0.0.1/x.png">
</body></html>"""


def test_is_remote() -> None:
    assert is_remote("https://www.googletagmanager.com/gtag/js")
    assert is_remote("//cdn.example.com/x.js")
    assert not is_remote("data:text/javascript;base64,AAAA")
    assert not is_remote("figures.html")
    assert not is_remote("http://localhost:8080/")
    assert not is_remote("http://127.0.0.1/x")


def test_make_offline_removes_every_external_reference() -> None:
    assert len(external_references(PAGE)) >= 8
    out = make_offline(PAGE)
    assert external_references(out) == []
    for gone in (
        "googletagmanager",
        "gtag(",
        "fonts.googleapis",
        "tracker.example",
        "evil.example",
        "cdn.example",
    ):
        assert gone not in out
    # what is local stays: inline code, data: scripts, the favicon, local links and the link text
    for kept in (
        "window.allure = window.allure",
        "data:text/javascript;base64,YWxlcnQoMSk=",
        "data:image/svg+xml",
        'href="figures.html"',
        ">Allure</a>",
        "http://localhost:8080/x",
    ):
        assert kept in out
    assert '<meta http-equiv="Content-Security-Policy"' in out and "default-src 'none'" in out
    assert make_offline(out) == out  # idempotent


@pytest.mark.parametrize(
    "tag",
    [
        '<script type="module" src="https://x.example/m.js"></script>',
        "<link href='https://x.example/a.css' rel='stylesheet'>",
        '<video poster="https://x.example/p.png"></video>',
        '<object data="https://x.example/o.swf"></object>',
        '<form action="https://x.example/post"></form>',
    ],
)
def test_each_kind_of_loader(tag: str) -> None:
    page = f"<html><head></head><body>{tag}</body></html>"
    assert external_references(page)
    assert external_references(make_offline(page)) == []
