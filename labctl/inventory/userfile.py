"""Open a file a user gave labctl, safely: the one way every reader of user input starts.

An inventory, the secrets file, a criteria file, a plan's parameters, a run folder's JSON: each is
written by someone labctl does not control. Before anything parses it, :func:`read_user_bytes`

- refuses what is not a regular file (a FIFO would hang the read, ``/dev/zero`` or ``/dev/urandom``
  would grow labctl until the kernel kills it, a folder or socket gives a confusing error); the
  file is opened non-blocking and checked with ``fstat`` on the very descriptor it then reads, so a
  path swapped between a check and the open cannot get past it;
- reads at most ``max_bytes`` (one byte more, to tell "too large" from "exactly at the bound"),
  whatever ``stat`` said, since ``/proc`` files and growing files lie about their size;
- optionally refuses a symbolic link (run-folder files: a ``series.csv`` pointing at
  ``/etc/shadow`` is not a series).

:func:`read_user_text` adds UTF-8; :func:`load_user_yaml` and :func:`load_user_json` add a nesting
bound (measured without recursion, before objects are built) and safe YAML only. Every refusal is a
:class:`UserFileError` (exit 2): one line naming the file, what is wrong and the fix, never the
file's content (the secrets file's lines are secrets).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from labctl.errors import BadInputError
from labctl.inventory import bounds

# Bounds by kind of file. An inventory has its own (labctl.inventory.bounds.MAX_FILE_BYTES).
SECRETS_MAX_BYTES = 1 * 2**20  # a secrets file is a few dozen `key: value` lines
CRITERIA_MAX_BYTES = 1 * 2**20  # a plan's criteria are a page of YAML
PARAMS_MAX_BYTES = 1 * 2**20  # a plan's parameter profiles are a page of YAML
RUN_JSON_MAX_BYTES = 64 * 2**20  # run.json, summary.json, verdicts.json of a 3,000-desktop cell
MAX_DEPTH = 64  # levels of mappings and lists; the deepest file labctl reads nests about 10


class UserFileError(BadInputError):
    """A user's file labctl will not read: ``file: what is wrong (how to fix)``."""

    def __init__(self, path: str | Path, message: str, fix: str):
        self.path = str(path)
        self.message = message
        self.fix = fix
        super().__init__(f"{path}: {message} ({fix})")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_user_bytes(
    path: str | Path, *, what: str, max_bytes: int, shown: str | None = None, follow_symlinks: bool = True
) -> bytes:
    """The bytes of a user's regular file, at most ``max_bytes``; :class:`UserFileError` otherwise.

    ``what`` names the file's role in messages ("secrets file", "criteria file"); ``shown`` is the
    path as messages print it (default ``path``). Raises ``FileNotFoundError`` untouched when the
    file does not exist, so that callers with a better "not found" message keep it.
    """
    name = shown if shown is not None else str(path)
    fd = _open_regular(path, what, name, follow_symlinks)
    try:
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise UserFileError(name, f"cannot read the {what}: {exc.strerror}", "check the file") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > max_bytes:
        raise UserFileError(
            name, f"the {what} is larger than {_size(max_bytes)}", "check that it is the right file"
        )
    return raw


