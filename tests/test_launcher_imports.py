"""`labctl launcher <verb>` loads only the launcher: a structural check, never a timed one.

The controller runs one verb per launcher over SSH every few seconds in a storm; importing every
command group for it (the lab, drivers, simulator, matplotlib, pyVmomi) cost 2-5 s a call
(bench/bench_launcher_verbs.py measures it). Each test runs the real entry point in a fresh
interpreter against a real `labctl launcher serve` daemon (a ``custom`` connector: no display, and
``hello``/``events`` start no session) and lists the modules that process loaded.

The daemon listens on ports the kernel picks on 127.0.0.1, and every file is under tmp_path: safe
under xdist.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from labctl.cli import COMMANDS, cli

REPO = Path(__file__).resolve().parents[1]
SERVE_DEADLINE_S = 30.0
CALL_TIMEOUT_S = 60.0

# What a verb may load of labctl: the entry, its dispatch, the launcher's command, config and verbs.
ALLOWED_LABCTL = {
    "labctl",
    "labctl.cli",
    "labctl.cli.dispatch",
    "labctl.cli.launcher_cmd",
    "labctl.errors",
    "labctl.launcher",
    "labctl.launcher.config",
    "labctl.launcher.verbs",
}
# Heavy libraries no verb needs (pydantic and yaml are the launcher's own config: allowed).
HEAVY = (
    *("matplotlib", "numpy", "pyVmomi", "pyVim", "paramiko", "pysnmp", "pyghmi", "nats", "duckdb"),
    *("psycopg", "weasyprint", "rich", "pytest", "cryptography"),
)

# Runs the console script's own entry (labctl.cli:main) and writes what was loaded to argv[1].
PROBE = """
import json, sys
out = sys.argv[1]
sys.argv = ["labctl", *sys.argv[2:]]
from labctl.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _probe(tmp_path: Path, *args: str) -> tuple[int, list[str], subprocess.CompletedProcess[str]]:
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_S,
        env=_env(),
        cwd=tmp_path,
        check=False,
    )
    assert out.exists(), f"the probe did not finish: {r.stderr[-2000:]}"
    loaded = json.loads(out.read_text())
    return loaded["code"], loaded["modules"], r


def _too_much(modules: list[str], allowed_labctl: set[str]) -> list[str]:
    labctl = [m for m in modules if (m == "labctl" or m.startswith("labctl.")) and m not in allowed_labctl]
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    return labctl + heavy


@pytest.fixture(scope="module")
def launcher_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real daemon (`labctl launcher serve`), stopped by its pid at the end."""
    work = tmp_path_factory.mktemp("launcher")
    cfg = work / "launcher.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "imports-probe",
                "state_dir": str(work / "state"),
                "control": {"host": "127.0.0.1", "port": 0},
                "collector": {"bind": "127.0.0.1", "port": 0},
                "connector": {"kind": "custom", "command": ["/bin/true", "{desktop}"]},
            }
        )
    )
    (work / "state").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "labctl", "launcher", "--config", str(cfg), "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=work,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], SERVE_DEADLINE_S)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("{"):
            proc.kill()
            raise RuntimeError(f"the launcher daemon did not start within {SERVE_DEADLINE_S} s: {line}")
        assert json.loads(line)["event"] == "serving"
        yield cfg
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.parametrize("verb", [["hello"], ["events", "-After", "0"]])
def test_a_launcher_verb_loads_only_the_launcher(
    launcher_config: Path, tmp_path: Path, verb: list[str]
) -> None:
    code, modules, r = _probe(tmp_path, "launcher", "--config", str(launcher_config), *verb)
    assert code == 0, r.stderr
    answer = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if verb[0] == "hello":
        assert answer[0]["event"] == "hello" and answer[0]["launcher"] == "imports-probe"
        assert answer[0]["protocol"] == "labctl-launcher/1"
    else:
        assert answer[-1]["event"] == "cursor"
    assert "labctl.launcher.verbs" in modules  # the probe ran the verb's path, not something shorter
    assert _too_much(modules, ALLOWED_LABCTL) == []


def test_a_launcher_verb_without_its_daemon_fails_in_one_line_and_loads_only_the_launcher(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "nowhere.yaml"
    code, modules, r = _probe(tmp_path, "launcher", "--config", str(missing), "hello")
    assert code == 2
    assert f"{missing}: cannot read the launcher configuration" in r.stderr
    assert _too_much(modules, ALLOWED_LABCTL) == []


def test_the_workload_loads_neither_the_lab_nor_the_launcher(tmp_path: Path) -> None:
    out = tmp_path / "w.pyz"
    code, modules, r = _probe(tmp_path, "workload", "--zipapp", str(out))
    assert code == 0 and out.exists(), r.stderr
    allowed = {"labctl", "labctl.cli", "labctl.cli.dispatch", "labctl.cli.workload_cmd", "labctl.errors"}
    allowed |= {m for m in modules if m == "labctl.workload" or m.startswith("labctl.workload.")}
    assert _too_much(modules, allowed) == []


def test_every_named_command_is_the_command_of_that_name() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert cli.get_command(ctx, "no-such-command") is None
