"""The lab twin: a physical model of the desktop-streaming lab behind the simulated endpoints.

``build_twin(lab, clock, faults)`` returns the :class:`~labctl.sim.twin.interface.LabTwin` every
simulated endpoint asks; ``run_storm(lab, n)`` runs a boot storm in fast-forward. See README.md in
this folder for the model, and ``labctl sim calibrate`` for how it compares with the 2007 paper.

Modules, one job each:

- ``interface``   the contract with the endpoints (LabTwin, counters records)
- ``hardware``    inventory hardware -> service times, RAID penalties, NIC rates
- ``topology``    the lab as queueing stations; which stations each client's requests visit
- ``workload``    the boot phases and the image layout
- ``demand``      what one request costs at each station (CPU cycles, bytes, disk time)
- ``solver``      the queueing solution of one step (approximate MVA) and the retry tail
- ``cache``       a server's file cache of the shared vDisk image
- ``model``       state and time step: clients, caches, controllers, counters
- ``twin``        the live, thread-safe LabTwin on the lab clock; the fast-forward clock
- ``storm``       fast-forward boot storms with perfmon-style sampling
- ``copies``      fast-forward copy/reboot cells, and each copy path's bottleneck bound
- ``calibration`` the 2007 boot storm against the published figures
- ``vdi/``        virtual desktops, ESXi hosts, PVS servers and SAN arrays (its own README)
"""

from __future__ import annotations

from labctl.clock import LabClock
from labctl.inventory.model import Lab
from labctl.sim.faults import FaultBook
from labctl.sim.twin.interface import LabTwin
from labctl.sim.twin.storm import StormResult, run_storm, scaled_lab
from labctl.sim.twin.twin import FastForwardClock, PhysicalTwin


def build_twin(lab: Lab, clock: LabClock, faults: FaultBook | None = None) -> LabTwin:
    """The physical twin of ``lab`` (loaded with ``every_machine=True``) on ``clock``.

    Servers start on, clients and VMs off (S5). Deterministic for ``lab.seed``.
    """
    return PhysicalTwin(lab, clock, faults)


__all__ = ["FastForwardClock", "PhysicalTwin", "StormResult", "build_twin", "run_storm", "scaled_lab"]
