"""Run folders: ``results/<run-id>/``, one per run, readable without labctl.

    run = RunFolder.create(Path("results"), lab, plan="boot_storm", params={"group_sizes": [1, 5]})
    run.write_json("notes.json", {...})          # redacted, atomic
    run.finish(RunOutcome.PASSED)

At creation the folder gets ``run.json`` (a :class:`~labctl.records.run_record.RunInfo`: what ran,
on what, from which code; ``outcome: running``) and ``inventory.resolved.yaml`` (the lab as
resolved: every machine expanded, secrets redacted). :meth:`RunFolder.finish` rewrites ``run.json``
with the end and the outcome, so a run that died shows ``running`` and its start, and everything
written meanwhile is still there. ``run.json`` is written by this class only; the cell files by the
run-folder sink (:mod:`labctl.recorder.sinks`). Field meanings are in ``results/README.md``
(generated from the models). Every file is written to a temporary name and renamed into place, so
a reader never sees half a file.

:meth:`RunFolder.open` and :func:`read_run_info` read ``run.json`` back through the model, also the
format-1 ``run.json`` of older runs.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from labctl import __version__
from labctl.clock import LabClock
from labctl.errors import LabctlError
from labctl.inventory.model import Lab
from labctl.inventory.userfile import UserFileError, load_user_json
from labctl.recorder.atomic import atomic_write_text, json_text
from labctl.recorder.redact import Redactor
from labctl.recorder.series import run_path
from labctl.records.run_record import RunInfo, RunOutcome, Stamp
from labctl.records.series import iso_utc

log = logging.getLogger(__name__)

RUN_FILE = "run.json"
RESOLVED_INVENTORY_FILE = "inventory.resolved.yaml"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

__all__ = [
    "RESOLVED_INVENTORY_FILE",
    "RUN_FILE",
    "BadRunFolder",
    "RunFolder",
    "RunInfo",
    "RunOutcome",
    "Stamp",
    "atomic_write_text",
    "read_run_info",
    "stamp_now",
]

_SLUG_UNSAFE = re.compile(r"[^a-z0-9_]+")


def stamp_now(clock: LabClock) -> Stamp:
    """Now, on the wall clock and on the lab's clock."""
    lab_ts = clock.now()
    # iso_utc rounds to the millisecond as lab_ts does: the two always name the same instant
    return Stamp(wall_utc=iso(time.time()), lab_time=iso_utc(lab_ts), lab_ts=round(lab_ts, 3))


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        # files of the run that could not be written (a full or failing results disk), one line
        # each: the run goes on (what it measures is in memory), says so at its end, and ends as
        # an error with run.json finalised as far as the disk allows
        self.write_errors: list[str] = []

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def finished(self) -> bool:
        return self.info.outcome is not RunOutcome.RUNNING

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
            started=stamp_now(clock),
        )
        run = cls(path, info, redactor, clock)
        try:
            atomic_write_text(run.file(RUN_FILE), run._info_text())
            run.write_text(RESOLVED_INVENTORY_FILE, resolved_inventory_yaml(lab, redactor))
        except OSError as exc:  # nothing ran yet: refuse, in one line
            raise ResultsDiskError(
                f"results folder {path}: {exc.strerror or exc} (free space, or --results-dir)"
            ) from None
        return run

    @classmethod
    def open(cls, path: Path, redactor: Redactor | None = None) -> RunFolder:
        """An existing run folder (for reports and comparisons), also one of format 1 or one whose
        process died. Raises FileNotFoundError without a ``run.json``, BadRunFolder when it does
        not read as one."""
        info = _read_info(Path(path) / RUN_FILE)
        return cls(Path(path), info, redactor or Redactor(), LabClock(scale=info.time_scale))

    # --- writing ---------------------------------------------------------------------------------

    def file(self, name: str) -> Path:
        """The path of ``name`` inside the run folder (sub-folders allowed, no escaping it)."""
        p = (self.path / name).resolve()
        if not p.is_relative_to(self.path.resolve()):
            raise ValueError(f"{name!r} is outside the run folder {self.path}")
        return p

    def write_text(self, name: str, text: str) -> Path:
        """Write a file of the run, redacted, atomically. A failure is noted in ``write_errors``
        (and raised: the caller's file is not there)."""
        try:
            return atomic_write_text(self.file(name), self.redactor.text(text))
        except OSError as exc:
            self.note_write_error(name, exc)
            raise

    def note_write_error(self, name: str, exc: BaseException | str) -> None:
        """``name`` (a file of the run) could not be written: one line, once per file."""
        why = exc if isinstance(exc, str) else (getattr(exc, "strerror", None) or str(exc))
        line = f"{name}: {why}"
        if line not in self.write_errors:
            self.write_errors.append(line)
            log.error("results folder %s: %s", self.path, line)

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(self.redactor.obj(data), indent=2, default=str) + "\n")

    def set_parameters(self, params: dict[str, Any]) -> None:
        """Merge plan parameters that became known after the start (e.g. from a plan file)."""
        self.info.parameters = {**self.info.parameters, **params}
        self._write_info()

    def annotate(self, **extra: Any) -> None:
        """Add fields under ``extra`` in run.json (e.g. firmware versions read from the endpoints)."""
        self.info.extra = {**self.info.extra, **extra}
        self._write_info()

    def add_cell(self, cell: str) -> None:
        """Note a cell that ended (``cells`` in run.json, in the order they ran)."""
        if cell not in self.info.cells:
            self.info.cells = [*self.info.cells, cell]
            self._write_info()

    def set_lease(self, lease: str | None) -> None:
        """The lease the run holds on the lab (``lab:sim-2007``), for whoever finds the folder."""
        self.info.lease = lease
        self._write_info()

    def finish(self, outcome: RunOutcome | str, reason: str = "") -> RunInfo:
        """Record the end, the outcome and its one-line reason. A second call changes nothing:
        the first outcome stands. Returns the final :class:`RunInfo` (for the sinks)."""
        if self.finished:
            return self.info
        outcome = RunOutcome(outcome)  # ValueError for an unknown outcome, before anything is written
        if self.write_errors:  # the folder is incomplete: whatever the cells said, the run broke
            outcome = RunOutcome.ERROR
            reason = f"results folder incomplete ({'; '.join(self.write_errors[:3])})" + (
                f"; {reason}" if reason.strip() else ""
            )
        ended = stamp_now(self.clock)
        self.info = self.info.model_copy(
            update={
                "ended": ended,
                "duration_s": round(_wall_seconds(self.info.started, ended), 3),
                "outcome": outcome,
                "reason": self.redactor.text(reason.strip().splitlines()[0] if reason.strip() else ""),
            }
        )
        self._write_info()
        return self.info

    def set_info(self, info: RunInfo) -> None:
        """Replace ``run.json`` with ``info`` (the final one the sinks are handed), unless it is
        another run's."""
        if info.run_id != self.info.run_id:
            raise ValueError(f"run.json of {info.run_id} handed to the run folder of {self.info.run_id}")
        if info != self.info:
            self.info = info
            self._write_info()

    def _info_text(self, indent: int | None = 2) -> str:
        data = self.redactor.obj(self.info.model_dump(mode="json"))
        return json_text(data) if indent else json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    def _write_info(self) -> None:
        """``run.json`` now; never raises. When the disk refuses a new file (full), the run.json
        there is overwritten in place, compact, if that fits in the blocks it already has: a run
        that cannot write its files still ends with its outcome, not ``running``."""
        try:
            self.write_text(RUN_FILE, self._info_text())
            return
        except OSError:
            pass
        path = self.file(RUN_FILE)
        try:
            with path.open("r+b") as f:
                size = f.seek(0, 2)
                text = next((t for t in self._compact_infos() if len(t) <= size), None)
                if text is None:
                    self.note_write_error(RUN_FILE, f"no room to finalise it in place ({size} bytes)")
                    return
                f.seek(0)
                f.write(text + b" " * (size - len(text)))  # JSON allows trailing whitespace
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            self.note_write_error(RUN_FILE, exc)

    def _compact_infos(self) -> list[bytes]:
        """run.json compact, then with less and less (the plan's parameters, extras, a long
        reason): the first that fits where the old one was is written."""
        keep = self.info
        less = keep.model_copy(update={"parameters": {}, "extra": {}})
        least = less.model_copy(update={"reason": keep.reason[:60], "cells": []})
        out = []
        try:
            for info in (keep, less, least):
                self.info = info
                out.append(self._info_text(indent=None).encode())
        finally:
            self.info = keep
        return out

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r}, outcome={self.info.outcome.value})"