def _open_regular(path: str | Path, what: str, name: str, follow_symlinks: bool) -> int:
    """A descriptor open for reading on a regular file (checked on the descriptor itself)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise UserFileError(name, f"the {what} is a folder", "name a file in it") from None
    except PermissionError:
        raise UserFileError(
            name, f"cannot read the {what}: permission denied", "check its permissions"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise UserFileError(
                name, f"the {what} is a symbolic link", "a run folder holds its own files; copy the file in"
            ) from None
        raise UserFileError(name, f"cannot open the {what}: {exc.strerror}", "check the path") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(name, f"the {what} is {_kind(mode)}", "name a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_user_file(
    path: str | Path, *, what: str, shown: str | None = None, follow_symlinks: bool = True
) -> BinaryIO:
    """A user's regular file open for streaming (``series.csv``, ``events.jsonl``): the same type
    checks as :func:`read_user_bytes`; the reader bounds what it keeps."""
    fd = _open_regular(path, what, shown if shown is not None else str(path), follow_symlinks)
    return os.fdopen(fd, "rb")


def read_user_text(
    path: str | Path, *, what: str, max_bytes: int, shown: str | None = None, follow_symlinks: bool = True
) -> str:
    """:func:`read_user_bytes` decoded as UTF-8 (a byte-order mark allowed)."""
    raw = read_user_bytes(path, what=what, max_bytes=max_bytes, shown=shown, follow_symlinks=follow_symlinks)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UserFileError(
            f"{shown if shown is not None else path}:{line}",
            f"the {what} is not UTF-8 text",
            "save it as UTF-8",
        ) from None


def yaml_depth_exceeded(text: str, max_depth: int = MAX_DEPTH) -> int | None:
    """The 1-based line where YAML ``text`` nests deeper than ``max_depth``, or None.

    Measured on the event stream (no recursion, nothing built); a syntax error is left for the
    parser to report in its own words."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    return event.start_mark.line + 1 if event.start_mark is not None else 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return None
    return None


def json_depth_exceeded(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether JSON ``text`` nests deeper than ``max_depth`` (brackets outside strings counted)."""
    depth = 0
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def check_yaml_text(text: str, shown: str, what: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`UserFileError` when ``text`` nests too deep or its aliases expand beyond
    :data:`MAX_EXPANDED` items (a "billion laughs" bomb): both before any object is built."""
    line = yaml_depth_exceeded(text, max_depth)
    if line is not None:
        raise UserFileError(
            f"{shown}:{line}", f"the {what} nests more than {max_depth} levels deep", "check the brackets"
        )
    if "*" not in text:
        return  # no alias, nothing to expand
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return  # the parser reports it in its own words
    exceeded = bounds.check_aliases(node, MAX_EXPANDED) if node is not None else None
    if exceeded is not None:
        where = f"{shown}:{exceeded.line}" if exceeded.line else shown
        raise UserFileError(where, f"the {what}'s {exceeded.message}", exceeded.fix)


MAX_EXPANDED = 100_000  # items of a hand-written file with its aliases expanded (a page is a few hundred)


def load_user_yaml(
    path: str | Path,
    *,
    what: str,
    max_bytes: int,
    shown: str | None = None,
    max_depth: int = MAX_DEPTH,
    follow_symlinks: bool = True,
) -> Any:
    """A user's YAML file, bounded in size, type, depth and aliases, parsed with the safe loader.

    A syntax error is a :class:`UserFileError` naming the line, never quoting it."""
    name = shown if shown is not None else str(path)
    text = read_user_text(path, what=what, max_bytes=max_bytes, shown=name, follow_symlinks=follow_symlinks)
    check_yaml_text(text, name, what, max_depth)
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise UserFileError(
            where, f"the {what} is not valid YAML: {problem}", "check the indentation and quoting"
        ) from None


def load_user_json(
    path: str | Path,
    *,
    what: str,
    max_bytes: int = RUN_JSON_MAX_BYTES,
    shown: str | None = None,
    max_depth: int = MAX_DEPTH,
    follow_symlinks: bool = True,
) -> Any:
    """A user's JSON file (a run folder's ``run.json``, ...), bounded in size, type and depth."""
    name = shown if shown is not None else str(path)
    text = read_user_text(path, what=what, max_bytes=max_bytes, shown=name, follow_symlinks=follow_symlinks)
    if json_depth_exceeded(text, max_depth):
        raise UserFileError(name, f"the {what} nests more than {max_depth} levels deep", "check the file")
    try:
        return json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        at = f" at line {line}" if line else ""
        raise UserFileError(
            name, f"not JSON{at}", f"the {what} is damaged: rewrite it, or remove it"
        ) from None


def _size(n: int) -> str:
    if n >= 2**20 and n % 2**20 == 0:
        return f"{n // 2**20} MB"
    if n >= 2**10 and n % 2**10 == 0:
        return f"{n // 2**10} KB"
    return f"{n} bytes"
