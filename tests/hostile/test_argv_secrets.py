"""No secret value in a process argument list: ``/proc/<pid>/cmdline`` is readable by every user
of the machine (``ps -ef``). The simulated lab's processes (simd, one labctl-vcsim per vCenter) get
their credentials through 0600 files in the state folder, never on the command line; this starts a
small simulated lab on a loopback block of its own and reads every argument list it made."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from labctl.sim.simlab import SimulatedLab
from tests.labfiles import make_test_lab


def _descendants(roots: list[int]) -> set[int]:
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = set(roots)
    grew = True
    while grew:
        new = {pid for pid, ppid in parent.items() if ppid in found and pid not in found}
        found |= new
        grew = bool(new)
    return found


def test_no_secret_value_in_the_simulated_labs_argument_lists(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with SimulatedLab(make_test_lab(tmp_path, clients=1), state_dir=state) as sim:
        secrets = yaml.safe_load((state / "secrets.yaml").read_text())
        values = [str(v) for v in secrets.values() if len(str(v)) >= 8 and not str(v).startswith("/")]
        assert values, "the simulated lab generated no password to look for"
        pids = _descendants([p.pid for p in sim.state.processes] + [os.getpid()])
        argv: dict[int, str] = {}
        for pid in pids:
            try:
                argv[pid] = (
                    Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue  # ended meanwhile
        assert len(argv) >= 2  # simd and a vCenter at least
        leaks = [(pid, v) for pid, line in argv.items() for v in values if v in line]
        assert leaks == [], f"secret values on command lines: {[(pid, argv[pid][:80]) for pid, _ in leaks]}"
