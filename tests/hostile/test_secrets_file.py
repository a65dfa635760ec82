"""Hostile secrets files ($LABCTL_SECRETS_FILE): refused in one line (exit 2) before being parsed,
never hanging (a FIFO hung labctl), never growing (``/dev/zero`` grew to 24 GB), never quoting a
line of the file (its lines are secrets)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from labctl.inventory.credentials import SECRETS_FILE_VAR, resolve_credential, secrets_file_values
from tests.hostile.harness import SECRET, Case, api_run, outcome

CATEGORY = "secrets file"


def _writer(content: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "secrets.yaml"
        path.write_bytes(content)
        return path

    return make


def _fifo(tmp: Path) -> Path:
    path = tmp / "secrets.fifo"
    os.mkfifo(path)
    return path


def _socket(tmp: Path) -> Path:
    path = tmp / "secrets.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


def _symlink(target: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "secrets-link.yaml"
        path.symlink_to(target)
        return path

    return make


def _folder(tmp: Path) -> Path:
    (tmp / "secrets.d").mkdir()
    return tmp / "secrets.d"


def _sparse(size: int) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "secrets.yaml"
        with path.open("wb") as f:
            f.write(f"sim.bmc_password: {SECRET}\n".encode())
            f.truncate(size)
        return path

    return make


S = SECRET.encode()
FILES: dict[str, Callable[[Path], Path]] = {
    "a FIFO": _fifo,
    "/dev/zero": lambda _t: Path("/dev/zero"),
    "/dev/urandom": lambda _t: Path("/dev/urandom"),
    "/dev/stdin": lambda _t: Path("/dev/stdin"),
    "/dev/tty-like char device": lambda _t: Path("/dev/null"),
    "/proc/self/mem": lambda _t: Path("/proc/self/mem"),
    "a socket": _socket,
    "a folder": _folder,
    "a symlink to /dev/zero": _symlink("/dev/zero"),
    "a symlink to a FIFO's path": lambda t: _symlink(str(_fifo(t)))(t),
    "2 MB of text": _writer(b"k: v\n" * 420_000),
    "100 MB sparse": _sparse(100 * 2**20),
    "8 GB sparse": _sparse(8 * 2**30),
    "not UTF-8": _writer(b"sim.x: \xff\xfe" + S + b"\n"),
    "NUL bytes": _writer(b"sim.x: a\x00" + S + b"\n"),
    "nested 10,000 deep": _writer(b"k: " + b"[" * 10_000 + b"]" * 10_000 + b"\n"),
    "nested mappings": _writer(b"k: " + b"{a: " * 500 + b"1" + b"}" * 500 + b"\n"),
    "an alias bomb": _writer(
        b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n".encode() for i in range(1, 9))
    ),
    "a syntax error on a secret's line": _writer(b"sim.a: ok\nsim.b: '" + S + b"\n  - ]\n"),
    "a tab-indented secret": _writer(b"sim:\n\tb: " + S + b"\n"),
    "a list at the top": _writer(b"- " + S + b"\n"),
    "a scalar at the top": _writer(S + b"\n"),
    "a python tag": _writer(b"sim.x: !!python/object/apply:os.system ['echo " + S + b"']\n"),
    "the key missing": _writer(b"other: " + S + b"\n"),
    "an empty file": _writer(b""),
    "the key set to null": _writer(b"sim.x: \n"),
    "two documents": _writer(b"sim.x: " + S + b"\n---\nsim.x: other\n"),
    "a missing file": lambda t: t / "nowhere.yaml",
}


def _case(what: str, make: Callable[[Path], Path], tmp: Path) -> Case:
    def run() -> tuple[int, str]:
        path = make(tmp)
        old = os.environ.get(SECRETS_FILE_VAR)
        os.environ[SECRETS_FILE_VAR] = str(path)
        try:
            secrets_file_values()  # the redactor reads it too: must not hang or grow either
            return api_run(lambda: resolve_credential("secret:sim.x", "bmc-01 (redfish)"))
        finally:
            if old is None:
                os.environ.pop(SECRETS_FILE_VAR, None)
            else:
                os.environ[SECRETS_FILE_VAR] = old

    return Case(CATEGORY, what, run)


@pytest.mark.parametrize("what", list(FILES))
def test_hostile_secrets_file_is_refused_cleanly(what: str, tmp_path: Path) -> None:
    assert outcome(_case(what, FILES[what], tmp_path)) is None


def cases(tmp: Path) -> list[Case]:
    out = []
    for i, (what, make) in enumerate(FILES.items()):
        folder = tmp / f"s{i}"
        folder.mkdir()
        out.append(_case(what, make, folder))
    return out
