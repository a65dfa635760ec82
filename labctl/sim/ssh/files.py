"""The files the simulated Windows boxes know about: names and sizes, no contents.

Two kinds of place:
- a machine's local drives (``C:\\...``; a server also has its volumes' drive letters);
- the lab's UNC shares (``\\\\server\\share\\...``), seen alike by every client.

The standard image of the streamed clients carries ``C:\\labctl\\file512.bin`` (512 MiB) and every
share starts with ``file512.bin`` (512 MiB), the file the 2007 copy tests used. Files a streamed
client writes to its own C: live in the PVS write cache and vanish when it reboots, as they do in
standard-image mode; files on shares and on servers persist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from labctl.inventory.model import Lab, Machine, MachineKind

MIB = 1024 * 1024
TEST_FILE = "file512.bin"
TEST_FILE_SIZE = 512 * MIB
IMAGE_FILES = {"c:\\labctl\\" + TEST_FILE: TEST_FILE_SIZE}


class PathKind(StrEnum):
    LOCAL = "local"
    SHARE = "share"


class PathError(Exception):
    """A path cmd.exe cannot reach; the message is the Windows system message."""


NOT_FOUND = "The system cannot find the file specified."
PATH_NOT_FOUND = "The system cannot find the path specified."
BAD_NETPATH = "The network path was not found."
BAD_NET_NAME = "The network name cannot be found."


@dataclass(frozen=True)
class WinPath:
    kind: PathKind
    key: str  # lower-cased, canonical: "c:\\dir\\file" or "\\\\server\\share\\dir\\file"
    shown: str  # as Windows would print it
    share_root: str = ""  # "\\\\server\\share" (lower-cased) for share paths

    @property
    def name(self) -> str:
        return self.shown.rstrip("\\").rsplit("\\", 1)[-1]

    def child(self, name: str) -> WinPath:
        sep = "" if self.shown.endswith("\\") else "\\"
        return WinPath(
            self.kind, self.key.rstrip("\\") + "\\" + name.lower(), self.shown + sep + name, self.share_root
        )

    @property
    def is_root(self) -> bool:
        if self.kind is PathKind.LOCAL:
            return len(self.key.rstrip("\\")) == 2
        return self.key.rstrip("\\") == self.share_root


def _normalise(parts: list[str]) -> list[str]:
    out: list[str] = []
    for p in parts:
        if p in ("", "."):
            continue
        if p == "..":
            if out:
                out.pop()
            continue
        out.append(p)
    return out


class FileStore:
    """Thread-safe registry of file sizes, per machine and per share."""

    def __init__(self, lab: Lab, boot_count: Callable[[str], int]):
        self.lab = lab
        self._boot_count = boot_count
        self._lock = threading.Lock()
        # machine -> path key -> (size, boot count when written or None for persistent)
        self._local: dict[str, dict[str, tuple[int, int | None]]] = {}
        self._shares: dict[str, dict[str, int]] = {}  # share root key -> path key -> size
        self._share_roots: dict[str, str] = {}  # "\\\\server\\share" lower -> shown
        self._servers_by_alias: dict[str, str] = {}
        for m in lab.machines.values():
            self._servers_by_alias[m.name.lower()] = m.name
            if m.ip:
                self._servers_by_alias[m.ip] = m.name
            if m.ssh_host:
                self._servers_by_alias.setdefault(m.ssh_host, m.name)
        for share in lab.shares.values():
            root = share.unc.rstrip("\\")
            _, _, share_name = root.lstrip("\\").partition("\\")
            root_key = f"\\\\{share.server.lower()}\\{share_name.lower()}"
            self._share_roots[root_key] = f"\\\\{share.server}\\{share_name}"
            self._shares[root_key] = {root_key + "\\" + TEST_FILE: TEST_FILE_SIZE}
        self._homes: dict[str, str] = {}

    def clear(self) -> None:
        """Forget every file written since the start: shares and images as on a fresh lab."""
        with self._lock:
            self._local.clear()
            for root, files in self._shares.items():
                files.clear()
                files[root + "\\" + TEST_FILE] = TEST_FILE_SIZE

    # --- paths ---------------------------------------------------------------------------------
    def home(self, machine: Machine) -> str:
        user = machine.ssh.user if machine.ssh else "Administrator"
        os_name = machine.os.lower()
        if "xp" in os_name or "2003" in os_name or "2000" in os_name:
            return f"C:\\Documents and Settings\\{user}"
        return f"C:\\Users\\{user}"

    def drives(self, machine: Machine) -> set[str]:
        letters = {"c:"}
        if machine.server_hardware:
            letters |= {v.drive.lower() for v in machine.server_hardware.volumes if v.drive}
        return letters

    def resolve(self, machine: Machine, text: str) -> WinPath:
        """A path as typed on ``machine`` -> a canonical path; raises PathError for unreachable ones."""
        raw = text.strip().strip('"').replace("/", "\\")
        if raw.startswith("\\\\"):
            parts = raw[2:].split("\\")
            server = parts[0]
            if server.lower() not in self._servers_by_alias:
                raise PathError(BAD_NETPATH)
            server_name = self._servers_by_alias[server.lower()]
            if len(parts) < 2 or not parts[1]:
                raise PathError(BAD_NET_NAME)
            root_key = f"\\\\{server_name.lower()}\\{parts[1].lower()}"
            if root_key not in self._share_roots:
                raise PathError(BAD_NET_NAME)
            rest = _normalise(parts[2:])
            shown_root = "\\\\" + server + "\\" + parts[1]
            shown = shown_root + ("\\" + "\\".join(rest) if rest else "")
            key = root_key + ("\\" + "\\".join(r.lower() for r in rest) if rest else "")
            return WinPath(PathKind.SHARE, key, shown, root_key)
        if len(raw) >= 2 and raw[1] == ":":
            drive = raw[:2]
            rest_text = raw[2:]
            if not rest_text.startswith("\\"):
                rest_text = "\\" + rest_text  # "C:file" -> relative to the drive's root here
        else:
            home = self.home(machine)
            drive = home[:2]
            rest_text = raw if raw.startswith("\\") else home[2:] + "\\" + raw
        if drive.lower() not in self.drives(machine):
            raise PathError(PATH_NOT_FOUND)
        rest = _normalise(rest_text.split("\\"))
        shown = drive.upper() + "\\" + "\\".join(rest)
        key = drive.lower() + "\\" + "\\".join(r.lower() for r in rest)
        return WinPath(PathKind.LOCAL, key, shown)

    # --- files ---------------------------------------------------------------------------------
    def _streamed(self, machine: Machine) -> bool:
        return machine.kind is MachineKind.CLIENT and not (
            machine.client_hardware and machine.client_hardware.local_disk
        )

    def _local_files(self, machine: Machine) -> dict[str, int]:
        """Live files on the machine's local drives (must hold the lock)."""
        files = dict(IMAGE_FILES) if machine.kind is MachineKind.CLIENT else {}
        entries = self._local.get(machine.name, {})
        if entries:
            boots = self._boot_count(machine.name) if self._streamed(machine) else None
            stale = [k for k, (_, b) in entries.items() if b is not None and b != boots]
            for k in stale:
                del entries[k]  # the write cache of an earlier boot is gone
            files.update({k: size for k, (size, _) in entries.items()})
        return {k: s for k, s in files.items() if s >= 0}  # size -1: a deleted image file

    def size(self, machine: Machine, path: WinPath) -> int | None:
        with self._lock:
            if path.kind is PathKind.SHARE:
                return self._shares[path.share_root].get(path.key)
            return self._local_files(machine).get(path.key)

    def is_dir(self, machine: Machine, path: WinPath) -> bool:
        """Directories are not modelled; a root, or a folder holding a known file, counts as one."""
        if path.is_root:
            return True
        prefix = path.key.rstrip("\\") + "\\"
        with self._lock:
            keys = (
                self._shares[path.share_root] if path.kind is PathKind.SHARE else self._local_files(machine)
            )
            return any(k.startswith(prefix) for k in keys)

    def put(self, machine: Machine, path: WinPath, size: int) -> None:
        with self._lock:
            if path.kind is PathKind.SHARE:
                self._shares[path.share_root][path.key] = size
                return
            boots = self._boot_count(machine.name) if self._streamed(machine) else None
            self._local.setdefault(machine.name, {})[path.key] = (size, boots)

    def delete(self, machine: Machine, path: WinPath) -> bool:
        with self._lock:
            if path.kind is PathKind.SHARE:
                return self._shares[path.share_root].pop(path.key, None) is not None
            if path.key not in self._local_files(machine):
                return False
            boots = self._boot_count(machine.name) if self._streamed(machine) else None
            if path.key in IMAGE_FILES and machine.kind is MachineKind.CLIENT:
                self._local.setdefault(machine.name, {})[path.key] = (-1, boots)
            else:
                self._local.get(machine.name, {}).pop(path.key, None)
            return True
