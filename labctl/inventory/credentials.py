"""Resolve credential references (``env:NAME``, ``secret:KEY``) at the moment an endpoint is used.

Values are never stored on inventory objects, so they cannot leak into results or reports.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from labctl.errors import MissingCredentialError

SECRETS_FILE_VAR = "LABCTL_SECRETS_FILE"
# Where `labctl sim up` writes the credentials it generates for the simulated lab (git-ignored).
SIM_SECRETS_FILE = Path(__file__).resolve().parents[2] / ".labctl" / "sim" / "secrets.yaml"


def secrets_file() -> Path | None:
    """$LABCTL_SECRETS_FILE, else the simulated lab's generated file if it exists."""
    path = os.environ.get(SECRETS_FILE_VAR)
    if path:
        return Path(path)
    return SIM_SECRETS_FILE if SIM_SECRETS_FILE.exists() else None


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
        except (OSError, yaml.YAMLError) as exc:
            raise MissingCredentialError(
                ref, endpoint, f"cannot read {SECRETS_FILE_VAR}={path}: {exc}"
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