class ResultsDiskError(LabctlError):
    """The results folder cannot be written at the start of a run (nothing measured yet)."""


class BadRunFolder(ValueError):
    """A ``run.json`` that is not one; the message names the file and what is wrong."""


def _read_info(path: Path) -> RunInfo:
    try:  # a user's file: regular (no symlink to elsewhere), bounded, shallow (inventory.userfile)
        data = load_user_json(path, what="run.json", follow_symlinks=False)
    except UserFileError as exc:
        raise BadRunFolder(str(exc)) from None
    if not isinstance(data, dict):
        raise BadRunFolder(f"{path}: not a JSON object")
    if data.get("format", 1) < 2:
        # format 1 had the same fields less reason/cells/lease; keep what the model knows
        data = {k: v for k, v in data.items() if k in RunInfo.model_fields}
    try:
        return RunInfo.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "-"
        raise BadRunFolder(f"{path}: {where}: {err['msg']} (not a run.json labctl wrote?)") from None


def read_run_info(run: Any) -> RunInfo | None:
    """``run.json`` of a run folder (a path or a RunFolder) through the model; None when the
    folder has none or it does not read (logged), so a torn folder still lists and reports."""
    path = run_path(run) / RUN_FILE
    try:
        return _read_info(path)
    except FileNotFoundError:
        return None
    except (OSError, BadRunFolder) as exc:
        log.warning("%s", exc)
        return None


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
