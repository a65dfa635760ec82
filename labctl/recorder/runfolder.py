"""Run folders: ``results/<run-id>/``, one per run, readable without labctl.

    run = RunFolder.create(Path("results"), lab, plan="boot_storm", params={"group_sizes": [1, 5]})
    run.write_json("notes.json", {...})          # redacted, atomic
    run.finish("passed")

At creation the folder gets ``run.json`` (what ran, on what, from which code; ``outcome: running``)
and ``inventory.resolved.yaml`` (the lab as resolved: every machine expanded, secrets redacted).
``finish()`` rewrites ``run.json`` with the end time and the outcome, so a run that died shows
``running`` and its start, and everything written meanwhile is still there. Field meanings are in
``results/README.md``. Every file is written to a temporary name and renamed into place, so a
reader never sees half a file.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from labctl import __version__
from labctl.clock import LabClock
from labctl.inventory.model import Lab
from labctl.recorder.redact import Redactor
from labctl.records.series import iso_utc

RUN_FILE = "run.json"
RESOLVED_INVENTORY_FILE = "inventory.resolved.yaml"
FORMAT_VERSION = 1
PROJECT_ROOT = Path(__file__).resolve().parents[2]

_SLUG_UNSAFE = re.compile(r"[^a-z0-9_]+")


class Outcome(StrEnum):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    ERROR = "error"  # the run itself broke (not a failed check): a crash, a usage error


@dataclass(frozen=True)
class Stamp:
    """One moment, on the wall clock and on the lab's clock (they differ on a scaled, simulated lab)."""

    wall_utc: str  # ISO 8601, e.g. 2026-11-21T05:30:12.345Z
    lab_time: str  # ISO 8601 of the lab clock
    lab_ts: float  # the lab clock in seconds since the Unix epoch (what samples are stamped with)

    @classmethod
    def now(cls, clock: LabClock) -> Stamp:
        lab_ts = clock.now()
        # iso_utc rounds to the millisecond as lab_ts does: the two always name the same instant
        return cls(wall_utc=iso(time.time()), lab_time=iso_utc(lab_ts), lab_ts=round(lab_ts, 3))


@dataclass
class RunInfo:
    """The content of ``run.json``."""

    run_id: str
    plan: str
    parameters: dict[str, Any]
    lab: str
    configuration: str | None
    inventory_file: str
    inventory_sha256: str
    simulated: bool
    time_scale: float
    labctl_version: str
    git_commit: str | None
    git_dirty: bool | None
    host: str
    python: str
    started: Stamp
    ended: Stamp | None = None
    duration_s: float | None = None  # wall seconds
    outcome: Outcome = Outcome.RUNNING
    extra: dict[str, Any] = field(default_factory=dict)  # what other writers add (annotate())
    format: int = FORMAT_VERSION


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@functools.cache
def git_state(root: Path = PROJECT_ROOT) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the project's git checkout, or (None, None) outside one or without git."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit, (bool(status) if status is not None else None)


def make_run_id(plan: str, when: float | None = None) -> str:
    """``20261121-053012-boot_storm-a1b2``: UTC start (so ids sort by time), plan, random suffix."""
    stamp = datetime.fromtimestamp(when if when is not None else time.time(), tz=UTC)
    slug = _SLUG_UNSAFE.sub("_", plan.lower()).strip("_")[:40] or "run"
    return f"{stamp:%Y%m%d-%H%M%S}-{slug}-{secrets.token_hex(2)}"


