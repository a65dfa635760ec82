"""Session launchers: starting user sessions on desktops through a backend chosen by the inventory.

``vdi.launchers[].kind`` picks the backend (:mod:`.registry`): ``ssh`` runs labctl's launcher
script on Windows launcher machines over OpenSSH (docs/session-launchers.md); the simulated lab
answers the same commands from its twin (:mod:`labctl.sim.sessions`). :func:`open_launchers`
gives the cell's :class:`Launchers`.
"""

from labctl.lab.launchers.facade import Launchers, Poll, open_launchers
from labctl.lab.launchers.model import EventBatch, OperationTime, Refusal, SessionEvent, SessionState

__all__ = [
    "EventBatch",
    "Launchers",
    "OperationTime",
    "Poll",
    "Refusal",
    "SessionEvent",
    "SessionState",
    "open_launchers",
]
