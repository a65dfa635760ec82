"""`labctl certify` and `labctl size measured --run` on a real run folder: a quick boot storm on a
small simulated lab (its own loopback block, state, leases and results), as a customer's would be
made. The synthetic folders of test_certify.py have no inventory or disk IOPS; this one has both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.labfiles import make_test_lab

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LABCTL = [sys.executable, "-m", "labctl"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCTL_") and k != "CI"}
    env["LABCTL_STATE_DIR"] = str(tmp_path / "state")
    env["LABCTL_LEASE_DIR"] = str(tmp_path / "leases")
    env["LABCTL_QUARANTINE_FILE"] = str(tmp_path / "quarantine.json")
    env["LABCTL_RESULTS"] = str(tmp_path / "results")
    env["CI"] = "true"
    return env


def _labctl(tmp_path: Path, *args: str, timeout_s: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LABCTL, *args], env=_env(tmp_path), capture_output=True, text=True, timeout=timeout_s
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("certify-run")
    lab = make_test_lab(tmp, clients=5)
    proc = _labctl(tmp, "run", "boot_storm", "--lab", str(lab), "--profile", "quick", "--no-report")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (folder,) = [p for p in (tmp / "results").iterdir() if (p / "run.json").exists()]
    return tmp, folder


def test_certify_a_real_boot_storm_run(run: tuple[Path, Path]) -> None:
    tmp, folder = run
    proc = _labctl(tmp, "certify", folder.name, "--out", str(tmp / "cert"), "--date", "2026-11-24")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("verdict: Certified")
    page = (tmp / "cert" / "certification.html").read_text(encoding="utf-8")
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", " ", page, flags=re.S)).split())
    # the configuration as recorded, the sizing from the run's own figures, the traceability
    assert "Standalone configuration" in text and "pvs-01" in text
    assert re.search(r"write-cache IOPS per client while booting [\d.]+ IOPS", text), "no storage sizing"
    assert "Not sized from this run" not in text
    assert f"Run {folder.name}" in text and "inventory.resolved.yaml" in text
    assert (tmp / "cert" / "certification.pdf").read_bytes().startswith(b"%PDF-")
    again = _labctl(
        tmp, "certify", str(folder), "--out", str(tmp / "again"), "--date", "2026-11-24", "--no-pdf"
    )
    assert again.returncode == 0
    assert (tmp / "again" / "certification.html").read_text(encoding="utf-8") == page


def test_size_measured_from_the_run_by_its_id(run: tuple[Path, Path]) -> None:
    tmp, folder = run
    proc = _labctl(tmp, "size", "measured", "--run", folder.name, "--desktops", "100", "--drive-type", "10k")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Sizing from measured figures ({folder.name})" in proc.stdout
    assert re.search(r"Desktops per array: \d+", proc.stdout), proc.stdout
