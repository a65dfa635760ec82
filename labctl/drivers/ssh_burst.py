"""One command on many machines at the same moment: sessions opened first, then fired together.

A "simultaneous" reboot of 50 clients over SSH used to connect, authenticate and run on each
machine in turn within a pool of workers, so the machines went down over the time it took to
handshake with all of them (14 to 348 lab seconds at 60x), while the recorded spread was only that
of the send attempts. :func:`ssh_burst` separates the two:

1. **arm**: for every machine, a connection (TCP, SSH handshake, authentication; reused from the
   pool when alive) and a session channel, opened by ``workers`` threads. Nothing runs yet.
2. **fire**: one thread per armed channel waits at a barrier; the last to arrive releases them all
   and each sends its ``exec`` request at once (``sent_wall``).
3. **delivery**: each thread then waits for what the machine does. ``delivered_wall`` is the moment
   its session dropped (a shutdown: sshd died under it, as Windows does with ``/t 0``) or the
   moment it answered with an exit status (the OS accepted the command). Both are observed here,
   at the controller, so they include the network's one-way delay (sub-millisecond on a lab LAN),
   and for a drop the OS's time from the command to sshd dying (the same for every machine of one
   model, so it shifts delivery but does not spread it).

Machines that could not be armed are reported with their :class:`SshError` and are not fired.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import paramiko

from labctl.drivers.ssh import SshError, SshPool, SshTarget, _Conn, close_channel, join_command

BARRIER_WAIT_S = 30.0  # the burst fires even if a thread never reaches the barrier (a stuck host)


@dataclass(frozen=True)
class BurstOutcome:
    """What one machine of a burst did."""

    name: str
    sent_wall: float | None = None  # time.time() when its exec request went out (None: never sent)
    delivered_wall: float | None = None  # its session dropped, or it answered with an exit status
    dropped: bool = False  # the session dropped without an exit status (expected for a shutdown)
    exit_status: int | None = None
    stderr: str = ""
    error: SshError | None = None  # could not be armed, or no answer by the deadline

    @property
    def ok(self) -> bool:
        return self.error is None and (self.dropped or self.exit_status == 0)


@dataclass
class _Armed:
    target: SshTarget
    command: str
    conn: _Conn
    chan: paramiko.Channel


def _arm(pool: SshPool, target: SshTarget, command: str, action: str) -> _Armed:
    """A connection and an open session channel for ``target``; one retry on a fresh connection
    when a pooled one turns out dead (the machine rebooted since it was last used)."""
    for attempt in (1, 2):
        conn = pool._acquire(target, action)
        transport = conn.client.get_transport()
        try:
            if transport is None or not transport.is_active():
                raise paramiko.SSHException("the pooled connection is closed")
            chan = transport.open_session(timeout=pool.connect_timeout_s)
            return _Armed(target, command, conn, chan)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            pool._release(target, conn, True)
            if attempt == 2:
                raise SshError(
                    target.endpoint,
                    action,
                    f"cannot open a session: {exc or type(exc).__name__}",
                    "is the machine up and its SSH server accepting sessions?",
                    kind="dropped",
                ) from None
    raise AssertionError("unreachable")


def _fire(armed: _Armed, barrier: threading.Barrier, action: str, timeout_s: float) -> BurstOutcome:
    """Wait for the others, send the exec request, then wait for the drop or the exit status."""
    t, chan = armed.target, armed.chan
    name = t.name
    try:
        barrier.wait(BARRIER_WAIT_S)
    except threading.BrokenBarrierError:
        pass  # one thread never arrived: fire anyway rather than hold the others back
    transport = chan.get_transport()
    if transport is None or not transport.is_active():
        return BurstOutcome(
            name,
            error=SshError(t.endpoint, action, "the connection closed before the burst", "retry", "dropped"),
        )
    sent = time.time()
    try:
        chan.exec_command(armed.command)
    except (paramiko.SSHException, EOFError, OSError):
        # the request went out on a live transport and the session died at once: it was delivered
        return BurstOutcome(name, sent, time.time(), dropped=True)
    deadline = time.monotonic() + timeout_s
    err = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return BurstOutcome(
                name,
                sent,
                error=SshError(
                    t.endpoint,
                    action,
                    f"sent, but neither an exit status nor a dropped session within {timeout_s:g} s",
                    "check the machine: it may be hung",
                    "timeout",
                ),
            )
        chan.settimeout(min(0.5, remaining))
        try:
            data = chan.recv(65536)
        except TimeoutError:
            continue
        except (paramiko.SSHException, EOFError, OSError):
            data = b""
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
        if data:
            continue  # output is not what we wait for; a shutdown prints nothing
        at = time.time()  # EOF: the command ended or the session dropped
        chan.status_event.wait(min(1.0, max(0.0, deadline - time.monotonic())))
        status = chan.exit_status
        if status == -1:
            return BurstOutcome(name, sent, at, dropped=True)
        return BurstOutcome(name, sent, at, exit_status=status, stderr=err.decode("utf-8", "replace"))


def ssh_burst(
    pool: SshPool,
    jobs: Sequence[tuple[SshTarget, Sequence[str]]],
    *,
    action: str,
    timeout_s: float,
    workers: int = 64,
    armed_hook: Callable[[], None] | None = None,
) -> dict[str, BurstOutcome]:
    """Run each job's command on its machine at the same moment; one outcome per machine name.

    ``workers`` bounds the handshakes of the arm phase (they cost CPU on both ends); the fire
    phase uses one thread per armed machine, so nothing queues behind anything at the burst.
    ``armed_hook`` is called between the two (e.g. to wait for other backends to arm).
    """
    out: dict[str, BurstOutcome] = {}
    armed: list[_Armed] = []
    lock = threading.Lock()

    def arm(job: tuple[SshTarget, Sequence[str]]) -> None:
        target, argv = job
        try:
            a = _arm(pool, target, join_command(argv, target.shell), action)
        except SshError as exc:
            with lock:
                out[target.name] = BurstOutcome(target.name, error=exc)
            return
        with lock:
            armed.append(a)

    if jobs:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs))), thread_name_prefix="arm") as ex:
            list(ex.map(arm, jobs))
    if armed_hook is not None:
        armed_hook()
    if not armed:
        return out
    barrier = threading.Barrier(len(armed))
    results: dict[str, BurstOutcome] = {}

    def fire(a: _Armed) -> None:
        o = BurstOutcome(
            a.target.name, error=SshError(a.target.endpoint, action, "the burst thread failed", kind="error")
        )
        try:
            o = _fire(a, barrier, action, timeout_s)
        finally:
            close_channel(a.chan)
            pool._release(a.target, a.conn, o.dropped or o.error is not None)
            with lock:
                results[a.target.name] = o

    threads = [threading.Thread(target=fire, args=(a,), name=f"fire-{a.target.name}") for a in armed]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out.update(results)
    return out
