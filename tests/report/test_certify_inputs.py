"""`labctl certify` refuses run folders that cannot be what a run wrote (issue 22, hard edges):
series.csv missing, truncated, all NaN or a link to a file outside the folder; a FIFO; runs of
two labs in one certificate. Each is exit 2 with one line naming the file and the fix, and no
document is written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import EXIT_BAD_INPUT, EXIT_OK
from tests.report.synthetic import make_run


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(
        tmp_path_factory.mktemp("src"), run_id="20071105-100000-boot_storm-inpt", group_sizes=(1, 5)
    )


@pytest.fixture
def run(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / pristine.name
    shutil.copytree(pristine, copy)
    return copy


def certify(capsys: pytest.CaptureFixture[str], tmp_path: Path, *runs: Path) -> tuple[int, str]:
    out = tmp_path / "cert"
    code = run_cli(cli, ["certify", *map(str, runs), "--out", str(out), "--no-pdf", "--date", "2026-11-24"])
    err = capsys.readouterr().err
    if code == EXIT_BAD_INPUT:
        assert not (out / "certification.html").exists(), "a refused input still got a document"
    return code, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_whole_run_is_certified(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_OK, err


def test_missing_series_is_refused(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "series.csv").unlink()
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    line = one_line(err)
    assert "series.csv" in line and "missing" in line and "certify another run" in line


def test_truncated_series_is_refused(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = run / "series.csv"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # cut mid-line, the second cell's samples gone
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    assert "truncated" in one_line(err)


def test_truncated_at_a_line_end_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = run / "series.csv"
    lines = path.read_text().splitlines(keepends=True)
    first_cell = lines[1].split(",")[0]
    path.write_text("".join(ln for ln in lines if ln.split(",")[0] in ("cell", first_cell)))
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    line = one_line(err)
    assert "truncated" in line and "boot_storm-standalone-005" in line


def test_all_nan_series_is_refused(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = run / "series.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], *(ln.rsplit(",", 1)[0] + ",nan" for ln in lines[1:])]) + "\n")
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    assert "NaN" in one_line(err)


def test_series_linked_outside_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere.csv"
    shutil.copy(run / "series.csv", outside)  # even a valid file: it is not the run's
    (run / "series.csv").unlink()
    (run / "series.csv").symlink_to(outside)
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    line = one_line(err)
    assert "symbolic link" in line and "series.csv" in line


def test_link_to_a_system_file_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "series.csv").unlink()
    (run / "series.csv").symlink_to("/etc/passwd")
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    assert "symbolic link" in one_line(err)


def test_a_fifo_is_refused_without_hanging(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "events.jsonl").unlink()
    os.mkfifo(run / "events.jsonl")
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    assert "not a plain file" in one_line(err)


def test_runs_of_two_labs_are_refused(
    run: Path, pristine: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "20071105-110000-boot_storm-othr"
    shutil.copytree(pristine, other)
    info = json.loads((other / "run.json").read_text())
    info["run_id"] = other.name
    info["lab"] = "lab-2007"
    (other / "run.json").write_text(json.dumps(info))
    code, err = certify(capsys, tmp_path, run, other)
    assert code == EXIT_BAD_INPUT
    line = one_line(err)
    assert "two labs" in line and "sim-2007" in line and "lab-2007" in line


def test_json_nested_beyond_the_parser_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "cells" / "boot_storm-standalone-001" / "summary.json").write_text("[" * 200_000 + "]" * 200_000)
    code, err = certify(capsys, tmp_path, run)
    assert code == EXIT_BAD_INPUT
    line = one_line(err)
    assert "summary.json" in line and "nested deeper" in line
