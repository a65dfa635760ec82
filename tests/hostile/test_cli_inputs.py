"""Hostile command-line arguments (certify, runs, lease, power), run folders and store URLs: each
refused with the documented exit code (2 for bad input; ``compare`` 2 or 3 as it documents; a
store that cannot be reached 1 or 3), a few lines naming the argument and the fix, no traceback,
no password echoed, nothing touched (power targets are never valid machines here; leases go to a
folder of the test's own)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from labctl.recorder.series import read_events, read_series
from tests.hostile.harness import SECRET, Case, api_run, cli_run, outcome
from tests.store.runs import make_run

RUN_ID = "20071105-100000-boot_storm-0001"


def _env(tmp: Path) -> dict[str, str]:
    return {
        "LABCTL_RESULTS": str(tmp / "results"),
        "LABCTL_LEASE_DIR": str(tmp / "leases"),
        "LABCTL_STORE": f"duckdb:{tmp / 'store'}",
    }


def _in_env(tmp: Path, args: Callable[[Path], list[str]]) -> Callable[[], tuple[int, str]]:
    def run() -> tuple[int, str]:
        old = {k: os.environ.get(k) for k in _env(tmp)}
        os.environ.update(_env(tmp))
        (tmp / "results").mkdir(exist_ok=True)
        try:
            return cli_run(args(tmp))
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    return run


def _fifo(tmp: Path, name: str = "fifo") -> Path:
    path = tmp / name
    if not path.exists():
        os.mkfifo(path)
    return path


# --- command-line arguments ----------------------------------------------------------------------

ARGS: dict[str, Callable[[Path], list[str]]] = {
    # certify (run folders are checked by the certify code itself: docs/certify)
    "certify: an unknown run id": lambda t: [
        "certify",
        "20990101-000000-nope-0000",
        "--no-pdf",
        "--out",
        str(t / "o"),
    ],
    "certify: a path out of the results": lambda t: [
        "certify",
        "../../../../etc",
        "--no-pdf",
        "--out",
        str(t / "o"),
    ],
    "certify: a system file": lambda t: ["certify", "/etc/passwd", "--no-pdf", "--out", str(t / "o")],
    "certify: an empty run": lambda t: ["certify", "", "--no-pdf", "--out", str(t / "o")],
    "certify: /dev/zero": lambda t: ["certify", "/dev/zero", "--no-pdf", "--out", str(t / "o")],
    "certify: a FIFO": lambda t: ["certify", str(_fifo(t)), "--no-pdf", "--out", str(t / "o")],
    "certify: an escape in the id": lambda t: ["certify", "run\x1b[2J", "--no-pdf", "--out", str(t / "o")],
    "certify: a long id": lambda t: ["certify", "r" * 5000, "--no-pdf", "--out", str(t / "o")],
    "certify: no run": lambda t: ["certify", "--no-pdf"],
    "certify: a bad date": lambda t: ["certify", "x", "--date", "2026-13-45", "--no-pdf"],
    "certify: a word as date": lambda t: ["certify", "x", "--date", "tomorrow", "--no-pdf"],
    "certify: an empty folder": lambda t: ["certify", str(t), "--no-pdf", "--out", str(t / "o")],
    # runs
    "runs: since a word": lambda t: ["runs", "--since", "yesterday"],
    "runs: since 30 February": lambda t: ["runs", "--since", "2026-02-30"],
    "runs: until before since": lambda t: ["runs", "--since", "2026-02-01", "--until", "2026-01-01"],
    "runs: limit 0": lambda t: ["runs", "--limit", "0"],
    "runs: limit -1": lambda t: ["runs", "--limit", "-1"],
    "runs: limit beyond 64 bits": lambda t: ["runs", "--limit", "99999999999999999999999"],
    "runs: unknown outcome": lambda t: ["runs", "--outcome", "won"],
    "runs show: unknown id": lambda t: ["runs", "show", "20990101-000000-nope-0000"],
    "runs show: SQL in the id": lambda t: ["runs", "show", "'; DROP TABLE runs; --"],
    "runs show: a path": lambda t: ["runs", "show", "../../etc/passwd"],
    "runs show: empty": lambda t: ["runs", "show", ""],
    "runs sql: DROP": lambda t: ["runs", "sql", "DROP TABLE runs"],
    "runs sql: a local file": lambda t: ["runs", "sql", "SELECT * FROM read_csv('/etc/passwd')"],
    "runs sql: COPY out": lambda t: ["runs", "sql", f"COPY (SELECT 1) TO '{t}/x.csv'"],
    "runs sql: empty": lambda t: ["runs", "sql", ""],
    "runs import: a system folder": lambda t: ["runs", "import", "/etc"],
    # lease
    "lease take: negative ttl": lambda t: ["lease", "take", "sim-2007", "--ttl", "-1h"],
    "lease take: ttl forever": lambda t: ["lease", "take", "sim-2007", "--ttl", "forever"],
    "lease take: ttl 0": lambda t: ["lease", "take", "sim-2007", "--ttl", "0s"],
    "lease take: ttl 1e400h": lambda t: ["lease", "take", "sim-2007", "--ttl", "1e400h"],
    "lease take: ttl of a million years": lambda t: ["lease", "take", "sim-2007", "--ttl", "365000000d"],
    "lease take: negative wait": lambda t: ["lease", "take", "sim-2007", "--wait", "-5s"],
    "lease take: empty resource": lambda t: ["lease", "take", ""],
    "lease take: an escape in the resource": lambda t: ["lease", "take", "lab\x1b[2J"],
    "lease take: a path as resource": lambda t: ["lease", "take", "../../etc/passwd"],
    "lease take: a long resource": lambda t: ["lease", "take", "a" * 5000],
    "lease take: kind without a name": lambda t: ["lease", "take", "array:"],
    "lease take: name without a kind": lambda t: ["lease", "take", ":x"],
    "lease release: nothing held": lambda t: ["lease", "release", "sim-2007"],
    "lease break: empty": lambda t: ["lease", "break", ""],
    "lease list: a bad hub URL": lambda t: ["lease", "list", "--hub", "http://127.0.0.1:1"],
    "lease list: a hub URL with a password": lambda t: [
        "lease",
        "list",
        "--hub",
        f"nats://u:{SECRET}@127.0.0.1:1",
    ],
    # power (no target here names a machine: nothing may be touched)
    "power status: unknown target": lambda t: ["power", "status", "nobody"],
    "power on: a range beyond the lab": lambda t: ["power", "on", "optiplex-[001-999]"],
    "power on: a huge range": lambda t: ["power", "on", "optiplex-[0-99999999]"],
    "power on: empty target": lambda t: ["power", "on", ""],
    "power on: a shell word": lambda t: ["power", "on", "optiplex-001;reboot"],
    "power on: an option as target": lambda t: ["power", "on", "-x"],
    "power off: an escape": lambda t: ["power", "off", "--hard", "clients\x1b[2J"],
    "power reset: command substitution": lambda t: ["power", "reset", "$(id)"],
    "power on: an open range": lambda t: ["power", "on", "optiplex-[001-010"],
    "power status: /dev/zero as the lab": lambda t: ["power", "status", "x", "--lab", "/dev/zero"],
    "power status: a FIFO as the lab": lambda t: ["power", "status", "x", "--lab", str(_fifo(t))],
    "power status: unknown configuration": lambda t: ["power", "status", "x", "--config", "nope"],
}

# --- run folders (read by compare and runs import) -------------------------------------------------


def _run(tmp: Path) -> Path:
    results = tmp / "results"
    results.mkdir(exist_ok=True)
    return make_run(results, seed=1)


def _broken(damage: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def args(tmp: Path) -> list[str]:
        base = _run(tmp)
        run = base.with_name(base.name[:-4] + "beef")
        shutil.copytree(base, run)
        damage(run)
        return ["compare", str(run), str(base)]

    return args


def _replace(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        path = run / name
        path.unlink()
        make(path)

    return damage


def _touch(path: Path) -> Path:
    path.touch()
    return path


def _first_cell(run: Path) -> Path:
    return sorted((run / "cells").iterdir())[0]


RUN_FOLDERS: dict[str, Callable[[Path], list[str]]] = {
    "run.json a FIFO": _broken(_replace("run.json", lambda p: os.mkfifo(p))),
    "run.json a symlink to /etc/passwd": _broken(_replace("run.json", lambda p: p.symlink_to("/etc/passwd"))),
    "run.json a symlink to /dev/zero": _broken(_replace("run.json", lambda p: p.symlink_to("/dev/zero"))),
    "run.json 100 MB sparse": _broken(_replace("run.json", lambda p: os.truncate(_touch(p), 100 * 2**20))),
    "run.json nested 100,000 deep": _broken(
        _replace("run.json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000))
    ),
    "run.json not JSON": _broken(_replace("run.json", lambda p: p.write_text("{run: "))),
    "run.json a list": _broken(_replace("run.json", lambda p: p.write_text("[1, 2]"))),
    "run.json with wrong types": _broken(
        _replace("run.json", lambda p: p.write_text(json.dumps({"run_id": 5, "cells": "x"})))
    ),
    "run.json empty": _broken(_replace("run.json", lambda p: p.write_text(""))),
    "run.json not UTF-8": _broken(_replace("run.json", lambda p: p.write_bytes(b'{"run_id": "\xff"}'))),
    "run.json a folder": _broken(_replace("run.json", lambda p: p.mkdir())),
    "summary.json a symlink to /etc/passwd": _broken(
        lambda r: _replace("summary.json", lambda p: p.symlink_to("/etc/passwd"))(_first_cell(r))
    ),
    "summary.json a FIFO": _broken(
        lambda r: _replace("summary.json", lambda p: os.mkfifo(p))(_first_cell(r))
    ),
    "summary.json nested deep": _broken(
        lambda r: _replace("summary.json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000))(
            _first_cell(r)
        )
    ),
    "the run a FIFO": lambda t: ["compare", str(_fifo(t)), str(_run(t))],
    "the run /dev/zero": lambda t: ["compare", "/dev/zero", str(_run(t))],
    "the run an empty folder": lambda t: ["compare", str((t / "empty").mkdir() or t / "empty"), str(_run(t))],
}


def _series(damage: Callable[[Path], None]) -> Callable[[Path], tuple[int, str]]:
    """Reading a damaged run's series (what report, certify and compare's figures do)."""

    def run(tmp: Path) -> tuple[int, str]:
        run = _run(tmp)
        damage(run)
        return api_run(lambda: read_series(run) and read_events(run))

    return run


SERIES: dict[str, Callable[[Path], tuple[int, str]]] = {
    "series.csv a FIFO": _series(_replace("series.csv", lambda p: os.mkfifo(p))),
    "series.csv a symlink to /etc/passwd": _series(
        _replace("series.csv", lambda p: p.symlink_to("/etc/passwd"))
    ),
    "series.csv a symlink to /dev/zero": _series(_replace("series.csv", lambda p: p.symlink_to("/dev/zero"))),
    "series.csv a folder": _series(_replace("series.csv", lambda p: p.mkdir())),
    "events.jsonl a FIFO": _series(lambda r: os.mkfifo(r / "events.jsonl")),
    "events.jsonl a symlink to /dev/zero": _series(lambda r: (r / "events.jsonl").symlink_to("/dev/zero")),
}

# --- store URLs ---------------------------------------------------------------------------------

STORE_URLS: dict[str, str] = {
    "postgres with a password, unreachable": f"postgresql://labctl:{SECRET}@127.0.0.1:1/labctl",
    "postgres password in the query": f"postgresql://127.0.0.1:1/labctl?password={SECRET}",
    "postgres password and sslmode": f"postgresql://u:{SECRET}@127.0.0.1:1/db?sslmode=require",
    "postgres malformed with a password": f"postgresql://u:{SECRET}@[::1:1/db",
    "postgres port out of range": f"postgresql://u:{SECRET}@127.0.0.1:99999/db",
    "postgres without host": "postgresql://",
    "duckdb on /dev/zero": "duckdb:/dev/zero",
    "duckdb on a FIFO": "duckdb:{fifo}",
    "duckdb on a system file": "duckdb:/etc/passwd",
    "duckdb empty": "duckdb:",
    "unknown scheme": "ftp://127.0.0.1/x",
    "sqlite": "sqlite:///tmp/x.db",
    "file URL": "file:///etc/shadow",
    "empty": "",
    "a word": "store",
    "an escape": "duckdb:\x1b[2J",
}


def _store_args(url: str) -> Callable[[Path], list[str]]:
    return lambda t: ["runs", "--store", url.replace("{fifo}", str(_fifo(t)))]


def cases(tmp: Path) -> list[Case]:
    out: list[Case] = []
    for i, (what, args) in enumerate([*ARGS.items()]):
        folder = tmp / f"a{i}"
        folder.mkdir()
        # a hub that does not answer is the lab's failure (exit 1), not bad input
        codes = (1, 2) if "hub URL with a password" in what else (2,)
        out.append(Case("CLI arguments", what, _in_env(folder, args), codes=codes))
    for i, (what, args) in enumerate(RUN_FOLDERS.items()):
        folder = tmp / f"r{i}"
        folder.mkdir()
        out.append(Case("run-folder inputs", what, _in_env(folder, args), codes=(2, 3), max_lines=30))
    for i, (what, read) in enumerate(SERIES.items()):
        folder = tmp / f"e{i}"
        folder.mkdir()
        out.append(Case("run-folder inputs", what, lambda r=read, f=folder: r(f)))
    for i, (what, url) in enumerate(STORE_URLS.items()):
        folder = tmp / f"s{i}"
        folder.mkdir()
        out.append(Case("store URLs", what, _in_env(folder, _store_args(url)), codes=(1, 2, 3)))
    return out


_IDS = [*(f"CLI arguments: {k}" for k in ARGS), *(f"run-folder inputs: {k}" for k in [*RUN_FOLDERS, *SERIES])]
_IDS += [f"store URLs: {k}" for k in STORE_URLS]


# Refused uncleanly today, in code other helpers of issue 22 own (their fixes land separately);
# the exact need is in the hard-edges report. xfail, not strict: each passes once fixed.
OWNED_ELSEWHERE = {
    "CLI arguments: certify: a long id": "vdireport: OSError 'File name too long' escapes certify",
    "CLI arguments: runs: until before since": "storecli: --until before --since lists nothing, exit 0",
    "CLI arguments: runs: limit beyond 64 bits": "storecli: --limit needs an upper bound (DuckDB INT64 error)",
    "CLI arguments: runs sql: empty": "storecli: an empty query escapes as AttributeError",
    "CLI arguments: lease list: a bad hub URL": "lablayer: a non-nats:// hub URL is tried (exit 1), not refused",
    "store URLs: duckdb on /dev/zero": "storecli: duckdb:PATH not checked to be a folder",
    "store URLs: duckdb on a FIFO": "storecli: duckdb:PATH not checked to be a folder",
    "store URLs: duckdb on a system file": "storecli: duckdb:PATH not checked to be a folder",
    "store URLs: empty": "storecli: --store '' falls back to the default silently",
    "store URLs: a word": "storecli: a URL without a scheme is taken as a folder",
    "store URLs: an escape": "storecli: control characters in duckdb:PATH accepted",
}


@pytest.mark.parametrize(
    "which",
    [
        pytest.param(i, marks=pytest.mark.xfail(reason=OWNED_ELSEWHERE[i], strict=False))
        if i in OWNED_ELSEWHERE
        else i
        for i in _IDS
    ],
)
def test_hostile_cli_input_is_refused_cleanly(which: str, tmp_path: Path) -> None:
    category, _, what = which.partition(": ")
    case = next(c for c in cases(tmp_path) if c.category == category and c.id == what)
    assert outcome(case) is None
