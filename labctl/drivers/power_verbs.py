"""The power vocabulary every power driver translates into its vendor's words.

The lab layer asks for a :class:`PowerVerb`; each driver says what it means on its wire
(Redfish ``ResetType``, IPMI chassis-control codes, vCenter tasks, ``shutdown`` arguments) and
reports what it reads back as a :class:`PowerReading`. No vendor word leaves a driver module.
"""

from __future__ import annotations

from enum import StrEnum


class PowerVerb(StrEnum):
    ON = "on"
    GRACEFUL_OFF = "graceful_off"  # the OS shuts down, then the power goes off (S5)
    FORCE_OFF = "force_off"  # power removed at once, no OS shutdown
    REBOOT = "reboot"  # the OS restarts itself (falls back to a reset where there is no such thing)
    RESET = "reset"  # hard reset, no OS shutdown


class PowerReading(StrEnum):
    """A machine's power as its backend reports it."""

    ON = "on"
    OFF = "off"
    POWERING_ON = "powering_on"  # power applied, not up yet
    POWERING_OFF = "powering_off"  # still powered, on its way down
    UNKNOWN = "unknown"
