"""`labctl sim calibrate`: prints the comparison, exits 1 when a verdict fails."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from labctl.cli.calibrate_cmd import calibrate
from tests.labfiles import make_test_lab


def test_prints_the_table_next_to_the_paper_and_passes(tmp_path: Path) -> None:
    lab = make_test_lab(tmp_path, clients=5)
    res = CliRunner().invoke(calibrate, ["--lab", str(lab), "--sizes", "1,50", "--window", "240"])
    assert res.exit_code == 0, res.output
    for text in ("boot s", "retries", "CPU avg %", "NIC peak %", "queue peak", "free MB", "queue>8 s"):
        assert text in res.output
    assert "~60" in res.output and "<=10" in res.output  # the published figures, side by side
    assert "calibration: PASS" in res.output


def test_a_failed_verdict_exits_1(tmp_path: Path) -> None:
    # a client that needs 60 s locally cannot boot in the paper's 27 s + streaming
    lab = make_test_lab(tmp_path, clients=2, extra_lab_yaml="twin:\n  local_disk_boot_time_s: 60")
    res = CliRunner().invoke(calibrate, ["--lab", str(lab), "--sizes", "1", "--window", "150"])
    assert res.exit_code == 1, res.output
    assert "FAIL" in res.output and "boot time" in res.output


def test_bad_sizes_are_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(calibrate, ["--lab", str(make_test_lab(tmp_path, clients=2)), "--sizes", "many"])
    assert res.exit_code == 2
