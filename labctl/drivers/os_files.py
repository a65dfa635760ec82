"""A machine copying a file through its own OS, over SSH: the command line and how to read its answer.

Windows (cmd.exe): ``copy /Y SRC DST`` (``/Y``: overwrite without asking); it prints
``1 file(s) copied.`` when it copied and exits 0 also for some failures, so the line is what counts.
A POSIX box gets ``cp -f SRC DST``, judged by its exit status. Paths are the OS's own (a UNC path
``\\\\server\\share\\file`` reaches a share from Windows).
"""

from __future__ import annotations

from labctl.drivers.ssh import CommandResult, Shell

COPIED_LINE = "1 file(s) copied"  # what cmd.exe's copy prints for one file it copied


def copy_argv(src: str, dst: str, shell: Shell = Shell.CMD) -> list[str]:
    """The command that copies ``src`` to ``dst`` on a machine with ``shell``, overwriting ``dst``."""
    if shell is Shell.CMD:
        return ["copy", "/Y", src, dst]
    return ["cp", "-f", src, dst]


def copy_outcome(res: CommandResult, shell: Shell = Shell.CMD) -> tuple[bool, str]:
    """(copied, why not) from the command's answer; the reason is the OS's own words."""
    ok = res.ok and (shell is not Shell.CMD or COPIED_LINE in res.stdout)
    if ok:
        return True, ""
    return False, res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_status}"
