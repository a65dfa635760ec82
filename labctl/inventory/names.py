"""What a name in an inventory may be: machine, group, network, lab, vCenter, array and share
names end up as host names, command-line arguments, shell words, file and folder names, cell ids
and URL paths, so they are restricted to what all of those accept unquoted.

A name is 1 to 63 characters (a DNS label's limit) of ASCII letters, digits, ``-``, ``_`` and
``.``, starts and ends with a letter or a digit, and has no ``..``. That refuses quotes, ``;``,
``$()``, back-ticks, spaces, newlines, a leading dash (read as an option), path separators and
look-alike Unicode letters. A name that breaks the rule gets a suggestion built from it.
"""

from __future__ import annotations

import re

MAX_NAME = 63
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
RULE = "letters, digits, '-', '_' and '.', starting and ending with a letter or digit, at most 63"


def name_problem(name: str) -> str | None:
    """Why ``name`` is not allowed (one short phrase), or None."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long"
    bad = next((c for c in name if not (c.isascii() and (c.isalnum() or c in "-_."))), None)
    if bad is not None:
        return f"has {_shown_char(bad)}"
    if ".." in name:
        return "has '..'"
    if not _NAME.match(name):
        return f"starts or ends with {_shown_char(name[0] if not name[0].isalnum() else name[-1])}"
    return None


def suggest(name: str) -> str:
    """A name close to ``name`` that follows the rule (``pvs"01`` -> ``pvs-01``)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", name.encode("ascii", "ignore").decode())
    out = re.sub(r"\.{2,}", ".", out).strip("-_.")[:MAX_NAME].strip("-_.")
    return out or "name-01"


def _shown_char(c: str) -> str:
    if c == " ":
        return "a space"
    if c == "\n":
        return "a line break"
    if c == "\t":
        return "a tab"
    if not c.isprintable():
        return f"the control character U+{ord(c):04X}"
    if not c.isascii():
        return f"the non-ASCII character {c!r} (U+{ord(c):04X})"
    return repr(c)
