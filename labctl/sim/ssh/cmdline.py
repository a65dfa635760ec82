"""How Windows splits a command line that arrives over SSH.

Win32-OpenSSH runs an exec request as ``cmd.exe /c <command>``: cmd.exe first splits the line into
commands at unquoted ``&``, ``&&``, ``||`` and ``|``, honours ``^`` escapes and redirections, then
each program splits its own arguments with the Microsoft C runtime rules (``CommandLineToArgvW``):
double quotes group, ``\\`` is literal unless it precedes a quote. Only what the simulated
commands need is modelled; pipes are recognised so the dispatcher can refuse them plainly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Segment:
    """One command of a line: its raw text and how it is joined to the one before it."""

    text: str
    joiner: str = ""  # "", "&", "&&", "||", "|"
    stdout_to: str | None = None  # "nul", a path, or None (the session)
    stderr_to: str | None = None  # "nul", "&1", a path, or None
    argv: list[str] = field(default_factory=list)


def split_line(line: str) -> list[Segment]:
    """Split a cmd.exe line into commands at unquoted ``&``, ``&&``, ``||`` and ``|``."""
    segments: list[Segment] = []
    buf: list[str] = []
    joiner = ""
    in_quotes = False
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == '"':
            in_quotes = not in_quotes
            buf.append(ch)
        elif ch == "^" and not in_quotes and i + 1 < n:
            buf.append(line[i + 1])  # cmd's escape: the next character is literal
            i += 1
        elif not in_quotes and ch == "&" and buf and buf[-1] == ">":
            buf.append(ch)  # "2>&1": a redirection, not a command separator
        elif not in_quotes and ch in "&|":
            op = ch
            if i + 1 < n and line[i + 1] == ch:
                op = ch + ch
                i += 1
            segments.append(_segment("".join(buf), joiner))
            buf = []
            joiner = op
        else:
            buf.append(ch)
        i += 1
    segments.append(_segment("".join(buf), joiner))
    return [s for s in segments if s.text.strip() or s.joiner]


def _segment(text: str, joiner: str) -> Segment:
    seg = Segment(text=text, joiner=joiner)
    _take_redirections(seg)
    seg.argv = split_args(seg.text)
    return seg


def _take_redirections(seg: Segment) -> None:
    """Remove unquoted ``>x``, ``>>x``, ``1>x``, ``2>x``, ``2>&1`` from the segment text."""
    out: list[str] = []
    text = seg.text
    in_quotes = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            in_quotes = not in_quotes
            out.append(ch)
            i += 1
            continue
        if not in_quotes and ch == ">":
            stream = "1"
            if out and out[-1] in "12" and (len(out) == 1 or out[-2].isspace()):
                stream = out.pop()
            i += 1
            if i < n and text[i] == ">":
                i += 1
            while i < n and text[i] == " ":
                i += 1
            start = i
            if i < n and text[i] == "&":
                i += 1
                while i < n and text[i].isdigit():
                    i += 1
            elif i < n and text[i] == '"':
                i += 1
                while i < n and text[i] != '"':
                    i += 1
                i += 1
            else:
                while i < n and not text[i].isspace():
                    i += 1
            target = text[start:i].strip('"')
            if stream == "2":
                seg.stderr_to = target.lower() if target.lower() in ("nul", "&1") else target
            else:
                seg.stdout_to = target.lower() if target.lower() == "nul" else target
            continue
        out.append(ch)
        i += 1
    seg.text = "".join(out)


def split_args(text: str) -> list[str]:
    """``CommandLineToArgvW``: quotes group, ``2n`` backslashes + quote -> ``n`` and a toggle,
    ``2n+1`` backslashes + quote -> ``n`` and a literal quote, ``""`` inside quotes -> a quote."""
    args: list[str] = []
    cur: list[str] = []
    in_quotes = False
    have_arg = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            j = i
            while j < n and text[j] == "\\":
                j += 1
            count = j - i
            if j < n and text[j] == '"':
                cur.append("\\" * (count // 2))
                if count % 2:
                    cur.append('"')
                    i = j + 1
                else:
                    i = j  # the quote is handled below
                have_arg = True
                continue
            cur.append("\\" * count)
            have_arg = True
            i = j
            continue
        if ch == '"':
            if in_quotes and i + 1 < n and text[i + 1] == '"':
                cur.append('"')
                i += 2
                have_arg = True
                continue
            in_quotes = not in_quotes
            have_arg = True
            i += 1
            continue
        if ch in " \t" and not in_quotes:
            if have_arg:
                args.append("".join(cur))
                cur = []
                have_arg = False
            i += 1
            continue
        cur.append(ch)
        have_arg = True
        i += 1
    if have_arg:
        args.append("".join(cur))
    return args


def program_name(arg0: str) -> str:
    """``C:\\WINDOWS\\system32\\shutdown.exe`` -> ``shutdown`` (cmd.exe matches case-insensitively)."""
    name = arg0.replace("/", "\\").rsplit("\\", 1)[-1].lower()
    for ext in (".exe", ".com", ".bat", ".cmd"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def after_switch(text: str, switch: str) -> str | None:
    """The raw rest of ``text`` after the first argument equal to ``switch`` (case-insensitive),
    e.g. what ``cmd /c`` runs or what ``powershell -Command`` evaluates."""
    in_quotes = False
    i = 0
    n = len(text)
    start = None
    while i <= n:
        ch = text[i] if i < n else " "
        if ch == '"':
            in_quotes = not in_quotes
            if start is None:
                start = i
        elif ch in " \t" and not in_quotes:
            if start is not None:
                if text[start:i].strip('"').lower() == switch.lower():
                    return text[i:].strip()
                start = None
        elif start is None:
            start = i
        i += 1
    return None


def strip_outer_quotes(text: str) -> str:
    """What ``cmd /c "..."`` does with a line that starts and ends with a quote."""
    t = text.strip()
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        return t[1:-1]
    return t
