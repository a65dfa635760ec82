"""How a launcher reaches a desktop: one connector per display protocol or broker, chosen by name."""

from __future__ import annotations

from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.base import Connector, Launch, Progress
from labctl.launcher.connectors.citrix import CitrixConnector
from labctl.launcher.connectors.custom import CustomConnector
from labctl.launcher.connectors.horizon import HorizonConnector
from labctl.launcher.connectors.rdp import RdpConnector

CONNECTORS: dict[str, type[Connector]] = {
    "rdp": RdpConnector,
    "horizon": HorizonConnector,
    "citrix": CitrixConnector,
    "custom": CustomConnector,
}


def connector(cfg: ConnectorConfig) -> Connector:
    return CONNECTORS[cfg.kind](cfg)


__all__ = ["CONNECTORS", "Connector", "Launch", "Progress", "connector"]
