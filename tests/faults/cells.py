"""Short cells of each plan kind, for the fault matrix (tests/faults/test_matrix.py).

``labctl run`` as an engineer runs it, in a subprocess with its own state, lease and results
folders (tests/plans/test_plans_quick.py's ``_env``/``_args``), on a lab with its own loopback
block, cut to the shortest cell that still reaches every phase:

- 2007: ``boot_storm`` of 2 clients, a 60-lab-second window (``BOOT_2``);
- VDI: ``vdi_storm`` of 3 desktops, all pre-booted, no idle, 60 lab seconds of steady state
  (``VDI_3``).

:class:`Cell` runs one in the background and reads its console line by line, so a test can strike
the lab (kill vCenter, stop the store) at a phase it sees.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from labctl.records.run_record import CellSummary
from tests.plans.test_plans_quick import _args, _env, _run_folder, _summaries

BOOT_CELL = "boot_storm-standalone-002"


def boot_2(window_s: int = 60) -> tuple[str, ...]:
    """``labctl run`` arguments of a 2-client boot storm with a ``window_s`` window."""
    return (
        "boot_storm",
        "--profile",
        "quick",
        "--param",
        "group_sizes=2",
        "--param",
        f"window_s={window_s}",
        "--param",
        "ready_timeout_s=120",
        "--no-report",
    )


BOOT_2 = boot_2()
VDI_CELL = "vdi_storm-default-100"


def vdi_3(steady_s: int = 60) -> tuple[str, ...]:
    """``labctl run`` arguments of a 3-desktop VDI storm, every desktop pre-booted, no idle, and
    ``steady_s`` lab seconds of steady state."""
    return (
        "vdi_storm",
        "--profile",
        "quick",
        "--param",
        "prebooted_pcts=100",
        "--param",
        "idle_s=0",
        "--param",
        "boot_settle_s=20",
        "--param",
        "steady_settle_s=0",
        "--param",
        f"steady_s={steady_s}",
        "--no-report",
    )


VDI_3 = vdi_3()


class Cell:
    """``labctl run <plan args>`` in the background; ``wait_for`` a console line, ``finish``."""

    def __init__(self, tmp_path: Path, lab: Path, *args: str, results: Path | None = None, **popen: object):
        self.tmp_path = tmp_path
        argv = _args(tmp_path, lab, *args)
        if results is not None:
            argv[argv.index("--results-dir") + 1] = str(results)
        self.proc = subprocess.Popen(  # type: ignore[call-overload]
            argv,
            env={**_env(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            **popen,
        )
        self.seen: list[str] = []

    def wait_for(self, text: str, timeout_s: float = 240) -> str:
        """The first console line holding ``text`` (the run is killed and the test fails if none)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            self.seen.append(line)
            if text in line:
                return line
            if not line and self.proc.poll() is not None:
                break
        self.proc.kill()
        pytest.fail(f"the run never said {text!r}:\n" + "".join(self.seen[-30:]))

    def finish(self, timeout_s: float = 400) -> tuple[int, str]:
        """(exit code, the whole console)."""
        try:
            out, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("labctl run did not end:\n" + "".join(self.seen[-30:]))
        return self.proc.returncode, "".join(self.seen) + out


def run_cell(tmp_path: Path, lab: Path, *args: str, **kw: object) -> tuple[int, str]:
    """Run a short cell to its end: (exit code, console)."""
    return Cell(tmp_path, lab, *args, **kw).finish()  # type: ignore[arg-type]


def cell_of(tmp_path: Path, cell: str) -> CellSummary:
    """The cell's summary from the newest run folder under ``tmp_path/results``."""
    return _summaries(_run_folder(tmp_path))[cell]


def stop_postgres(dsn: str, timeout_s: float = 30) -> None:
    """Stop the PostgreSQL server behind ``dsn`` now (fast shutdown of its postmaster, found by
    its data folder's postmaster.pid), as a store that goes away mid-run."""
    import os
    import signal

    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'").fetchone()
    assert row is not None
    pid = int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"PostgreSQL {pid} did not stop")
