"""Acceptance: a week of nights of `labctl nightly` on a small simulated lab, every night a real run.

Seven nights of the boot storm's quick profile (two cells: 2 and 5 clients woken at once) on a
5-client copy of the 2007 lab, each night run by `labctl nightly` as a timer would start it:

1. no baseline yet: stored, exit by its own outcome (0), the command to make it the baseline,
   which the test runs;
2-4. the same lab: no regression (0);
5. a real regression: the write cache on two 7.2K SATA disks (RAID 1) instead of four 10K SAS
   (RAID 10), with the controller's write-back cache off (a failed battery). With the cache on, a
   5-client storm's writes fit in it and no disk change shows (as the twin's physics says; the
   paper's queues need 50+ clients): flagged (1), the write-cache disk's latency and queue first;
6. a lab fault: optiplex-003 ignores its magic packet (the simulator's `client_never_wakes`): the
   5-client cell is a lab fault, never a regression (3);
7. the same lab again: no regression (0), the noise now measured over a history of six nights, the
   regressed night left out of it; the full report: Allure with its history from the store.

The lab is a streaming lab only: the copy of sim-2007.yaml without its vCenter, VMs and array,
which a boot storm of physical clients does not use (the simulated vCenter's host counters are
vcsim's generated samples, which wander between runs: they measure nothing of this lab).

Time scale 20 and a 10 lab-second sample interval: a simulator starved of CPU for up to a wall
second still leaves no gap in the typeperf series (a gap is a silence longer than two intervals).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.labfiles import make_test_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PLAN = [
    *("--profile", "quick", "--param", "group_sizes=2,5", "--param", "window_s=60"),
    *("--param", "ready_timeout_s=60", "--param", "sample_interval_s=10", "--param", "poll_interval_s=10"),
]
SMALL, BIG = "boot_storm-standalone-002", "boot_storm-standalone-005"
WRITE_CACHE = "pvs-01/D:"


def _labs(tmp_path: Path) -> dict[str, Path]:
    base = make_test_lab(tmp_path, clients=5, time_scale=20)
    text = re.sub(r"\nvcenters:\n.*?\ngroups:\n", "\ngroups:\n", base.read_text(), flags=re.S)
    assert "vcenters:" not in text and "storage:" not in text
    base.write_text(text)
    cache = "raid: 10, disks: 4, disk_type: sas, rpm: 10000"
    assert cache in text and "  seed: 2007\n" in text
    slower = text.replace(cache, "raid: 1, disks: 2, disk_type: sata, rpm: 7200")
    slower = slower.replace("  seed: 2007\n", "  seed: 2007\n  twin: {controller_write_cache_mb: 0}\n")
    faulty = text.replace(
        "  seed: 2007\n",
        "  seed: 2007\n  faults:\n    - {kind: client_never_wakes, targets: [optiplex-003]}\n",
    )
    (tmp_path / "slower-write-cache.yaml").write_text(slower)
    (tmp_path / "client-never-wakes.yaml").write_text(faulty)
    return {
        "same": base,
        "slower": tmp_path / "slower-write-cache.yaml",
        "fault": tmp_path / "client-never-wakes.yaml",
    }


def _labctl(tmp_path: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_") and k != "CI"}
    env.update(
        LABCTL_STATE_DIR=str(tmp_path / "state"),
        LABCTL_LEASE_DIR=str(tmp_path / "leases"),
        LABCTL_QUARANTINE_FILE=str(tmp_path / "quarantine.json"),
        LABCTL_RESULTS=str(tmp_path / "results"),
        CI="true",
    )
    return subprocess.run(
        [sys.executable, "-m", "labctl", *args], env=env, capture_output=True, text=True, timeout=timeout_s
    )


def _run_folder(out: str) -> Path:
    found = re.findall(r"^run folder: (.+)$", out, re.M)
    assert found, out[-3000:]
    return Path(found[-1])


def _report_data(html: str) -> dict[str, str]:
    """The files Allure's single-file report embeds (base64 in d("name","...") calls)."""
    return {
        name: base64.b64decode(b64).decode("utf-8", "replace")
        for name, b64 in re.findall(r'd\("([^"]+)","([A-Za-z0-9+/=]*)"\)', html)
    }


