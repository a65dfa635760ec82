"""Whether an endpoint's firmware or API version is among those the conformance suite checked.

The table is data (``verified_versions.yaml`` beside this module, kept in step with
``tests/conformance/`` by a test there); ``labctl check`` shows the verdict per endpoint. A version
not listed is not refused: it is named, with the verified ones, so a lab engineer knows the
driver meets a device nobody has checked it against.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("verified_versions.yaml")
KINDS = ("redfish", "ipmi", "vcenter")


@dataclass(frozen=True)
class Verified:
    kind: str
    version: str
    api: str
    product: str
    basis: str  # recording | emulator | simulator
    check: str  # the test that checks it


@functools.cache
def verified(kind: str) -> tuple[Verified, ...]:
    """The verified versions of one kind of endpoint (``redfish``, ``ipmi``, ``vcenter``)."""
    data = yaml.safe_load(TABLE.read_text()) or {}
    return tuple(
        Verified(
            kind, str(row["version"]), str(row.get("api", "")), row["product"], row["basis"], row["check"]
        )
        for row in data.get(kind) or []
    )


@dataclass(frozen=True)
class VersionCheck:
    kind: str
    found: str
    match: Verified | None

    @property
    def ok(self) -> bool:
        return self.match is not None

    @property
    def tag(self) -> str:
        """A few words for a table cell: ``verified (recording)`` or ``not verified``."""
        return f"verified ({self.match.basis})" if self.match else "not verified"

    @property
    def note(self) -> str:
        """One line for a version that is not verified: what was found, what is verified, where."""
        if self.match is not None:
            return ""
        known = ", ".join(f"{v.version} ({v.basis})" for v in verified(self.kind)) or "none"
        return (
            f"{self.kind} version {self.found or '(none reported)'} is not among the versions the "
            f"conformance suite checked: {known} (docs/conformance.md)"
        )


def check_version(kind: str, found: str) -> VersionCheck:
    """The verdict for ``found`` (the version string as the endpoint reports it)."""
    if kind not in KINDS:
        raise ValueError(f"unknown endpoint kind {kind!r}: one of {', '.join(KINDS)}")
    found = found.strip()
    match = next((v for v in verified(kind) if v.version == found), None)
    return VersionCheck(kind, found, match)
