"""A child process that lives no longer than the process that started it.

Simulators, a site agent's leaf node, a launcher's daemon and its display clients are children
that must not outlive their parent: a SIGKILLed run or agent leaves nothing running behind it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def tie_to_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that ties a child to this process's life: the kernel sends it ``sig`` when
    the thread that started it ends (``prctl(PR_SET_PDEATHSIG)``; kept across exec, so it works for
    Go programs such as vcsim and nats-server too). A parent already gone before the call makes the
    child exit at once. None where the kernel has no such call (not Linux).

    The signal follows the *thread* that forked: start tied children from a thread that lives as
    long as the parent (the main thread)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: nothing to look up after fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl
            os._exit(1)

    return preexec
