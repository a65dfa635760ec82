"""Hostile criteria files: refused at collection (exit 2, one line naming the file, the criterion
and the fix) before a storm runs. The probe's seed: a selector naming a source or metric that does
not exist ran a whole storm, then said "no data"; grown here into misspelt, wrong-source and
never-matching selectors, plus files that are not criteria files at all (FIFOs, devices, bombs)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from labctl.criteria.errors import CriteriaFileError
from labctl.criteria.known import unknown_selectors
from labctl.criteria.model import load_criteria
from labctl.criteria.variables import lab_names
from labctl.inventory.load import load_lab
from tests.hostile.harness import Case, api_run, outcome

CATEGORY = "criteria files"
PLANS = Path(__file__).resolve().parents[2] / "testplans" / "criteria"
BASE = yaml.safe_load((PLANS / "boot_storm.yaml").read_text())


def _select(**select: Any) -> bytes:
    data = yaml.safe_load((PLANS / "boot_storm.yaml").read_text())
    data["criteria"][0]["select"] = select
    return yaml.safe_dump(data, sort_keys=False).encode()


SELECTORS: dict[str, bytes] = {
    "misspelt source": _select(source="typeprf", entity="{write_cache_disk}", metric="disk_queue_len"),
    "source in capitals": _select(source="TYPEPERF", metric="disk_queue_len"),
    "unknown source": _select(source="snmp", metric="disk_queue_len"),
    "source pattern matching nothing": _select(source="type*x", metric="disk_queue_len"),
    "source with a space": _select(source="typeperf ", metric="disk_queue_len"),
    "misspelt metric": _select(source="typeperf", metric="disk_que_len"),
    "metric with units": _select(source="typeperf", metric="disk_queue_len (requests)"),
    "metric of another source": _select(source="typeperf", metric="power_w"),
    "vCenter metric on typeperf": _select(source="typeperf", metric="cpu.usage.average"),
    "array metric on vcenter": _select(source="vcenter", metric="write_cache_used_pct"),
    "metric pattern matching nothing": _select(source="typeperf", metric="disk_*_ms_x"),
    "metric only, unknown": _select(metric="queue_depth"),
    "metric only, misspelt latency": _select(metric="latencyms"),
    "a result as a series metric": _select(source="typeperf", metric="boot_time_s"),
    "a shell word as metric": _select(source="typeperf", metric="$(id)"),
    "an empty metric": _select(source="typeperf", metric=""),
    "sessions metric on pvs": _select(source="pvs", metric="login_s"),
    "redfish temperature": _select(source="redfish", metric="temperature_c"),
    "unity with a typo": _select(source="untiy", metric="latency_ms"),
    "an unknown result": _select(result="boot_tme_s", role="storm"),
}


def _bytes(content: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "boot_storm.yaml"
        path.write_bytes(content)
        return path

    return make


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "boot_storm.yaml")
    return tmp / "boot_storm.yaml"


FILES: dict[str, Callable[[Path], Path]] = {
    **{what: _bytes(content) for what, content in SELECTORS.items()},
    "a FIFO": _fifo,
    "/dev/zero": lambda _t: Path("/dev/zero"),
    "/dev/urandom": lambda _t: Path("/dev/urandom"),
    "a folder": lambda t: t,
    "3 MB": _bytes(b"# " + b"x" * 3 * 2**20 + b"\n"),
    "nested 10,000 deep": _bytes(b"plan: [" + b"[" * 10_000 + b"]" * 10_000 + b"]\n"),
    "an alias bomb": _bytes(
        b"plan: boot_storm\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n".encode() for i in range(1, 9))
        + b"criteria: []\n"
    ),
    "not UTF-8": _bytes(b"plan: boot\xff_storm\ncriteria: []\n"),
    "a syntax error": _bytes(b"plan: boot_storm\ncriteria:\n  - name: [\n"),
    "a python tag": _bytes(b"plan: !!python/object/apply:os.system ['id']\ncriteria: []\n"),
    "a list at the top": _bytes(b"- plan\n- criteria\n"),
    "no criteria": _bytes(b"plan: boot_storm\n"),
    "an unknown statistic": _bytes(
        yaml.safe_dump({**BASE, "criteria": [{**BASE["criteria"][1], "statistic": "median"}]}).encode()
    ),
    "a band inside out": _bytes(
        yaml.safe_dump(
            {**BASE, "criteria": [{**BASE["criteria"][1], "pass": {"max": 95}, "marginal": {"max": 50}}]}
        ).encode()
    ),
    "an expression with an unknown name": _bytes(
        yaml.safe_dump(
            {**BASE, "criteria": [{**BASE["criteria"][0], "pass": {"max": "2 * spindles(nope)"}}]}
        ).encode()
    ),
}

_names: list[Any] = []


def _lab_names() -> Any:
    if not _names:
        _names.append(lab_names(load_lab()))
    return _names[0]


def _collect(path: Path) -> None:
    """What plan collection does with a plan's criteria file (labctl/plugin/plan_fixtures.py)."""
    problems = unknown_selectors(load_criteria(path, _lab_names()), str(path))
    if problems:
        raise CriteriaFileError("\n".join(problems))


def _case(what: str, make: Callable[[Path], Path], tmp: Path) -> Case:
    return Case(CATEGORY, what, lambda: api_run(lambda: _collect(make(tmp))))


@pytest.mark.parametrize("what", list(FILES))
def test_hostile_criteria_file_is_refused_before_a_storm(what: str, tmp_path: Path) -> None:
    assert outcome(_case(what, FILES[what], tmp_path)) is None


def test_the_shipped_criteria_pass_the_selector_check() -> None:
    for path in sorted(PLANS.glob("*.yaml")):
        assert (
            unknown_selectors(load_criteria(path, _lab_names() if "boot" in path.name else None), str(path))
            == []
        )


def cases(tmp: Path) -> list[Case]:
    out = []
    for i, (what, make) in enumerate(FILES.items()):
        folder = tmp / f"c{i}"
        folder.mkdir()
        out.append(_case(what, make, folder))
    return out
