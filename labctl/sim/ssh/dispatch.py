"""cmd.exe, as far as the simulated boxes need it: run one command line, return its exit code.

A line is split at ``&``, ``&&``, ``||`` and ``|`` (a pipe's left side runs with its output
discarded, as if read by the right side); each command is looked up by program name,
case-insensitively, with or without a path or ``.exe``. ``cmd /c ...`` runs its rest as a line.
Unknown programs get cmd.exe's message on stderr and exit code 1.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from labctl.sim.ssh import filecopy, pvs, shutdown, typeperf
from labctl.sim.ssh.cmdline import Segment, after_switch, program_name, split_line, strip_outer_quotes
from labctl.sim.ssh.shell import CRLF, CommandDropped, Shell

log = logging.getLogger(__name__)

Handler = Callable[[Shell, Segment], Awaitable[int]]

NOT_RECOGNIZED = (
    "'{name}' is not recognized as an internal or external command,"
    + CRLF
    + "operable program or batch file."
    + CRLF
)


class ExitRequested(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


async def run_line(
    sh: Shell, line: str, *, stdout_to: str | None = None, stderr_to: str | None = None
) -> int:
    """Run a cmd.exe command line; returns the exit code (``%ERRORLEVEL%``)."""
    segments = split_line(line)
    status = 0
    try:
        for i, seg in enumerate(segments):
            if seg.joiner == "&&" and status != 0:
                continue
            if seg.joiner == "||" and status == 0:
                continue
            out_to = seg.stdout_to or stdout_to
            piped = i + 1 < len(segments) and segments[i + 1].joiner == "|"
            if piped and out_to is None:
                out_to = "nul"  # read by the next command, which the simulator does not feed
            status = await run_segment(sh, seg, out_to, seg.stderr_to or stderr_to)
    except ExitRequested as exc:
        return exc.code
    return status


async def run_segment(sh: Shell, seg: Segment, stdout_to: str | None, stderr_to: str | None) -> int:
    if not seg.argv:
        return 0
    name = program_name(seg.argv[0])
    handler = COMMANDS.get(name)
    if handler is None and name[:4] == "echo" and name[4:5] in (".", ":", "("):
        handler = _echo  # "echo." prints a blank line
    sh.stdout_to, sh.stderr_to = stdout_to, stderr_to
    try:
        if handler is None:
            await sh.err(NOT_RECOGNIZED.format(name=_first_token(seg.text)))
            return 1
        return await handler(sh, seg)
    except (CommandDropped, ExitRequested, asyncio.CancelledError):
        raise
    except Exception as exc:  # a simulator bug: say so on stderr rather than hang the client
        log.exception("%s: %r failed in the simulator", sh.env.name, seg.text)
        await sh.err(f"labctl simulator: {name} failed: {exc!r}{CRLF}")
        return 1
    finally:
        sh.stdout_to = sh.stderr_to = None


def _first_token(text: str) -> str:
    """The program as typed, quotes included (cmd.exe quotes it so in its message)."""
    t = text.lstrip()
    if t.startswith('"'):
        end = t.find('"', 1)
        return t if end < 0 else t[: end + 1]
    return t.split(None, 1)[0] if t else t


# --- built-ins -----------------------------------------------------------------------------------


async def _hostname(sh: Shell, seg: Segment) -> int:
    if len(seg.argv) > 1:
        if seg.argv[1] in ("/?", "-?"):
            await sh.out(f"hostname{CRLF}{CRLF}Prints the name of the current host.{CRLF}")
            return 0
        await sh.err(f"sethostname: Use the Network Control Panel Applet to set hostname.{CRLF}")
        return 1
    await sh.out(sh.env.name + CRLF)
    return 0


async def _echo(sh: Shell, seg: Segment) -> int:
    text = seg.text.lstrip()
    rest = text[4:]  # after "echo"
    if rest.startswith((".", ":", "(")):
        await sh.out(rest[1:] + CRLF)
    elif not rest.strip():
        await sh.out("ECHO is on." + CRLF)
    else:
        await sh.out(rest[1:] + CRLF)
    return 0


async def _exit(sh: Shell, seg: Segment) -> int:
    args = [a for a in seg.argv[1:] if a.lower() != "/b"]
    try:
        code = int(args[0]) if args else 0
    except ValueError:
        code = 0
    raise ExitRequested(code)


async def _cmd(sh: Shell, seg: Segment) -> int:
    rest = after_switch(seg.text, "/c")
    if rest is None:
        rest = after_switch(seg.text, "/k")
    if rest is None:
        return 0  # an interactive cmd with no input ends at once
    return await run_line(sh, strip_outer_quotes(rest), stdout_to=sh.stdout_to, stderr_to=sh.stderr_to)


COMMANDS: dict[str, Handler] = {
    "hostname": _hostname,
    "echo": _echo,
    "exit": _exit,
    "cmd": _cmd,
    "shutdown": shutdown.run,
    "copy": filecopy.copy,
    "fsutil": filecopy.fsutil,
    "del": filecopy.delete,
    "erase": filecopy.delete,
    "typeperf": typeperf.run,
    "powershell": pvs.powershell,
}
