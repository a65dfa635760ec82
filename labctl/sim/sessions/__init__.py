"""The session launchers' far side in the simulated lab (:mod:`.server`), fed by the twin's sessions."""

from labctl.sim.sessions.server import LauncherEndpoint, LauncherManager, build_endpoints

__all__ = ["LauncherEndpoint", "LauncherManager", "build_endpoints"]
