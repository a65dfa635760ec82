"""Simulated SSH endpoints of the lab's Windows clients and servers (asyncssh, one loop thread).

``build_endpoints(ctx)`` gives one :class:`SshEndpoint` per machine that has ``ssh`` in the
inventory. See :mod:`labctl.sim.ssh.server` for what a client sees, and the command modules
(:mod:`~labctl.sim.ssh.typeperf`, :mod:`~labctl.sim.ssh.shutdown`, :mod:`~labctl.sim.ssh.filecopy`,
:mod:`~labctl.sim.ssh.pvs`) for the output formats.
"""

from labctl.sim.ssh.server import SshEndpoint, SshManager, build_endpoints

__all__ = ["SshEndpoint", "SshManager", "build_endpoints"]
