"""Small test labs on their own random loopback addresses.

Tests never use the fixed addresses of hardware/sim-2007.yaml, so they can run while a developer's
`labctl sim up` is running, and two test sessions do not collide. The file is sim-2007.yaml with
fewer clients and every 127.2x.* address moved to a random 127.<a>.* block.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from labctl.inventory.load import default_lab_file

_used: set[int] = set()


def _free_block(rng: random.Random) -> int:
    while True:
        a = rng.randrange(30, 250, 4)  # four consecutive /16 blocks: lab, BMC, vCenter, storage
        if a not in _used:
            _used.add(a)
            return a


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
    for old, new in ((20, a), (21, a + 1), (22, a + 2), (23, a + 3)):
        text = text.replace(f"127.{old}.", f"127.{new}.")
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
