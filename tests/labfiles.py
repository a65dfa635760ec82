"""Small test labs on their own random loopback addresses.

Tests never use the fixed addresses of hardware/sim-2007.yaml, so they can run while a developer's
`labctl sim up` is running, and two test sessions do not collide. The file is sim-2007.yaml with
fewer clients and every 127.2x.* address moved into one random 127.<a>.0.0/16 block, claimed
across processes with a lock file so concurrent test sessions never share one.
"""

from __future__ import annotations

import atexit
import os
import random
import re
import tempfile
from pathlib import Path

from labctl.inventory.load import default_lab_file

_LOCK_DIR = Path(tempfile.gettempdir()) / "labctl-test-blocks"
_BLOCKS = range(30, 250)  # 127.<a>.0.0/16, one per test lab; 127.20-23 are sim-2007's
_REUSE_AFTER = 40  # a process cycles through this many blocks of its own before claiming more
_mine: list[int] = []
_next = 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(block: int) -> bool:
    """Claim a block for this process with an O_EXCL lock file; stale locks of dead pids are taken over."""
    _LOCK_DIR.mkdir(exist_ok=True)
    lock = _LOCK_DIR / f"{block}.lock"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = int(lock.read_text() or "0")
            except (OSError, ValueError):
                owner = 0
            if owner and (owner == os.getpid() or _pid_alive(owner)):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


@atexit.register
def _release() -> None:
    for block in _mine:
        (_LOCK_DIR / f"{block}.lock").unlink(missing_ok=True)


def _free_block(rng: random.Random) -> int:
    """A /16 loopback block no other live test process holds. Within one process blocks are
    reused round-robin after ``_REUSE_AFTER`` labs (earlier labs' simulators are long stopped)."""
    global _next
    if len(_mine) < _REUSE_AFTER:
        candidates = [b for b in _BLOCKS if b not in _mine]
        rng.shuffle(candidates)
        for block in candidates:
            if _claim(block):
                _mine.append(block)
                return block
        if not _mine:
            raise RuntimeError(
                f"no free loopback block for a test lab: all of 127.{_BLOCKS[0]}-{_BLOCKS[-1]}.x are held by "
                f"live test processes (lock files in {_LOCK_DIR})"
            )
    block = _mine[_next % len(_mine)]
    _next += 1
    return block


def make_test_lab(
    tmp_path: Path,
    clients: int = 5,
    *,
    time_scale: float = 60.0,
    faults: str = "",
    extra_lab_yaml: str = "",
    seed: int | None = None,
    name: str = "test-lab.yaml",
) -> Path:
    """Write a copy of the 2007 lab with ``clients`` clients on fresh loopback addresses.

    ``faults`` is YAML for `lab.faults` entries, e.g.
    ``"- {kind: client_never_wakes, targets: [optiplex-003]}"``.
    """
    rng = random.Random(seed)
    a = _free_block(rng)
    text = default_lab_file().read_text()
    # lab net 127.20/16 -> 127.a/16; BMCs, vCenter and array move inside it (127.a.2-4.x)
    for old, new in (
        ("127.21.0.", f"127.{a}.2."),
        ("127.22.0.", f"127.{a}.3."),
        ("127.23.0.", f"127.{a}.4."),
    ):
        text = text.replace(old, new)
    text = text.replace("127.20.", f"127.{a}.")
    text = text.replace("optiplex-[001-100]", f"optiplex-[001-{clients:03d}]")
    text = re.sub(r"00:1a:a0:07:00:01\.\.00:1a:a0:07:00:64", "00:1a:a0:07:00:01", text)
    text = re.sub(rf"127\.{a}\.1\.1\.\.127\.{a}\.1\.100", f"127.{a}.1.1", text)
    # groups that name more clients than the test lab has
    text = re.sub(r"  first-\d+: .*\n|  last-50: .*\n", "", text)
    text = text.replace("time_scale: 60 ", f"time_scale: {time_scale:g} ")
    lab_extra = ""
    if faults:
        lab_extra += "  faults:\n" + "".join(f"    {line}\n" for line in faults.strip().splitlines())
    if extra_lab_yaml:
        lab_extra += "".join(f"  {line}\n" for line in extra_lab_yaml.strip().splitlines())
    if lab_extra:
        text = text.replace("  seed: 2007\n", "  seed: 2007\n" + lab_extra)
    path = tmp_path / name
    path.write_text(text)
    return path
