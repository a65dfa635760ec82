"""Streaming NIC ports for a measured load (the 2007 paper's one-port-instead-of-two reasoning).

The 2007 paper (lines 213-220) measured the streaming server's outbound utilisation on each of its
two GbE ports, balanced between them, and reasoned: over 60 % per port at 50 clients means that
one port alone would carry over 120 %, i.e. saturate. In numbers, with the load spread evenly:

    load in ports' worth  = peak utilisation per port * ports measured
    utilisation on k ports = load / k
    ports needed          = ceil(load / highest utilisation allowed)

(the 2012 paper's criterion for the highest utilisation is 90 %, section 4.4.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from labctl.sizing.exact import Number, SizingInputError, count, share, show, show_share, whole_up
from labctl.sizing.result import SizingResult


@dataclass(frozen=True)
class NicPorts(SizingResult):
    calculator: ClassVar[str] = "nic-ports"
    peak_utilisation_share: Fraction
    ports: int
    max_utilisation_share: Fraction
    on_ports: int | None = None

    @property
    def load_ports(self) -> Fraction:
        """The load in ports' worth: 1 is one port at 100 %."""
        return self.peak_utilisation_share * self.ports

    @property
    def ports_exact(self) -> Fraction:
        return self.load_ports / self.max_utilisation_share

    @property
    def ports_needed(self) -> int:
        return max(1, whole_up(self.ports_exact))

    def utilisation_on(self, ports: int) -> Fraction:
        return self.load_ports / ports

    def inputs(self) -> dict[str, Any]:
        return {
            "peak_utilisation_share": self.peak_utilisation_share,
            "ports": self.ports,
            "max_utilisation_share": self.max_utilisation_share,
            "on_ports": self.on_ports,
        }

    def outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "load_ports": self.load_ports,
            "ports_exact": self.ports_exact,
            "ports": self.ports_needed,
        }
        if self.on_ports is not None:
            out["utilisation_on_ports"] = self.utilisation_on(self.on_ports)
            out["saturated_on_ports"] = self.utilisation_on(self.on_ports) >= 1
        return out

    def lines(self) -> list[str]:
        out = [
            "NIC ports for a measured load (spread evenly over the ports):",
            f"  load  = peak utilisation per port × ports = {show(self.peak_utilisation_share)} × {self.ports}"
            f" = {show(self.load_ports)} ports' worth",
            f"  ports = load / highest utilisation allowed = {show(self.load_ports)} / {show(self.max_utilisation_share)}"
            f" = {show(self.ports_exact)} → {self.ports_needed} (rounded up)",
        ]
        if self.on_ports is not None:
            u = self.utilisation_on(self.on_ports)
            state = (
                "saturated"
                if u >= 1
                else "over the limit"
                if u > self.max_utilisation_share
                else "within the limit"
            )
            out.append(
                f"  on {self.on_ports} port(s): {show(self.load_ports)} / {self.on_ports} = {show_share(u)} ({state})"
            )
        return out


def nic_ports_needed(
    peak_utilisation_share: Number,
    ports: Number,
    max_utilisation_share: Number = 1,
    on_ports: Number | None = None,
) -> NicPorts:
    """Ports needed for a load measured as ``peak_utilisation_share`` on each of ``ports`` ports.

    The 2007 paper (line 220): over 60 % on each of two ports at 50 clients; on one port:

    >>> r = nic_ports_needed("60%", 2, on_ports=1)
    >>> r.utilisation_on(1), r.ports_needed
    (Fraction(6, 5), 2)
    """
    peak = share(peak_utilisation_share, "peak_utilisation_share")
    limit = share(max_utilisation_share, "max_utilisation_share")
    if limit == 0:
        raise SizingInputError(
            "max_utilisation_share",
            "0 %",
            "allows no traffic",
            "give the highest utilisation allowed, e.g. 90%",
        )
    return NicPorts(
        peak, count(ports, "ports"), limit, None if on_ports is None else count(on_ports, "on_ports")
    )
