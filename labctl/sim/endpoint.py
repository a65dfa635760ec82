"""What every simulated endpoint server looks like to the simulator host (`labctl.sim.simlab`)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from labctl.clock import LabClock
from labctl.errors import BadInputError
from labctl.inventory.model import Lab
from labctl.sim.faults import FaultBook
from labctl.sim.twin.interface import LabTwin


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
            f"(another `labctl sim up`? run `labctl sim status`, free the port: `ss -ltnup | grep {port}`, "
            "or give the lab addresses of its own: loopback_block: auto under lab: in its file)"
        )
        self.kind = kind
        self.name = name
        self.host = host
        self.port = port


def check_address_free(kind: str, name: str, host: str, port: int, *, udp: bool = False) -> None:
    """Bind ``host:port`` for a moment: PortInUseError if something holds it, BadInputError if
    ``host`` is no address of this machine."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    try:
        if not udp:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(kind, name, host, port) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise BadInputError(
                f"{kind} endpoint for {name}: {host} is not an address of this machine "
                "(the simulated lab listens on loopback: give it a 127.x.y.z address in the lab file)"
            ) from None
        raise
    finally:
        sock.close()


@dataclass
class SimContext:
    """Everything an endpoint builder needs. Builders have the signature
    ``build_endpoints(ctx: SimContext) -> list[SimEndpoint]`` (one module per protocol)."""

    lab: Lab  # loaded with every_machine=True: every box in the file is simulated
    twin: LabTwin
    faults: FaultBook
    clock: LabClock
    state_dir: Path  # run-time folder for certificates, host keys, logs (never committed)
    secrets: Mapping[str, str] = field(default_factory=dict)  # credential ref -> value the sim accepts

    def credential(self, ref: str | None) -> str | None:
        """The value the simulated endpoint accepts for a credential reference."""
        return self.secrets.get(ref) if ref else None
