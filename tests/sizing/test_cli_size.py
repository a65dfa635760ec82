"""`labctl size <calculator>`: help that answers, the formula with numbers, --json, exit 2 on bad input."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli

CALCULATORS = ["functional-iops", "raw-iops", "drives", "capacity", "headroom", "measured", "nic-ports"]


class Run:
    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = run_cli(cli, list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err


@pytest.fixture
def labctl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("COLUMNS", "100")
    return Run(capsys)


def _examples(help_text: str) -> list[list[str]]:
    """The `labctl size ...` example lines of a help text (backslash continuations joined)."""
    joined = re.sub(r"\\\n\s*", " ", help_text)
    commands = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("labctl size "):
            args = shlex.split(line.split("#")[0])[1:]  # without "labctl"
            if "RUN" not in args:  # a placeholder for the reader's own run folder
                commands.append(args)
    return commands


def test_size_is_listed_and_lists_every_calculator(labctl: Run) -> None:
    code, out, _ = labctl("--help")
    assert code == 0 and re.search(r"^\s+size\s", out, re.M)
    code, out, _ = labctl("size", "--help")
    assert code == 0 and all(name in out for name in CALCULATORS)


@pytest.mark.parametrize("name", CALCULATORS)
def test_help_gives_formula_units_defaults_and_a_runnable_example(labctl: Run, name: str) -> None:
    code, out, _ = labctl("size", name, "--help")
    assert code == 0
    assert "=" in out and re.search(r"Units?:|IOPS|GB", out), "formula and units"
    assert "--json" in out
    examples = _examples(out)
    assert examples, f"no example in `labctl size {name} --help`"
    for args in examples:
        assert args[:2] == ["size", name]
        code, result, err = labctl(*args)
        assert code == 0, (args, err)
        assert "=" in result and "\n" in result


def test_defaults_are_shown_in_help(labctl: Run) -> None:
    _, out, _ = labctl("size", "capacity", "--help")
    assert "[default: 15%]" in out and "[default: 25%]" in out
    _, out, _ = labctl("size", "drives", "--help")
    assert all(f in out for f in ("ssd 6000", "15k 180", "10k 140", "7.2k 80"))


def test_capacity_prints_the_papers_formula_with_its_numbers(labctl: Run) -> None:
    code, out, err = labctl(
        "size", "capacity", "--array-capacity-gb", "2539", "--vdisk-size-gb", "25", "--vdisk-count", "6",
        "--vm-ram-gb", "1", "--write-cache-gb", "1.5", "--desktops", "1270",
    )  # fmt: skip
    assert code == 0, err
    assert "= (2539 - (0.15 × 2539 + 25 × 6)) / (1.25 × (1 + 1.5))" in out
    assert "= 642.608 desktops" in out and "642 desktops per array (rounded down" in out
    assert "arrays for 1270 desktops" in out and out.rstrip().endswith("→ 2 (rounded up)")


def test_json_output_is_exact_and_machine_readable(labctl: Run) -> None:
    code, out, _ = labctl(
        "size", "raw-iops", "--functional-iops", "4500", "--write-share", "99.8%", "--raid", "10", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["calculator"] == "raw-iops"
    assert data["inputs"] == {"functional_iops": 4500, "write_share": 0.998, "raid": 10}
    assert data["outputs"]["raw_iops"] == 8991 and data["outputs"]["write_penalty"] == 2
    assert data["exact"] == {"backend_ios_per_host_io": "999/500"}
    assert data["formula"][-1].strip() == "= 8991 IOPS (back-end)"

    code, out, _ = labctl(
        "size", "measured", "--desktops", "1270", "--steady-iops-per-desktop", "50/7", "--steady-write-share", "99.8%",
        "--array-iops", "4500", "--array-write-share", "99.8%", "--raid", "6", "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["outputs"]["phases"]["steady"]["desktops_per_array"] == 630
    assert data["outputs"]["arrays"] == 3 and data["exact"]["phases.steady.raw_iops_per_desktop"] == "599/14"


def test_drives_shows_both_phases_and_the_rounding(labctl: Run) -> None:
    code, out, _ = labctl(
        "size", "drives", "--desktops", "630", "--steady-iops-per-desktop", "8", "--steady-write-share", "99.8%",
        "--boot-iops-per-desktop", "18", "--boot-write-share", "87%", "--preboot-share", "20%",
        "--raid", "10", "--drive-type", "15k",
    )  # fmt: skip
    assert code == 0
    assert "504 × 18 = 9072 IOPS" in out and "= 94.248" in out
    assert "→ 95 whole drives (rounded up)" in out and "→ 96 drives for RAID 10" in out
    assert out.rstrip().endswith("Drives needed: max(56, 96) = 96 (boot limits)")


BAD = [
    (["functional-iops", "--raw-iops", "-5", "--write-share", "10%", "--raid", "5"], "--raw-iops", "must not be negative"),
    (["functional-iops", "--drives", "0", "--drive-type", "15k", "--write-share", "10%", "--raid", "5"], "--drives", "at least 1"),
    (["functional-iops", "--raw-iops", "100", "--write-share", "120%", "--raid", "5"], "--write-share", "over 100 %"),
    (["functional-iops", "--raw-iops", "100", "--write-share", "87", "--raid", "5"], "--write-share", "over 100 %"),
    (["raw-iops", "--functional-iops", "100", "--write-share", "10%", "--raid", "4"], "--raid", "unknown RAID level"),
    (["raw-iops", "--functional-iops", "many", "--write-share", "10%", "--raid", "5"], "--functional-iops", "not a number"),
    (["drives", "--functional-iops", "100", "--write-share", "1", "--raid", "10", "--drive-type", "9k"], "--drive-type", "unknown drive type"),
    (["drives", "--functional-iops", "100", "--write-share", "1", "--raid", "10", "--iops-per-drive", "0"], "--iops-per-drive", "more than 0"),
    (["drives", "--desktops", "630", "--raid", "10", "--drive-type", "ssd"], "--steady-iops-per-desktop", "not given"),
    (["capacity", "--array-capacity-gb", "100", "--vdisk-size-gb", "25", "--vdisk-count", "6", "--vm-ram-gb", "1",
      "--write-cache-gb", "1.5"], "--array-capacity-gb", "holds no desktop"),
    (["headroom", "--array-capacity-gb", "100", "--used-gb", "101"], "--used-gb", "more than the array"),
    (["measured", "--desktops", "10", "--array-iops", "100", "--array-write-share", "50%", "--raid", "10"], "no phase", "give e.g."),
    (["measured", "--desktops", "10", "--steady-iops-per-desktop", "5", "--steady-write-share", "150%", "--array-iops", "100",
      "--array-write-share", "50%", "--raid", "10"], "--steady-write-share", "over 100 %"),
    (["nic-ports", "--peak-utilisation-share", "60%", "--ports", "0"], "--ports", "at least 1"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "option", "problem"), BAD, ids=[f"{b[0][0]}:{b[1]}" for b in BAD])
def test_bad_input_exits_2_with_one_line_naming_the_option_and_the_fix(
    labctl: Run, args: list[str], option: str, problem: str
) -> None:
    code, out, err = labctl("size", *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {option}") and problem in lines[0] and "Traceback" not in err
    assert re.search(r"\(.*(give|use).*\)$", lines[0]), "the fix, in brackets"
