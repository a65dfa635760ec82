"""Resolve credential references (``env:NAME``, ``secret:KEY``) at the moment an endpoint is used.

Values are never stored on inventory objects, so they cannot leak into results or reports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from labctl.errors import MissingCredentialError

if TYPE_CHECKING:
    from labctl.inventory.model import Lab

SECRETS_FILE_VAR = "LABCTL_SECRETS_FILE"
# Where `labctl sim up` writes the credentials it generates for the simulated lab (git-ignored).
SIM_SECRETS_FILE = Path(__file__).resolve().parents[2] / ".labctl" / "sim" / "secrets.yaml"


# The simulator's run-time folder when it is not the default (tests, parallel labs).
STATE_DIR_VAR = "LABCTL_STATE_DIR"


def secrets_file() -> Path | None:
    """$LABCTL_SECRETS_FILE, else the simulated lab's generated file if it exists (in
    $LABCTL_STATE_DIR when that names the simulator's folder, else the project's default)."""
    path = os.environ.get(SECRETS_FILE_VAR)
    if path:
        return Path(path)
    state_dir = os.environ.get(STATE_DIR_VAR)
    sim_file = Path(state_dir) / SIM_SECRETS_FILE.name if state_dir else SIM_SECRETS_FILE
    return sim_file if sim_file.exists() else None


def resolve_credential(ref: str, endpoint: str) -> str:
    """The secret value behind ``ref``; raises naming the variable or key and the endpoint."""
    scheme, _, name = ref.partition(":")
    if scheme == "env":
        value = os.environ.get(name)
        if value is None:
            raise MissingCredentialError(ref, endpoint, f"export {name}=... before running labctl")
        return value
    if scheme == "secret":
        path = secrets_file()
        if path is None:
            raise MissingCredentialError(
                ref,
                endpoint,
                f"set {SECRETS_FILE_VAR} to a YAML file outside the repository holding {name}"
                " (for the simulated lab, `labctl sim up` writes one)",
            )
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except OSError as exc:
            raise MissingCredentialError(
                ref, endpoint, f"cannot read {SECRETS_FILE_VAR}={path}: {exc}"
            ) from None
        except yaml.YAMLError as exc:
            # not str(exc): PyYAML quotes the offending line, and in this file that line is a secret
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or "not valid YAML"
            raise MissingCredentialError(
                ref, endpoint, f"cannot read {SECRETS_FILE_VAR}={path}: YAML syntax error{where}: {problem}"
            ) from None
        if not isinstance(data, dict) or name not in data:
            raise MissingCredentialError(ref, endpoint, f"add {name}: to {path}")
        return str(data[name])
    raise MissingCredentialError(ref, endpoint, "write env:NAME or secret:KEY")


def secret_values(refs: list[str]) -> list[str]:
    """Every resolvable secret value among ``refs`` (for redaction); unresolvable ones are skipped."""
    values = []
    for ref in refs:
        try:
            v = resolve_credential(ref, "redaction")
        except MissingCredentialError:
            continue
        if v:
            values.append(v)
    return values


def lab_credential_refs(lab: Lab) -> list[str]:
    """Every secret reference the lab holds (passwords of SSH, BMCs, vCenters, storage arrays).

    ``key_file`` references are left out: they resolve to the *path* of a key, not to a secret.
    """
    refs: list[str] = []
    for m in lab.machines.values():
        if m.ssh is not None and m.ssh.password:
            refs.append(m.ssh.password)
        if m.bmc is not None:
            refs.append(m.bmc.password)
    refs += [vc.password for vc in lab.vcenters.values()]
    refs += [arr.password for arr in lab.storage.values()]
    return list(dict.fromkeys(refs))


def secrets_file_values() -> list[str]:
    """Every string value in the secrets file: all of them are secrets, referenced or not."""
    path = secrets_file()
    if path is None:
        return []
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return []
    if not isinstance(data, dict):
        return []
    return [
        str(v)
        for v in data.values()
        if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v)
    ]
