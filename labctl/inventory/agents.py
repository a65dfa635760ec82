"""The inventory's ``agents:`` section: which site agent serves which part of the lab, and the hub.

A lab that outgrows one controller runs one ``labctl agent`` per subnet or site (issue
site-agents). Each agent is named here with what it reaches from where it sits:

    agents:
      hub: nats://hub.lab.example:4222      # the controller's NATS server (JetStream domain: hub)
      hub_domain: hub                       # the hub's JetStream domain, for clients behind a leaf node
      sites:
        - name: site-a
          networks: [lab-a]                 # Wake-on-LAN on its segment; its machines' SSH
          bmcs: [r740-[01-04]]              # servers whose BMC (Redfish, IPMI) only it reaches
          hosts: [pvs-02]                   # other machines it reaches over SSH
          launchers: [launcher-a]           # VDI session launchers (vdi.launchers) at this site

A machine is *served* by the agent whose networks hold it, or which names it under bmcs/hosts;
its power actions (and, unless ``ready: false``, its readiness watch) then go through that agent.
A machine served by two agents is an error: one wire, one hand on it. A session launcher named
under ``launchers`` is *placed* at that agent: the controller sends it ``labctl-launcher/1`` through
the agent, which reaches it by its ``kind`` (``local``: it hosts it on its own machine; ``ssh``);
a launcher placed at two agents is an error too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

# letters, digits, - and _: the name is a NATS subject token and a consumer name
AGENT_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
AgentName = Annotated[str, Field(pattern=AGENT_NAME_PATTERN)]

DEFAULT_HEARTBEAT_S = 2.0  # wall seconds between an agent's heartbeats
DEFAULT_MISSED_BEATS = 3  # an agent is down after this many heartbeats without one


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentSpec(_Frozen):
    """One site agent, as written (ranges allowed in bmcs/hosts/launchers)."""

    name: AgentName
    description: str = ""
    networks: tuple[str, ...] = ()  # networks it sits on: WoL broadcasts, SSH to their machines
    bmcs: tuple[str, ...] = ()  # machines whose BMC (redfish:, ipmi:) it reaches
    hosts: tuple[str, ...] = ()  # other machines it reaches over SSH
    launchers: tuple[str, ...] = ()  # VDI session launchers (vdi.launchers) placed at it
    ready: bool = True  # it watches its machines' readiness (false: the controller watches them)


class AgentsSpec(_Frozen):
    hub: str  # nats://host:port of the hub (or of the controller's own leaf node)
    hub_domain: str | None = None  # the hub's JetStream domain when `hub` is a leaf node
    heartbeat_s: PositiveFloat = DEFAULT_HEARTBEAT_S
    missed_beats: PositiveInt = DEFAULT_MISSED_BEATS
    sites: tuple[AgentSpec, ...] = Field(min_length=1)


class Agent(_Frozen):
    """One agent after resolution: every machine it serves, by name, in inventory order."""

    name: str
    description: str = ""
    networks: tuple[str, ...] = ()
    bmcs: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    launchers: tuple[str, ...] = ()  # the session launchers placed at it (names of vdi.launchers)
    ready: bool = True
    machines: tuple[str, ...] = ()  # served: on its networks, or named under bmcs/hosts

    def serves_text(self, limit: int = 4) -> str:
        """What it serves, in one short line: ``networks lab-a; bmcs r740-01..; 40 machines``."""
        parts = []
        for label, items in (
            ("networks", self.networks),
            ("bmcs", self.bmcs),
            ("hosts", self.hosts),
            ("launchers", self.launchers),
        ):
            if items:
                more = f" +{len(items) - limit}" if len(items) > limit else ""
                parts.append(f"{label} {','.join(items[:limit])}{more}")
        parts.append(f"{len(self.machines)} machine(s)")
        return "; ".join(parts)


class Agents(_Frozen):
    """The resolved ``agents:`` section of a lab."""

    hub: str
    hub_domain: str | None = None
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    missed_beats: int = DEFAULT_MISSED_BEATS
    sites: dict[str, Agent] = {}

    @property
    def down_after_s(self) -> float:
        """Wall seconds without a heartbeat after which an agent counts as down."""
        return self.heartbeat_s * self.missed_beats

    def serving(self, machine: str) -> Agent | None:
        for agent in self.sites.values():
            if machine in agent.machines:
                return agent
        return None


Add = Callable[[tuple[str | int, ...], str, str], None]  # (loc, message, fix): one inventory problem


def resolve_agents(
    spec: AgentsSpec,
    *,
    networks: Iterable[str],
    machines: Mapping[str, tuple[str, str | None]],
    expand: Callable[[str], list[str]],
    add: Add,
    launchers: Iterable[str] = (),
) -> tuple[Agents, dict[str, str]]:
    """The resolved section and ``machine -> agent`` for every machine an agent serves.

    ``machines``: name -> (kind, network) of every machine of the file; ``launchers``: the names of
    the file's session launchers (``vdi.launchers``, ranges expanded); ``expand`` turns a name or
    range into names (raising ValueError with the reason); ``add`` records one problem.
    """
    known_launchers = set(launchers)
    placed_at: dict[str, str] = {}  # launcher -> the agent it is placed at
    known_networks = set(networks)
    served_by: dict[str, str] = {}
    sites: dict[str, Agent] = {}
    loc0: tuple[str | int, ...] = ("agents",)
    if not spec.hub.startswith(("nats://", "tls://", "nats-leaf://", "ws://", "wss://")):
        add((*loc0, "hub"), f"malformed hub URL {spec.hub!r}", "write nats://host:4222")
    for i, a in enumerate(spec.sites):
        loc = (*loc0, "sites", i)
        if a.name in sites:
            add((*loc, "name"), f"duplicate agent name {a.name!r}", "give each agent its own name")
        for j, net in enumerate(a.networks):
            if net not in known_networks:
                add((*loc, "networks", j), f"unknown network {net!r}", "name a network from networks:")
        named: dict[str, list[str]] = {}
        for field in ("bmcs", "hosts", "launchers"):
            names: list[str] = []
            known = known_launchers if field == "launchers" else machines
            what = "session launcher" if field == "launchers" else "machine"
            for j, entry in enumerate(getattr(a, field)):
                try:
                    expanded = expand(entry)
                except ValueError as exc:
                    add((*loc, field, j), str(exc), f"write a {what} name or a range like pc-[01-10]")
                    continue
                unknown = [n for n in expanded if n not in known]
                if unknown:
                    add(
                        (*loc, field, j),
                        f"agent {a.name!r} names unknown {what} {unknown[0]!r}"
                        + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""),
                        "declare it under vdi.launchers, or remove it from the agent"
                        if field == "launchers"
                        else "declare it, or remove it from the agent",
                    )
                names.extend(n for n in expanded if n in known)
            named[field] = names
        twice = [n for n in named["launchers"] if placed_at.setdefault(n, a.name) != a.name]
        if twice:  # one line for the pair of agents, not one per launcher
            more = f" and {len(twice) - 1} more" if len(twice) > 1 else ""
            add(
                (*loc, "launchers"),
                f"launcher {twice[0]!r}{more} is placed at agents {placed_at[twice[0]]!r} and {a.name!r}",
                "one agent per launcher: take it off one agent's launchers",
            )
        served = [
            name
            for name, (_kind, net) in machines.items()
            if (net in a.networks) or name in named["bmcs"] or name in named["hosts"]
        ]
        clashes: dict[str, list[str]] = {}  # the other agent -> machines both would serve
        for name in served:
            other = served_by.setdefault(name, a.name)
            if other != a.name:
                clashes.setdefault(other, []).append(name)
        for other, names in clashes.items():  # one line per pair of agents, not one per machine
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            add(
                loc,
                f"machine {names[0]!r}{more} is served by agents {other!r} and {a.name!r}",
                "one agent per machine: take it off one agent's networks/bmcs/hosts",
            )
        sites[a.name] = Agent(
            name=a.name,
            description=a.description,
            networks=a.networks,
            bmcs=tuple(named["bmcs"]),
            hosts=tuple(named["hosts"]),
            launchers=tuple(named["launchers"]),
            ready=a.ready,
            machines=tuple(served),
        )
    agents = Agents(
        hub=spec.hub,
        hub_domain=spec.hub_domain,
        heartbeat_s=spec.heartbeat_s,
        missed_beats=spec.missed_beats,
        sites=sites,
    )
    return agents, served_by
