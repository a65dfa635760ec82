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

Endpoints a phase polls without raising (the launchers: one that cannot be read is collected, the
others still answer) are watched by :class:`Unreadable`: once one has failed every read for longer
than a bounded grace (``launcher_unreadable_s``), :class:`StaysUnreadable` breaks the cell off the
same way, instead of the phase running its full length against a lab that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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


class StaysUnreadable(LabctlError):
    """Endpoints of a cell (its launchers) that failed every read for longer than the grace: the
    cell breaks off rather than wait out its phase on endpoints that no longer answer."""

    def __init__(
        self, kind: str, since: Mapping[str, float], errors: Mapping[str, str], grace_s: float, now: float
    ):
        self.kind = kind
        self.since = dict(since)
        names = sorted(since, key=lambda n: since[n])
        first = names[0]
        who = f"{kind} {first}" if len(names) == 1 else f"{kind}s {', '.join(names)}"
        super().__init__(
            f"{who} unreadable for {now - since[first]:.0f} lab s (more than {grace_s:g} s): "
            f"{first}: {errors.get(first, 'no answer')}"
        )


@dataclass
class Unreadable:
    """Since when each endpoint of a kind has failed every read (lab seconds), and its last error;
    an endpoint read again is forgotten. :meth:`check` raises :class:`StaysUnreadable` once one
    has failed for longer than the grace, so a phase that polls it breaks off (:func:`break_off`)."""

    kind: str
    since: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def saw(self, now: float, errors: Mapping[str, str], asked: Iterable[str]) -> None:
        """One round of reads at ``now``: ``errors`` by endpoint, the others of ``asked`` answered."""
        for name in asked:
            if name in errors:
                self.since.setdefault(name, now)
                self.errors[name] = " ".join(errors[name].split())
            else:
                self.since.pop(name, None)
                self.errors.pop(name, None)

    def check(self, now: float, grace_s: float) -> None:
        """Raise :class:`StaysUnreadable` when an endpoint has failed for more than ``grace_s``."""
        if any(now - t > grace_s for t in self.since.values()):
            raise StaysUnreadable(self.kind, self.since, self.errors, grace_s, now)

    def describe(self) -> str:
        """``launcher vsi-01 unreadable`` / ``launchers vsi-01, vsi-02 unreadable``; '' when none."""
        if not self.since:
            return ""
        names = sorted(self.since)
        return f"{self.kind}{'s' if len(names) > 1 else ''} {', '.join(names)} unreadable"
