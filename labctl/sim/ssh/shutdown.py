"""``shutdown.exe``: ``/s`` (or ``-s``) shut down, ``/r`` restart, ``/a`` abort, ``/t N``, ``/f``.

``shutdown /s /t 0`` and ``/r /t 0`` start the power action on the twin at once and print
nothing. Windows then stops its services, sshd among them, so the client never gets an exit
status: about one lab second later the TCP connection is closed under the session (no SSH
disconnect message, no exit-status, no channel close). paramiko sees the transport go inactive,
reads EOF on stdout and ``recv_exit_status()`` returns -1. New connections are refused until the
twin says the OS is up again.

With ``/t N`` (N > 0; the default is 30, as on XP) the command returns exit code 0 at once and
the twin gets the action N lab seconds later; ``shutdown /a`` cancels it within that time.
"""

from __future__ import annotations

import asyncio
import contextlib

from labctl.sim.ssh.cmdline import Segment
from labctl.sim.ssh.shell import CRLF, MachineEnv, Shell
from labctl.sim.twin.interface import PowerAction

DEFAULT_TIMEOUT_S = 30
GOING_DOWN_LAB_S = 1.0  # between the power action and sshd dying
NO_SHUTDOWN_IN_PROGRESS = "Unable to abort the system shutdown because no shutdown was in progress.(1116)"
USAGE = (
    'Usage: shutdown [-i | -l | -s | -r | -a] [-f] [-m \\\\computername] [-t xx] [-c "comment"] [-d up:xx:yy]'
    + CRLF
    + CRLF
    + "        No args                 Display this message (same as -?)"
    + CRLF
    + "        -s                      Shutdown the computer"
    + CRLF
    + "        -r                      Shutdown and restart the computer"
    + CRLF
    + "        -a                      Abort a system shutdown"
    + CRLF
    + "        -t xx                   Set timeout for shutdown to xx seconds"
    + CRLF
    + "        -f                      Forces running applications to close without warning"
    + CRLF
)


async def run(sh: Shell, seg: Segment) -> int:
    args = [a.lower().replace("-", "/", 1) if a.startswith("-") else a.lower() for a in seg.argv[1:]]
    action: PowerAction | None = None
    timeout = DEFAULT_TIMEOUT_S
    abort = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("/s", "/p"):
            action = PowerAction.SHUTDOWN
        elif a == "/r":
            action = PowerAction.RESTART
        elif a == "/a":
            abort = True
        elif a in ("/f", "/l", "/c", "/d"):
            if a in ("/c", "/d"):
                i += 1  # the comment or reason code
        elif a == "/t":
            i += 1
            try:
                timeout = int(args[i])
                if timeout < 0:
                    raise ValueError
            except (IndexError, ValueError):
                await sh.err(f"Error: Invalid timeout.{CRLF}")
                return 87
        elif a == "/m":
            i += 1
            target = args[i].lstrip("\\") if i < len(args) else ""
            if target not in (sh.env.name.lower(), "localhost", "."):
                await sh.err(f"\\\\{target}: The network path was not found.(53){CRLF}")
                return 53
        elif a in ("/?", "/h"):
            await sh.out(USAGE)
            return 0
        else:
            await sh.out(USAGE)
            return 0
        i += 1
    env = sh.env
    if abort:
        pending = [t for t in env.scheduled if not t.done()]
        if not pending:
            await sh.err(NO_SHUTDOWN_IN_PROGRESS + CRLF)
            return 1116
        for t in pending:
            t.cancel()
        return 0
    if action is None:
        await sh.out(USAGE)
        return 0
    if timeout > 0:
        task = asyncio.create_task(_later(env, action, timeout))
        env.scheduled.add(task)
        task.add_done_callback(env.scheduled.discard)
        return 0
    env.ctx.twin.power(env.name, action)
    await asyncio.sleep(min(1.0, env.ctx.clock.to_wall_s(GOING_DOWN_LAB_S)))
    await sh.drop()


async def _later(env: MachineEnv, action: PowerAction, timeout_s: float) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(env.ctx.clock.to_wall_s(timeout_s))
        env.ctx.twin.power(env.name, action)
