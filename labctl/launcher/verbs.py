"""The protocol's verbs as one-shot commands: the controller's SSH command talks to the daemon.

``labctl launcher [--config F] hello | start -Workload W -Desktop d1,d2 -User u1,u2 |
events -After N | logoff -Session s1,s2``: the same words and answers as the Windows script's
(docs/session-launchers.md), one JSON object per line on stdout. Usage errors: exit 2 and one line
on stderr; a daemon that does not answer: exit 1 and one line saying how to start it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import requests

from labctl.launcher.config import TOKEN_FILE, LauncherConfig, read_small

CALL_TIMEOUT_S = 30.0
VERBS = {"hello": (), "start": ("workload", "desktop", "user"), "events": ("after",), "logoff": ("session",)}
LISTS = ("desktop", "user", "session")


class VerbError(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def parse(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """``verb -Name value ...`` (PowerShell's style, names in any case) -> (verb, arguments)."""
    if not argv:
        raise VerbError("launcher: no verb (hello, start, events, logoff)", 2)
    verb = argv[0].lower()
    if verb not in VERBS:
        raise VerbError(f"launcher: unknown verb {argv[0]!r} (hello, start, events, logoff)", 2)
    args: dict[str, Any] = {}
    rest = argv[1:]
    if len(rest) % 2:
        raise VerbError(f"launcher {verb}: expected -Name value pairs, got {' '.join(rest)!r}", 2)
    for name, value in zip(rest[::2], rest[1::2], strict=True):
        key = name.lstrip("-").lower()
        if not name.startswith("-") or key not in VERBS[verb]:
            raise VerbError(
                f"launcher {verb}: unknown argument {name!r} (takes {', '.join('-' + k.title() for k in VERBS[verb]) or 'none'})",
                2,
            )
        if key in LISTS:
            args[key] = [v for v in value.split(",") if v]
        elif key == "after":
            try:
                args[key] = int(value)
            except ValueError:
                raise VerbError(f"launcher events: -After {value!r} is not a sequence number", 2) from None
        else:
            args[key] = value
    missing = [k for k in VERBS[verb] if k not in args and verb != "events"]
    if missing:
        raise VerbError(f"launcher {verb}: missing {', '.join('-' + k.title() for k in missing)}", 2)
    return verb, args


def call(cfg: LauncherConfig, verb: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    state = cfg.state_dir
    try:
        token = read_small(state / TOKEN_FILE, "launcher's control token").strip()
        port = cfg.control.port or int(
            json.loads(read_small(state / "ports.json", "launcher's ports"))["control"]
        )
    except Exception:
        raise VerbError(
            f"launcher {cfg.name}: no daemon is running (no {state / TOKEN_FILE}); start it: labctl launcher serve --config <file>",
            1,
        ) from None
    url = f"http://{cfg.control.host}:{port}/v1/{verb}"
    try:
        r = requests.post(
            url, data=json.dumps(args), headers={"X-Labctl-Token": token}, timeout=CALL_TIMEOUT_S
        )
    except requests.RequestException as exc:
        raise VerbError(
            f"launcher {cfg.name}: its daemon does not answer on {url} ({type(exc).__name__}); is it running?",
            1,
        ) from None
    if r.status_code == 400:
        raise VerbError(f"launcher {verb}: {r.json().get('error')}", 2)
    if r.status_code != 200:
        raise VerbError(f"launcher {cfg.name}: {verb} answered HTTP {r.status_code}: {r.text[:200]}", 1)
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


def run(cfg: LauncherConfig, argv: list[str]) -> int:
    try:
        verb, args = parse(argv)
        for obj in call(cfg, verb, args):
            sys.stdout.write(json.dumps(obj) + "\n")
        return 0
    except VerbError as exc:
        print(str(exc), file=sys.stderr)
        return exc.code


def default_config_path() -> Path:
    return (
        Path("C:/ProgramData/labctl/launcher.yaml")
        if sys.platform == "win32"
        else Path("/etc/labctl/launcher.yaml")
    )