class RunFolder:
    """One run's folder. Create with :meth:`create`; reopen a finished one with :meth:`open`."""

    def __init__(self, path: Path, info: RunInfo, redactor: Redactor, clock: LabClock):
        self.path = path
        self.info = info
        self.redactor = redactor
        self.clock = clock

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def finished(self) -> bool:
        return self.info.outcome is not Outcome.RUNNING

    @classmethod
    def create(
        cls,
        results_dir: Path,
        lab: Lab,
        plan: str,
        params: dict[str, Any] | None = None,
        *,
        clock: LabClock | None = None,
        redactor: Redactor | None = None,
    ) -> RunFolder:
        """Make ``results_dir/<run-id>/`` and write ``run.json`` and ``inventory.resolved.yaml``.

        ``clock``: the lab's clock (default: one at the lab's time scale anchored now).
        ``redactor``: default :meth:`Redactor.from_lab` (the values behind the lab's references).
        """
        clock = clock or LabClock(scale=lab.time_scale)
        redactor = redactor or Redactor.from_lab(lab)
        results_dir = Path(results_dir)
        results_dir.mkdir(parents=True, exist_ok=True)
        while True:  # the random suffix makes a clash unlikely; never reuse another run's folder
            run_id = make_run_id(plan)
            path = results_dir / run_id
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        commit, dirty = git_state()
        info = RunInfo(
            run_id=run_id,
            plan=plan,
            parameters=dict(params or {}),
            lab=lab.name,
            configuration=lab.configuration.name if lab.configuration else None,
            inventory_file=lab.source_file,
            inventory_sha256=lab.inventory_sha256,
            simulated=lab.simulated,
            time_scale=lab.time_scale,
            labctl_version=__version__,
            git_commit=commit,
            git_dirty=dirty,
            host=socket.gethostname(),
            python=sys.version.split()[0],
            started=Stamp.now(clock),
        )
        run = cls(path, info, redactor, clock)
        run._write_info()
        run.write_text(RESOLVED_INVENTORY_FILE, resolved_inventory_yaml(lab, redactor))
        return run

    @classmethod
    def open(cls, path: Path, redactor: Redactor | None = None) -> RunFolder:
        """An existing run folder (for reports and comparisons); raises FileNotFoundError."""
        data = json.loads((Path(path) / RUN_FILE).read_text())
        data["started"] = Stamp(**data["started"])
        data["ended"] = Stamp(**data["ended"]) if data.get("ended") else None
        data["outcome"] = Outcome(data["outcome"])
        info = RunInfo(**{k: v for k, v in data.items() if k in RunInfo.__dataclass_fields__})
        return cls(Path(path), info, redactor or Redactor(), LabClock(scale=info.time_scale))

    # --- writing ---------------------------------------------------------------------------------

    def file(self, name: str) -> Path:
        """The path of ``name`` inside the run folder (sub-folders allowed, no escaping it)."""
        p = (self.path / name).resolve()
        if not p.is_relative_to(self.path.resolve()):
            raise ValueError(f"{name!r} is outside the run folder {self.path}")
        return p

    def write_text(self, name: str, text: str) -> Path:
        """Write a file of the run, redacted, atomically."""
        return atomic_write_text(self.file(name), self.redactor.text(text))

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(self.redactor.obj(data), indent=2, default=str) + "\n")

    def set_parameters(self, params: dict[str, Any]) -> None:
        """Merge plan parameters that became known after the start (e.g. from a plan file)."""
        self.info.parameters.update(params)
        self._write_info()

    def annotate(self, **extra: Any) -> None:
        """Add fields under ``extra`` in run.json (e.g. firmware versions read from the endpoints)."""
        self.info.extra.update(extra)
        self._write_info()

    def finish(self, outcome: Outcome | str) -> None:
        """Record the end and the outcome. A second call does nothing: the first outcome stands."""
        if self.finished:
            return
        self.info.ended = Stamp.now(self.clock)
        self.info.duration_s = round(_wall_seconds(self.info.started, self.info.ended), 3)
        self.info.outcome = Outcome(outcome)
        self._write_info()

    def _write_info(self) -> None:
        self.write_json(RUN_FILE, asdict(self.info))

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r}, outcome={self.info.outcome.value})"


def _wall_seconds(start: Stamp, end: Stamp) -> float:
    parse = datetime.fromisoformat
    return (parse(end.wall_utc) - parse(start.wall_utc)).total_seconds()


def resolved_inventory_yaml(lab: Lab, redactor: Redactor) -> str:
    """The resolved lab as YAML: credential references kept, every secret value masked."""
    header = (
        f"# The lab {lab.name!r} as this run saw it, every range expanded to one machine.\n"
        f"# Resolved from {lab.source_file}\n"
        f"# sha256 {lab.inventory_sha256}\n"
        f"# configuration {lab.configuration.name if lab.configuration else '-'}\n"
        "# Credentials appear as references (env:/secret:); secret values are masked.\n"
    )
    data = lab.model_dump(mode="json", exclude_none=True)
    body = yaml.safe_dump(redactor.obj(data), sort_keys=False, width=110)
    return header + body