def test_a_week_of_nights(tmp_path: Path) -> None:
    started = time.monotonic()
    labs = _labs(tmp_path)
    week = ["same", "same", "same", "same", "slower", "fault", "same"]
    codes: dict[int, int] = {}
    folders: dict[int, Path] = {}
    outputs: dict[int, str] = {}
    for night, lab in enumerate(week, start=1):
        report = [] if night == 7 else ["--no-report"]
        proc = _labctl(tmp_path, "nightly", "--lab", str(labs[lab]), *PLAN, *report)
        outputs[night] = proc.stdout + proc.stderr
        codes[night] = proc.returncode
        folders[night] = _run_folder(proc.stdout)
        print(
            f"--- night {night} ({lab}): exit {proc.returncode}\n{(folders[night] / 'nightly.md').read_text()}"
        )
        if night == 1:  # no baseline yet: the summary says how to make this run the baseline
            (command,) = re.findall(r"^Make it the baseline: (labctl baseline set .+)$", proc.stdout, re.M)
            assert command.endswith(folders[1].name)
            done = _labctl(tmp_path, *command.split()[1:])
            assert done.returncode == 0, done.stdout + done.stderr
    print(f"--- the week took {time.monotonic() - started:.0f} s of wall time")

    assert codes == {1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 3, 7: 0}, {n: outputs[n][-2500:] for n in codes}
    assert "NO BASELINE yet" in outputs[1]
    for night in range(1, 8):  # every night went into the store through the run's own sink
        assert "stored by the run" in outputs[night], outputs[night][-2000:]

    # night 5: flagged, the write-cache disk's figures first, on every cell that regressed
    comparison = json.loads((folders[5] / "compare.json").read_text())
    regressed = {c["cell"]: c["figures"] for c in comparison["cells"] if c["status"] == "regressed"}
    assert regressed, comparison
    for cell, figures in regressed.items():
        first = figures[0]["figure"]
        assert first.startswith(("disk_latency_ms", "disk_queue_len")) and first.endswith(WRITE_CACHE), (
            cell,
            first,
        )
    assert not {c["status"] for c in comparison["cells"]} & {"lab_fault", "missing"}

    # night 6: a lab fault, named, and not judged as a regression or an improvement
    verdict6 = json.loads((folders[6] / "run.json").read_text())["extra"]["nightly"]
    assert list(verdict6["lab_faults"]) == [BIG] and "optiplex-003" in verdict6["lab_faults"][BIG]
    assert verdict6["regressed"] == {}

    # night 7: clean against the baseline, the noise from six earlier nights (the regressed night
    # is an outlier of its stretch, not noise)
    verdict7 = json.loads((folders[7] / "run.json").read_text())["extra"]["nightly"]
    assert verdict7["verdict"] == "passed" and verdict7["history_runs"] == 6
    assert "history of 6 runs" in (folders[7] / "nightly.md").read_text()

    # the trends page: seven nights, the regression and the lab fault where they happened
    trends = (folders[7] / "report" / "trends.html").read_text()
    assert trends.count("<svg") >= 8
    for night in range(1, 8):
        assert folders[night].name in trends
    assert "regression (exit 1)" in trends and "lab_fault (exit 3)" in trends
    assert "flagged as a regression" in trends and "lab fault (no value)" in trends

    # Allure: every cell's history holds nights 1-6 from the store, night 5 red where it regressed
    # and night 6's 5-client cell broken
    html = (folders[7] / "report" / "index.html").read_text()
    results = [json.loads(v) for k, v in _report_data(html).items() if k.startswith("data/test-results/")]
    assert {r["fullName"].rsplit("/", 1)[1] for r in results} == {SMALL, BIG}
    for r in results:
        cell = r["fullName"].rsplit("/", 1)[1]
        history = sorted(r["history"], key=lambda h: h["start"])
        assert len(history) == 6, (cell, history)
        statuses = [h["status"] for h in history]
        assert statuses[4] == ("failed" if cell in regressed else "passed"), (cell, statuses)
        assert statuses[5] == ("broken" if cell == BIG else "passed"), (cell, statuses)
        assert statuses[:4] == ["passed"] * 4, (cell, statuses)
