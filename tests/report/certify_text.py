"""The certification document's HTML as plain text, for assertions on what a reader sees."""

from __future__ import annotations

import html
import re


def cover_text(page: str) -> str:
    """The first page of the HTML (title, verdict, executive summary) as plain text."""
    found = re.search(r'<section class="cover">(.*?)</section>', page, re.S)
    assert found, "the document has no first page (section.cover)"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def body_text(page: str) -> str:
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
