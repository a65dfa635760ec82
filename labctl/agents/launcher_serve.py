"""``python -m labctl.agents.launcher_serve CONFIG``: the launcher daemon a site agent hosts.

The same daemon as ``labctl launcher --config CONFIG serve`` (:class:`labctl.launcher.daemon.Launcher`)
without the command line's imports: a site agent starts one per ``local`` launcher placed at it
(:mod:`labctl.agents.launchers`), and the whole CLI would cost it seconds of CPU at every start
on a busy launcher machine. It prints ``{"event": "serving", ...}`` once it answers; a bad
configuration is one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from labctl.launcher.config import ConfigError, load
from labctl.launcher.daemon import Launcher


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m labctl.agents.launcher_serve CONFIG", file=sys.stderr)
        return 2
    try:
        cfg = load(Path(argv[0]))
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    Launcher(cfg).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
