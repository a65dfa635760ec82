"""What one `labctl launcher <verb>` costs the launcher machine: the floor of every controller poll.

The controller runs one verb per launcher over SSH every few seconds in a session storm (one
process each). A real `labctl launcher serve` daemon (a ``custom`` connector: no display, and
``hello`` starts no session) answers ``hello`` here; each call is timed from fork to exit, in
rounds that run every variant once, in turn, so the machine's load falls on all of them alike:

- ``python -c pass``: the interpreter's own start, the floor no verb can go under;
- ``launcher modules``: importing only labctl.launcher's config and verbs (what a verb needs);
- ``hello, now``: ``python -m labctl launcher --config F hello`` as shipped;
- ``hello, eager``: the same call with every command group imported first, as `labctl.cli` did
  before it imported a command's module only when it runs (the "before" figure, in the same run).

Prints per call: median, p95 and mean, CPU seconds (user+sys of the child), and the ratios to the
floor and eager/now. Needs nothing but this repository.

    .venv/bin/python bench/bench_launcher_verbs.py [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SERVE_DEADLINE_S = 30.0
CALL_TIMEOUT_S = 60.0

EAGER = (
    "import importlib, sys\n"
    "import labctl.cli as c\n"
    "for target in c.COMMANDS.values():\n"
    "    importlib.import_module(target.split(':')[0])\n"
    "sys.argv = ['labctl', *sys.argv[1:]]\n"
    "c.main()\n"
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _start_daemon(work: Path) -> tuple[subprocess.Popen[str], Path]:
    cfg = work / "launcher.yaml"
    (work / "state").mkdir()
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "bench-verbs",
                "state_dir": str(work / "state"),
                "control": {"host": "127.0.0.1", "port": 0},
                "collector": {"bind": "127.0.0.1", "port": 0},
                "connector": {"kind": "custom", "command": ["/bin/true", "{desktop}"]},
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "labctl", "launcher", "--config", str(cfg), "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
        cwd=work,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], SERVE_DEADLINE_S)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("{"):
        proc.kill()
        proc.wait(timeout=10)
        raise SystemExit(f"the launcher daemon did not start within {SERVE_DEADLINE_S} s")
    return proc, cfg


def _timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and the child's CPU seconds (user + sys) of one call; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=CALL_TIMEOUT_S, env=_env(), cwd=cwd)
    wall_s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}...: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall_s, cpu_s


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20, help="calls per variant (default 20)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-launcher-verbs-") as tmp:
        work = Path(tmp)
        daemon, cfg = _start_daemon(work)
        try:
            py = sys.executable
            variants = {
                "python -c pass": [py, "-c", "pass"],
                "launcher modules": [py, "-c", "import labctl.launcher.config, labctl.launcher.verbs"],
                "hello, now": [py, "-m", "labctl", "launcher", "--config", str(cfg), "hello"],
                "hello, eager": [py, "-c", EAGER, "launcher", "--config", str(cfg), "hello"],
            }
            for argv in variants.values():  # warm the page cache and .pyc files once
                _timed(argv, work)
            wall: dict[str, list[float]] = {k: [] for k in variants}
            cpu: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(args.calls):
                for name, argv in variants.items():
                    w, c = _timed(argv, work)
                    wall[name].append(w)
                    cpu[name].append(c)
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(timeout=10)

    floor = statistics.median(wall["python -c pass"])
    print(
        f"labctl launcher hello, {args.calls} calls per variant, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'variant':<18} {'median s':>9} {'p95 s':>7} {'mean s':>7} {'cpu s':>7} {'x floor':>8}")
    for name in variants:
        med = statistics.median(wall[name])
        print(
            f"{name:<18} {med:>9.3f} {_p95(wall[name]):>7.3f} {statistics.mean(wall[name]):>7.3f} "
            f"{statistics.median(cpu[name]):>7.3f} {med / floor:>8.1f}"
        )
    eager, now = statistics.median(wall["hello, eager"]), statistics.median(wall["hello, now"])
    print(f"eager / now: {eager / now:.1f}x per call ({eager - now:.2f} s saved per verb per poll)")
    print(json.dumps({k: round(statistics.median(v), 4) for k, v in wall.items()}))


if __name__ == "__main__":
    main()
