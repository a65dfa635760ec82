"""File commands: cmd.exe ``copy`` and ``del``, and ``fsutil file createnew``.

``copy [/Y] <src> <dst>`` between a local path (``C:\\...``) and a UNC share path
(``\\\\server\\share\\...``), either way round. The size comes from the file registry
(:mod:`labctl.sim.ssh.files`), the duration from the twin: the command starts
``twin.start_copy(machine, source, destination, size)`` and returns when ``twin.copy_status`` says
the job finished, printing ``        1 file(s) copied.`` (8 spaces), exit 0. A missing source prints
``The system cannot find the file specified.`` on stderr, exit 1.
"""

from __future__ import annotations

import asyncio

from labctl.clock import LabClock
from labctl.sim.ssh.cmdline import Segment
from labctl.sim.ssh.files import NOT_FOUND, PathError, PathKind, WinPath
from labctl.sim.ssh.shell import CRLF, Shell
from labctl.sim.twin.interface import CopyLocation

COPIED_ONE = "        1 file(s) copied." + CRLF
COPIED_NONE = "        0 file(s) copied." + CRLF
ONTO_ITSELF = "The file cannot be copied onto itself."
NET_NAME_GONE = "The specified network name is no longer available."
# A running copy asks the twin when it will be done and sleeps until then (the twin's estimate at
# the copy's current speed), at least POLL_MIN_LAB_S and at most POLL_MAX_LAB_S of lab time, so 50
# copiers at 60x ask a few times per copy instead of every couple of lab seconds; the last wake-up
# lands within POLL_MIN_LAB_S of the end. Without an estimate (the copy has not moved yet) they ask
# every POLL_LAB_S. The wall-clock bounds keep a fast clock from spinning and a slow one responsive.
POLL_LAB_S = 2.0
POLL_MIN_LAB_S = 0.5
POLL_MAX_LAB_S = 30.0
POLL_WALL_MIN_S = 0.02
POLL_WALL_MAX_S = 1.0
DROP_AFTER_LAB_S = 1.0  # with the drop fault, a copy still running this long is cut off


def _poll_lab_s(eta_lab_s: float | None, drop_armed: bool, clock: LabClock) -> float:
    """Lab seconds to sleep before asking the twin again (see POLL_*)."""
    lab_s = POLL_LAB_S if eta_lab_s is None else min(POLL_MAX_LAB_S, max(POLL_MIN_LAB_S, eta_lab_s))
    if drop_armed:  # the drop fault cuts the copy after DROP_AFTER_LAB_S: be awake for it
        lab_s = min(lab_s, DROP_AFTER_LAB_S)
    wall = min(POLL_WALL_MAX_S, max(POLL_WALL_MIN_S, clock.to_wall_s(lab_s)))
    return clock.to_lab_s(wall)


def _location(path: WinPath) -> CopyLocation:
    return CopyLocation.SHARE if path.kind is PathKind.SHARE else CopyLocation.LOCAL


async def copy(sh: Shell, seg: Segment) -> int:
    names = [a for a in seg.argv[1:] if not a.startswith("/")]
    if not names:
        await sh.err("The syntax of the command is incorrect." + CRLF)
        return 1
    files = sh.env.files
    machine = sh.machine
    try:
        src = files.resolve(machine, names[0])
    except PathError as exc:
        await sh.err(f"{exc}{CRLF}")
        return 1
    size = files.size(machine, src)
    if size is None:
        await sh.err(NOT_FOUND + CRLF)
        return 1
    try:
        dst = files.resolve(machine, names[1] if len(names) > 1 else files.home(machine))
    except PathError as exc:
        await sh.err(f"{exc}{CRLF}")
        await sh.out(COPIED_NONE)
        return 1
    if (len(names) > 1 and names[1].endswith(("\\", ":"))) or files.is_dir(machine, dst):
        dst = dst.child(src.name)
    if dst.key == src.key:
        await sh.err(ONTO_ITSELF + CRLF)
        await sh.out(COPIED_NONE)
        return 1

    twin = sh.ctx.twin
    clock = sh.ctx.clock
    # The twin may be stepping its model for another caller (it holds its lock meanwhile): ask it
    # from a worker thread, so the SSH server's event loop keeps serving the other sessions.
    job = await asyncio.to_thread(twin.start_copy, machine.name, _location(src), _location(dst), size)
    while True:
        job = await asyncio.to_thread(twin.copy_status, job.job_id)
        if job.finished_lab_s is not None or job.failed:
            break
        if sh.drop_armed and clock.now() - job.started_lab_s >= DROP_AFTER_LAB_S:
            await sh.drop()
        await sh.sleep_lab(_poll_lab_s(job.eta_lab_s, sh.drop_armed, clock))
    if job.failed:
        await sh.err(NET_NAME_GONE + CRLF)
        await sh.out(COPIED_NONE)
        return 1
    files.put(machine, dst, size)
    await sh.out(COPIED_ONE)
    return 0


FSUTIL_CREATENEW_USAGE = (
    "Usage : fsutil file createnew <filename> <length>"
    + CRLF
    + "   Eg : fsutil file createnew C:\\testfile.txt 1000"
    + CRLF
)


async def fsutil(sh: Shell, seg: Segment) -> int:
    args = seg.argv[1:]
    if len(args) < 2 or args[0].lower() != "file" or args[1].lower() != "createnew":
        await sh.out(
            "---- Commands Supported ----" + CRLF + CRLF + "file          File specific commands" + CRLF
        )
        return 1
    if len(args) != 4:
        await sh.out(FSUTIL_CREATENEW_USAGE)
        return 1
    try:
        length = int(args[3], 0)
        if length < 0:
            raise ValueError
    except ValueError:
        await sh.out("Error:  The parameter is incorrect." + CRLF)
        return 1
    files = sh.env.files
    try:
        path = files.resolve(sh.machine, args[2])
    except PathError as exc:
        await sh.out(f"Error:  {exc}{CRLF}")
        return 1
    if files.size(sh.machine, path) is not None:
        await sh.out("Error:  The file exists." + CRLF)
        return 1
    files.put(sh.machine, path, length)
    await sh.out(f"File {args[2]} is created{CRLF}")
    return 0


async def delete(sh: Shell, seg: Segment) -> int:
    names = [a for a in seg.argv[1:] if not a.startswith("/")]
    if not names:
        await sh.err("The syntax of the command is incorrect." + CRLF)
        return 1
    files = sh.env.files
    for name in names:
        try:
            path = files.resolve(sh.machine, name)
        except PathError as exc:
            await sh.err(f"{exc}{CRLF}")
            continue
        if not files.delete(sh.machine, path):
            await sh.err(f"Could Not Find {path.shown}{CRLF}")
    return 0
