"""The simulated lab never drops a sample, even when its process is starved.

Both cores are kept busy by CPU hogs, the clients boot, and the simulator process is frozen
outright (SIGSTOP) for a second of wall time, 60 lab seconds: typeperf must still deliver a row at
every interval, each stamped with its own lab time, none of them blank.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from labctl.records.samples import Sample
from tests.sim.conftest import StartSim

pytestmark = pytest.mark.integration

INTERVAL_S = 2.0
FROZEN_WALL_S = 1.0  # 60 lab s at the test lab's 60x


@pytest.fixture
def cpu_hogs() -> Iterator[list[int]]:
    """One busy process per core for the test's duration (stopped by pid afterwards)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def test_typeperf_rows_stay_complete_while_the_simulator_is_starved(
    start_sim: StartSim, cpu_hogs: list[int]
) -> None:
    sim = start_sim(clients=5)
    simd = next(p.pid for p in sim.state.processes if p.role == "simd")
    session = LabSession(load_lab(sim.lab_file), sim.clock)
    try:
        src = session.sources.typeperf("pvs-01", interval_s=INTERVAL_S)
        got: list[Sample] = []
        failed: list[BaseException] = []

        def read() -> None:
            try:
                for x in src.read():
                    got.append(x)
            except Exception as exc:  # shown by the assertion below
                failed.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        clock = session.clock
        t_start = clock.now()
        session.power.on([m.name for m in session.lab.clients])
        clock.sleep(20)
        os.kill(simd, signal.SIGSTOP)
        try:
            time.sleep(FROZEN_WALL_S)
        finally:
            os.kill(simd, signal.SIGCONT)
        # rows the frozen simulator catches up come late, stamped with their own time: wait
        # (bounded) for the row 120 lab s after the start instead of stopping at a fixed time
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            x.metric == "cpu_pct" and x.source_ts >= t_start + 120 for x in list(got)
        ):
            time.sleep(0.1)
        src.close()
        reader.join(timeout=10)
    finally:
        session.close()

    assert not failed, f"the typeperf stream failed: {failed[0]!r}"
    cpu = sorted(x.source_ts for x in got if x.metric == "cpu_pct")
    queue = {x.source_ts for x in got if x.metric == "disk_queue_len" and x.entity == "pvs-01/D:"}
    assert cpu, "typeperf gave no rows"
    steps = [round(b - a, 3) for a, b in itertools.pairwise(cpu)]
    # one row per interval from first to last: the frozen minute is there row by row
    assert steps == [INTERVAL_S] * len(steps), f"gaps in the series: {sorted(set(steps))}"
    assert cpu[-1] - cpu[0] >= 100, "the rows should span the frozen minute"
    assert queue == set(cpu), "a row without the disk queue (a blank value)"
    assert all(0.0 <= x.value <= 100.0 for x in got if x.metric == "cpu_pct")
