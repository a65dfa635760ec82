"""How a storm cell ends when the lab fails it mid-way: one helper, so every VDI-side scenario
(``vdi_storm``, ``scale_out``, ``session_storm``) ends the same way.

A storm catches what the lab raises (``LAB_ERRORS``) around its phases and hands it to
:func:`break_off`, which records where the cell was: a failure in *prepare* becomes the result's
``prepare_failed`` (the cell never started), a later one ``broke_off`` with the phase's name
(``steady broke off: vc-01 (vCenter https://...): read host states: connection failed: ...``).
The result's summary then makes the cell a lab fault whose reason names the failing endpoint,
and the scenario's ``finally`` still logs its sessions off and restores the lab.

The drivers map their libraries' failures (``ssl.SSLError``, ``OSError``, socket timeouts) to
:class:`~labctl.errors.EndpointError`, which names the endpoint and the action; ``OSError`` is
caught here as well, as the last line, for a library call a driver does not wrap yet: the cell
then still ends with its record, its reason naming the error's kind.
"""

from __future__ import annotations

from typing import Protocol

from labctl.errors import LabctlError
from labctl.scenarios.common import Phases

# what the lab raises when it fails a cell (a driver's EndpointError, a launcher's, a bare OSError)
LAB_ERRORS: tuple[type[BaseException], ...] = (LabctlError, OSError)


class BreaksOff(Protocol):
    """The two fields of a storm's result a lab failure ends up in."""

    prepare_failed: str
    broke_off: str


def describe(exc: BaseException) -> str:
    """One line: a labctl error says what and where already; a bare OSError gets its kind."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, LabctlError) else f"{type(exc).__name__}: {text}"


def break_off(result: BreaksOff, phases: Phases, exc: BaseException) -> None:
    """Record the lab's failure ``exc`` on ``result`` at the phase the cell was in."""
    current = next((p.name for p in reversed(phases.items)), "prepare")
    if current == "prepare":
        result.prepare_failed = result.prepare_failed or describe(exc)
    else:
        result.broke_off = f"{current} broke off: {describe(exc)}"
