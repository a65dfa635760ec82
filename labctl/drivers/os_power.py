"""A machine powering itself down through its own OS, over SSH: the command line per verb.

Windows (cmd.exe): ``shutdown /s`` (off), ``/r`` (restart), ``/f`` (close applications without
asking), ``/t 0`` (now). With ``/t 0`` Windows stops its services at once, sshd among them, so the
command gets no exit status: the session drops. A POSIX box gets ``shutdown -h|-r now``; a reset
(``-r`` without waiting for services) is ``systemctl reboot --force``.
"""

from __future__ import annotations

from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.ssh import Shell

_WINDOWS: dict[PowerVerb, tuple[str, ...]] = {
    PowerVerb.GRACEFUL_OFF: ("shutdown", "/s", "/t", "0"),
    PowerVerb.FORCE_OFF: ("shutdown", "/s", "/f", "/t", "0"),
    PowerVerb.REBOOT: ("shutdown", "/r", "/t", "0"),
    PowerVerb.RESET: ("shutdown", "/r", "/f", "/t", "0"),
}
_POSIX: dict[PowerVerb, tuple[str, ...]] = {
    PowerVerb.GRACEFUL_OFF: ("shutdown", "-h", "now"),
    PowerVerb.FORCE_OFF: ("systemctl", "poweroff", "--force"),
    PowerVerb.REBOOT: ("shutdown", "-r", "now"),
    PowerVerb.RESET: ("systemctl", "reboot", "--force"),
}


def shutdown_argv(verb: PowerVerb, shell: Shell = Shell.CMD) -> list[str]:
    """The command that makes the OS carry out ``verb``; ValueError for ``on`` (an OS that is off
    cannot be asked to start: that is Wake-on-LAN's job)."""
    table = _WINDOWS if shell is Shell.CMD else _POSIX
    if verb not in table:
        raise ValueError(f"an OS cannot {verb.value} itself")
    return list(table[verb])
