"""What every simulated endpoint server looks like to the simulator host (`labctl.sim.lab`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from labctl.errors import BadInputError


@dataclass(frozen=True)
class EndpointInfo:
    kind: str  # "redfish", "ssh", "wol", "unity", "vcenter"
    name: str  # the machine, array or subnet it stands for
    host: str
    port: int
    protocol: str  # "https", "ssh", "udp", ...


class SimEndpoint(Protocol):
    """A server on loopback. ``start`` returns once it is listening; ``stop`` frees the address."""

    info: EndpointInfo

    def start(self) -> None: ...

    def stop(self) -> None: ...


class PortInUseError(BadInputError):
    def __init__(self, kind: str, name: str, host: str, port: int):
        super().__init__(
            f"{kind} endpoint for {name}: {host}:{port} is already in use "
            f"(another `labctl sim up`? run `labctl sim status`, or free the port: `ss -ltnup | grep {port}`)"
        )
        self.host = host
        self.port = port
