"""labctl's error types. Each says what went wrong, on which thing, and what to do about it.

The CLI turns any :class:`LabctlError` into one or more lines on stderr and an exit code
(2 for bad input or usage, 1 for a failure of the lab or the run); never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
# `labctl run`: every cell measured and kept in the run folder, but the results store failed and
# lacks the run (add it with `labctl runs import RUN`); nightly's 3 means the same and more
EXIT_NOT_STORED = 3
PYTEST_EXIT_NOT_STORED = 13  # the plugin's pytest session status for it (pytest's own end at 5)


class LabctlError(Exception):
    """Base class. ``exit_code`` is what the CLI returns for it."""

    exit_code = EXIT_FAILED


class BadInputError(LabctlError):
    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class Problem:
    """One problem in an inventory file: ``file:line: path.to.item: what is wrong (how to fix)``."""

    file: str
    line: int | None
    path: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        fix = f" ({self.fix})" if self.fix else ""
        item = f" {self.path}:" if self.path else ""
        return f"{where}:{item} {self.message}{fix}"


class InventoryError(BadInputError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class KnownTargets(Protocol):
    """What :class:`UnknownTargetError` reads of a lab to suggest a name (``labctl.inventory.Lab``
    has it). A protocol, so that errors stay at the ground and import nothing of labctl."""

    @property
    def name(self) -> str: ...
    @property
    def machines(self) -> Mapping[str, object]: ...
    @property
    def groups(self) -> Mapping[str, object]: ...


class UnknownTargetError(BadInputError):
    def __init__(self, target: str, lab: KnownTargets | None = None):
        hint = ""
        if lab is not None:
            names = [*lab.machines, *lab.groups]
            close = difflib.get_close_matches(target, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            hint += f" (see `labctl inventory show` for {lab.name})"
        super().__init__(f"unknown machine or group {target!r}{hint}")
        self.target = target


class MissingCredentialError(BadInputError):
    def __init__(self, ref: str, endpoint: str, detail: str):
        super().__init__(f"{endpoint}: credential {ref} is not set ({detail})")
        self.ref = ref
        self.endpoint = endpoint


class EndpointError(LabctlError):
    """A call to a lab endpoint failed. Names the endpoint and the action."""

    def __init__(self, endpoint: str, action: str, reason: str, fix: str = ""):
        self.endpoint = endpoint
        self.action = action
        self.reason = reason
        self.fix = fix
        tail = f" ({fix})" if fix else ""
        super().__init__(f"{endpoint}: {action}: {reason}{tail}")


class EndpointTimeout(EndpointError):
    pass
