"""Hostile plan parameters (``--param KEY=VALUE``, ``--profile``, plan parameter files): refused
at collection (exit 2, one line naming the file or option, the item and the fix) before a cell
runs. The probe found this category sound (19 of 19); these variants keep it so, including the
files themselves (FIFOs, devices, bombs), which are now read through one safe open."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labctl.errors import BadInputError
from labctl.inventory.load import load_lab
from labctl.plugin.plans import load_plan_params
from tests.hostile.harness import Case, api_run, outcome

CATEGORY = "plan params"
TESTPLANS = Path(__file__).resolve().parents[2] / "testplans"
PLAN_FILE = TESTPLANS / "boot_storm.params.yaml"


def _model() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_hostile_boot_storm_plan", TESTPLANS / "test_boot_storm.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BootStormPlan


MODEL = _model()

OVERRIDES: dict[str, tuple[str | None, list[str]]] = {
    "unknown profile": ("nightly", []),
    "profile with a shell word": ("quick;id", []),
    "profile with an escape": ("quick\x1b[2J", []),
    "an empty profile name": ("", []),
    "unknown key": (None, ["group_size=5"]),
    "no equals sign": (None, ["window_s"]),
    "empty key": (None, ["=5"]),
    "key with a space": (None, ["window s=5"]),
    "key with a control character": (None, ["window_s\x00=5"]),
    "negative group": (None, ["group_sizes=-5"]),
    "zero group": (None, ["group_sizes=0"]),
    "group as text": (None, ["group_sizes=five"]),
    "group as a float": (None, ["group_sizes=2.5"]),
    "huge group": (None, ["group_sizes=1e308"]),
    "NaN window": (None, ["window_s=nan"]),
    "infinite window": (None, ["window_s=inf"]),
    "negative window": (None, ["window_s=-1"]),
    "window as a mapping": (None, ["window_s={a: 1}"]),
    "window as a list": (None, ["window_s=[1, 2]"]),
    "a deep value": (None, ["group_sizes=" + "[" * 5000 + "]" * 5000]),
    "a value alias bomb": (None, ["group_sizes=&a [1, *a]"]),
    "a python tag in a value": (None, ["window_s=!!python/object/apply:os.system ['id']"]),
    "a long value": (None, ["clients=" + "x" * 100_000]),
    "an unknown group": (None, ["clients=nobody"]),
    "a group larger than the lab": (None, ["group_sizes=5000"]),
    "a boolean window": (None, ["window_s=true"]),
    "ready timeout zero": (None, ["ready_timeout_s=0"]),
    "sample interval negative": (None, ["sample_interval_s=-2"]),
}


def _bytes(content: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "boot_storm.params.yaml"
        path.write_bytes(content)
        return path

    return make


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "boot_storm.params.yaml")
    return tmp / "boot_storm.params.yaml"


FILES: dict[str, Callable[[Path], Path]] = {
    "a FIFO": _fifo,
    "/dev/zero": lambda _t: Path("/dev/zero"),
    "/dev/urandom": lambda _t: Path("/dev/urandom"),
    "a folder": lambda t: t,
    "a missing file": lambda t: t / "nowhere.params.yaml",
    "3 MB": _bytes(b"# " + b"x" * 3 * 2**20 + b"\n"),
    "nested 10,000 deep": _bytes(b"plan: [" + b"[" * 10_000 + b"]" * 10_000 + b"]\n"),
    "an alias bomb": _bytes(
        b"plan: boot_storm\nprofiles:\n  full: {group_sizes: [1]}\n"
        + b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n".encode() for i in range(1, 9))
    ),
    "not UTF-8": _bytes(b"plan: boot\xff_storm\nprofiles: {}\n"),
    "a syntax error": _bytes(b"plan: boot_storm\nprofiles:\n  full: {group_sizes: [1\n"),
    "a python tag": _bytes(b"plan: !!python/object/apply:os.system ['id']\nprofiles: {}\n"),
    "no profiles": _bytes(b"plan: boot_storm\n"),
    "profiles as a list": _bytes(b"plan: boot_storm\nprofiles: [full]\n"),
    "a default profile that is none": _bytes(
        b"plan: boot_storm\ndefault_profile: x\nprofiles:\n  full: {}\n"
    ),
}


def _typed(path: Path, profile: str | None, overrides: list[str]) -> None:
    """What collection does: load the profile with the overrides, type it with the plan, then
    check it against the lab (labctl/plugin/plan_fixtures.py)."""
    typed = load_plan_params(path, profile, overrides, known=MODEL.model_fields).typed(MODEL)
    problems = typed.lab_problems(_lab()) if hasattr(typed, "lab_problems") else []
    if problems:
        raise BadInputError("\n".join(problems))


_labs: list[Any] = []


def _lab() -> Any:
    if not _labs:
        _labs.append(load_lab())
    return _labs[0]


def cases(tmp: Path) -> list[Case]:
    out = [
        Case(CATEGORY, what, lambda p=p, o=o: api_run(lambda: _typed(PLAN_FILE, p, o)))
        for what, (p, o) in OVERRIDES.items()
    ]
    for i, (what, make) in enumerate(FILES.items()):
        folder = tmp / f"p{i}"
        folder.mkdir()
        out.append(Case(CATEGORY, what, lambda m=make, f=folder: api_run(lambda: _typed(m(f), None, []))))
    return out


@pytest.mark.parametrize("what", [*OVERRIDES, *FILES])
def test_hostile_plan_params_are_refused_before_a_cell(what: str, tmp_path: Path) -> None:
    case = next(c for c in cases(tmp_path) if c.id == what)
    assert outcome(case) is None
