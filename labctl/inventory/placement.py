"""Place a simulated lab on a loopback block of its own: ``lab.loopback_block``.

A simulated lab lives on loopback, every machine on its own 127.x.y.z address. Two simulated labs
written with the same addresses (a copy of hardware/sim-2007.yaml edited into your own lab) cannot
run side by side, and moving one meant hand-editing every address prefix. With

    lab:
      loopback_block: auto      # or a number: 57 places it on 127.57.0.0/16

the loader rewrites every 127.x.y.z address of the file consistently when it reads it, so every
process that loads the file (``labctl sim up``, the simulator itself, ``labctl run``, ``check``,
``power``) sees the same placed addresses:

- the file's main network (the second octet of its first network's subnet, 127.20 in sim-2007)
  moves to ``127.<block>`` keeping its third and fourth octets (servers 127.20.0.11 ->
  127.B.0.11, clients 127.20.1.x -> 127.B.1.x, broadcast 127.20.255.255 -> 127.B.255.255);
- every other 127.S.T prefix (the BMCs' 127.21.0, the vCenter's 127.22.0, the array's 127.23.0)
  gets a third octet of its own inside the block, counting down from 254 (127.B.254.x,
  127.B.253.x, ...), so nothing collides with the main network's addresses.

``auto`` picks a block from ``AUTO_BLOCKS`` (127.2-19: the default simulated lab uses 127.20-23
and the test suite's labs 127.30-249) and remembers it for this file in a claim under
``$LABCTL_PLACEMENTS_DIR`` (default: a folder in the system's temporary directory, shared by every
worktree and user of the machine), so the file keeps its block from one command to the next and
two files never get the same one. A claim whose file no longer exists is given to the next file.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

PLACEMENTS_DIR_VAR = "LABCTL_PLACEMENTS_DIR"
AUTO_BLOCKS = range(2, 20)
_ADDRESS = re.compile(r"(?<![\d])127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d])")
_SUBNET = re.compile(r"^127\.(\d{1,3})\.\d{1,3}\.\d{1,3}/(\d{1,2})$")


class PlacementError(ValueError):
    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.fix = fix


def placements_dir() -> Path:
    return Path(os.environ.get(PLACEMENTS_DIR_VAR) or Path(tempfile.gettempdir()) / "labctl-loopback-blocks")


def block_for(lab_file: Path, setting: Any) -> int | None:
    """The block ``setting`` (``lab.loopback_block``) asks for: None when unset, the number when
    given, the file's claimed block (claiming one if it has none) for ``auto``."""
    if setting is None:
        return None
    if isinstance(setting, bool) or not (setting == "auto" or isinstance(setting, int)):
        raise PlacementError(
            f"loopback_block {setting!r} is not allowed", "write auto, or a number from 1 to 254"
        )
    if isinstance(setting, int):
        if not 1 <= setting <= 254:
            raise PlacementError(
                f"loopback_block {setting} is not a block of 127.0.0.0/8", "give 1 to 254, or auto"
            )
        return setting
    return _claim(lab_file.resolve())


def _claim(lab_file: Path) -> int:
    folder = placements_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PlacementError(
            f"cannot keep loopback block claims in {folder}: {exc.strerror}",
            f"set {PLACEMENTS_DIR_VAR} to a writable folder, or give loopback_block a number",
        ) from None
    mine = str(lab_file)
    for block in AUTO_BLOCKS:  # this file's own claim first
        if _owner(folder, block) == mine:
            return block
    for block in AUTO_BLOCKS:
        owner = _owner(folder, block)
        if owner is not None and Path(owner).exists():
            continue
        claim = folder / f"{block}.json"
        if owner is not None:  # its file is gone: the claim is stale
            claim.unlink(missing_ok=True)
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue  # another process claimed it just now
        with os.fdopen(fd, "w") as f:
            json.dump({"file": mine}, f)
        return block
    raise PlacementError(
        f"every loopback block for auto placement ({AUTO_BLOCKS[0]}-{AUTO_BLOCKS[-1]}) is claimed by "
        f"another lab file (claims in {folder})",
        "remove the claims of lab files you no longer use, or give loopback_block a number",
    )


def _owner(folder: Path, block: int) -> str | None:
    try:
        return str(json.loads((folder / f"{block}.json").read_text())["file"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def place(data: dict[str, Any], block: int) -> None:
    """Rewrite every 127.x.y.z address in ``data`` (parsed YAML) onto ``127.<block>``, in place."""
    main = _main_octet(data)
    others: dict[tuple[str, str], str] = {}  # (S, T) of another prefix -> its third octet in the block

    def move(m: re.Match[str]) -> str:
        s, t, u = m[1], m[2], m[3]
        if s == main:
            return f"127.{block}.{t}.{u}"
        row = others.setdefault((s, t), str(254 - len(others)))
        return f"127.{block}.{row}.{u}"

    for container, key, value in _strings(data):
        if _ADDRESS.search(value):
            container[key] = _ADDRESS.sub(move, value)


def wide_subnets(data: dict[str, Any]) -> list[tuple[int, str]]:
    """Networks placement cannot move: (index, subnet) of loopback subnets wider than /16, or of
    another prefix than the main one wider than /24."""
    main = _main_octet(data)
    out = []
    for i, net in enumerate(data.get("networks") or []):
        subnet = net.get("subnet") if isinstance(net, dict) else None
        if not isinstance(subnet, str) or (m := _SUBNET.match(subnet)) is None:
            continue
        prefix = int(m[2])
        if prefix < 16 or (m[1] != main and prefix < 24):
            out.append((i, subnet))
    return out


def _main_octet(data: dict[str, Any]) -> str | None:
    for net in data.get("networks") or []:
        subnet = net.get("subnet") if isinstance(net, dict) else None
        m = _SUBNET.match(subnet) if isinstance(subnet, str) else None
        if m:
            return m[1]
    return None


def _strings(data: Any) -> list[tuple[Any, Any, str]]:
    """(container, key, text) of every string value, each container once."""
    found: list[tuple[Any, Any, str]] = []
    stack = [data]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        pairs = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in pairs:
            if isinstance(x, str):
                found.append((v, k, x))
            elif isinstance(x, dict | list):
                stack.append(x)
    return found
