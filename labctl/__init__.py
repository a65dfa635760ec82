"""labctl: a hardware-in-the-loop test-lab orchestrator for desktop-streaming and VDI labs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("labctl")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
