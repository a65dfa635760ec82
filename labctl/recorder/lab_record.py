"""The lab as a run saw it, read back from its run folder: ``inventory.resolved.yaml`` (every machine
expanded, secrets masked), as plain data.

A run folder records the resolved inventory of the configuration the run started in. A run that
also measured another configuration (``labctl run 2007`` measures standalone and HA) has no
resolved copy of that one: :func:`resolved_lab` then loads it from the inventory file the run
names, and only when that file's SHA-256 is still the one the run recorded (an edited file would
describe a lab the run never saw). Readers (certification, sizing from a run) take models and
hardware from here, never credentials.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.errors import LabctlError
from labctl.inventory import bounds
from labctl.inventory.load import load_lab
from labctl.inventory.userfile import UserFileError, load_user_yaml, read_user_bytes
from labctl.recorder.runfolder import RESOLVED_INVENTORY_FILE, read_run_info
from labctl.recorder.series import run_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedLab:
    """One configuration of the lab as plain data (the shape of ``Lab.model_dump(mode="json")``)."""

    data: dict[str, Any]
    origin: str  # where it came from: the run's resolved copy, or the inventory file (hash checked)

    @property
    def configuration(self) -> str | None:
        cfg = self.data.get("configuration")
        return str(cfg.get("name")) if isinstance(cfg, dict) and cfg.get("name") else None

    @property
    def machines(self) -> dict[str, dict[str, Any]]:
        m = self.data.get("machines")
        return {str(k): v for k, v in m.items() if isinstance(v, dict)} if isinstance(m, dict) else {}

    def volume(self, entity: str) -> dict[str, Any] | None:
        """The volume a disk entity names: ``pvs-01/D:`` -> pvs-01's volume with drive ``D:``
        (or named ``D:``)."""
        server, _, drive = entity.partition("/")
        hw = self.machines.get(server, {}).get("server_hardware") or {}
        for v in hw.get("volumes") or []:
            if isinstance(v, dict) and drive and drive in (v.get("drive"), v.get("name")):
                return v
        return None


def _read_yaml(path: Path) -> dict[str, Any] | None:
    try:  # a user's file: regular (no symlink to elsewhere), bounded, shallow (inventory.userfile)
        data = load_user_yaml(path, what=path.name, max_bytes=bounds.MAX_FILE_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except (OSError, UserFileError) as exc:
        log.warning("%s: unreadable, skipped (%s)", path, exc)
        return None
    return data if isinstance(data, dict) else None


def resolved_lab(run: Any, configuration: str | None = None) -> ResolvedLab | None:
    """The lab of ``configuration`` (default: the run's own) as the run saw it, or None when the run
    folder does not record it and the inventory file is gone or changed since."""
    path = run_path(run)
    recorded = _read_yaml(path / RESOLVED_INVENTORY_FILE)
    if recorded is not None:
        lab = ResolvedLab(recorded, f"{RESOLVED_INVENTORY_FILE} of run {path.name}")
        if configuration is None or lab.configuration in (None, configuration):
            return lab
    info = read_run_info(path)
    if info is None or not info.inventory_file:
        return None
    file = Path(info.inventory_file)
    try:  # the inventory a run names: a user's file, bounded like any inventory
        raw = read_user_bytes(file, what="inventory", max_bytes=bounds.MAX_FILE_BYTES)
    except (OSError, UserFileError):
        return None
    if hashlib.sha256(raw).hexdigest() != info.inventory_sha256:
        log.info("%s changed since run %s: configuration %s not read from it", file, path.name, configuration)
        return None
    try:
        lab_model = load_lab(file, configuration)
    except LabctlError as exc:
        log.warning("%s: configuration %s does not load (%s)", file, configuration, exc)
        return None
    data = lab_model.model_dump(mode="json", exclude_none=True)
    return ResolvedLab(data, f"{file.name} (SHA-256 as recorded by run {path.name})")
