"""Resolve credential references (``env:NAME``, ``secret:KEY``) at the moment an endpoint is used.

Values are never stored on inventory objects, so they cannot leak into results or reports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from labctl.errors import MissingCredentialError
from labctl.inventory.refs import CREDENTIAL_REF
from labctl.inventory.userfile import SECRETS_MAX_BYTES, UserFileError, check_yaml_text, read_user_text

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


def read_secrets_file(path: Path) -> dict[str, object]:
    """The secrets file as a mapping, read as a user's file (a regular file of at most
    :data:`~labctl.inventory.userfile.SECRETS_MAX_BYTES`, UTF-8, shallow, safe YAML).

    Raises :class:`UserFileError` (whose message never quotes the file: its lines are secrets) or
    ``FileNotFoundError``."""
    text = read_user_text(path, what="secrets file", max_bytes=SECRETS_MAX_BYTES)
    check_yaml_text(text, str(path), "secrets file", max_depth=8)
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    except yaml.YAMLError as exc:
        # not str(exc): PyYAML quotes the offending line, and in this file that line is a secret
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise UserFileError(path, f"YAML syntax error{where}: {problem}", "check its quoting") from None
    if not isinstance(data, dict):
        raise UserFileError(path, "the secrets file is not a mapping", "write one `KEY: value` per line")
    return data


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
            data = read_secrets_file(path)
        except FileNotFoundError:
            raise MissingCredentialError(
                ref, endpoint, f"cannot read {SECRETS_FILE_VAR}={path}: no such file"
            ) from None
        except UserFileError as exc:
            raise MissingCredentialError(
                ref, endpoint, f"cannot use {SECRETS_FILE_VAR}={path}: {exc.message}; {exc.fix}"
            ) from None
        if name not in data:
            raise MissingCredentialError(ref, endpoint, f"add {name}: to {path}")
        found = data[name]
        if found is None or found == "" or isinstance(found, bool | dict | list):
            # never str(None) == "None" as a password; never a mapping's text
            raise MissingCredentialError(ref, endpoint, f"give {name}: a text value in {path}")
        return str(found)
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


def _credential_fields(lab: Lab) -> list[str]:
    """Every password field of the lab, as written (SSH, BMCs, IPMI, vCenters, arrays, launchers)."""
    out: list[str | None] = []
    for m in lab.machines.values():
        if m.ssh is not None:
            out.append(m.ssh.password)
        if m.bmc is not None:
            out.append(m.bmc.password)
        if m.ipmi is not None:
            out.append(m.ipmi.password)
    out += [vc.password for vc in lab.vcenters.values()]
    out += [arr.password for arr in lab.storage.values()]
    for ln in lab.vdi.launchers if lab.vdi is not None else ():
        if ln.access is not None:
            out.append(ln.access.password)
    return [v for v in out if v]


def lab_credential_refs(lab: Lab) -> list[str]:
    """Every secret reference the lab holds (passwords of SSH, BMCs, IPMI, vCenters, storage arrays
    and session launchers).

    ``key_file`` references are left out: they resolve to the *path* of a key, not to a secret.
    """
    return list(dict.fromkeys(v for v in _credential_fields(lab) if CREDENTIAL_REF.match(v)))


def plain_credentials(lab: Lab) -> list[str]:
    """Password fields holding a value instead of a reference. Validation refuses them; a lab
    built another way (an old run's inventory, code) may still carry one, and the redactor masks
    it wherever it would be written."""
    return list(dict.fromkeys(v for v in _credential_fields(lab) if not CREDENTIAL_REF.match(v)))


def secrets_file_values() -> list[str]:
    """Every string value in the secrets file: all of them are secrets, referenced or not."""
    path = secrets_file()
    if path is None:
        return []
    try:
        data = read_secrets_file(path)
    except (OSError, UserFileError):
        return []
    return [
        str(v)
        for v in data.values()
        if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v)
    ]
