"""`labctl agent` (run a site agent) and `labctl agents` (is each one up?)."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from labctl.cli.common import config_option, lab_option
from labctl.errors import BadInputError
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab


def _lab_with_agents(lab_file: Path | None, configuration: str | None) -> Lab:
    # every machine of the file: an agent serves its machines whichever configuration a run uses
    lab = load_lab(lab_file, configuration, every_machine=True)
    if lab.agents is None:
        raise BadInputError(
            f"{lab.source_file}: the lab has no agents: section (add agents: {{hub: nats://..., sites: [...]}})"
        )
    return lab


@click.command("agent")
@lab_option
@config_option
@click.option("--name", "name", required=True, help="The agent's name under agents.sites in the inventory.")
@click.option(
    "--hub",
    default=None,
    metavar="URL",
    help="nats://host:4222 to connect to the hub directly, or nats-leaf://host:7422 to run a leaf node "
    "here that dials out to it (one outbound port); default: the inventory's agents.hub.",
)
@click.option("--hub-domain", default=None, help="The hub's JetStream domain (default: agents.hub_domain).")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Journal and leaf-node files (default ~/.labctl/agents/<lab>-<name>; env LABCTL_AGENT_DIR).",
)
@click.option(
    "--ack-wait",
    "ack_wait_s",
    type=float,
    default=None,
    help="Seconds the hub waits for an order's ack before delivering it again (default 30; set when "
    "the agent's consumer is first made).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every order.")
def agent(
    lab_file: Path | None,
    configuration: str | None,
    name: str,
    hub: str | None,
    hub_domain: str | None,
    state_dir: Path | None,
    ack_wait_s: float | None,
    verbose: bool,
) -> None:
    """Run the site agent NAME: power, readiness and metric sources of its part of the lab.

    One agent per subnet or site, named in the inventory's agents: section with what it serves.
    It executes the controller's orders where the wire is (Wake-on-LAN on its own segment, BMCs
    only its site reaches, SSH), fires power actions at the instant the controller chose for all
    agents, and reports per-machine timestamps. Stop it with Ctrl-C or SIGTERM.

    \b
    Examples:
      labctl agent --lab hardware/my-lab.yaml --name site-a
      labctl agent --lab hardware/my-lab.yaml --name site-b --hub nats-leaf://hub.lab:7422
    """
    from labctl.agents.agent import AgentSettings, SiteAgent  # nats-py: only labs with agents load it

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    lab = _lab_with_agents(lab_file, configuration)
    settings = AgentSettings() if ack_wait_s is None else AgentSettings(ack_wait_s=ack_wait_s)
    site = SiteAgent(lab, name, hub=hub, hub_domain=hub_domain, state_dir=state_dir, settings=settings)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    site.start()
    try:
        assert site.conn is not None
        click.echo(
            f"agent {name} of {lab.name}: serves {site.site.serves_text()}; hub {site.conn.url}"
            + (f" (leaf node to {site.hub})" if site.leaf is not None else "")
            + "; Ctrl-C stops it",
            err=True,
        )
        stop.wait()
    finally:
        site.close()


@click.command("agents")
@lab_option
@config_option
@click.option("--hub", default=None, metavar="URL", help="The hub (default: the inventory's agents.hub).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per agent.")
def agents(lab_file: Path | None, configuration: str | None, hub: str | None, as_json: bool) -> None:
    """Each site agent of the lab: up or down, version, last heartbeat, clock offset, what it serves.

    Up means it answered a clock ping just now; the offset is its clock minus this machine's,
    measured over NATS (within half the round trip). Exit status 1 when any agent is down.
    """
    from labctl.lab.sites.link import ControllerLink  # nats-py: only labs with agents load it

    lab = _lab_with_agents(lab_file, configuration)
    link = ControllerLink(lab, hub=hub)
    try:
        rows = link.status()
        where = link.hub
    finally:
        link.close()
    if as_json:
        for st in rows:
            hb = st.heartbeat
            click.echo(
                json.dumps(
                    {
                        "agent": st.agent.name,
                        "up": st.up,
                        "version": hb.version if hb else None,
                        "host": hb.host if hb else None,
                        "pid": hb.pid if hb else None,
                        "heartbeat_age_s": st.heartbeat_age_s(),
                        "clock_offset_s": st.clock.offset_s if st.clock else None,
                        "clock_rtt_s": st.clock.rtt_s if st.clock else None,
                        "serves": st.agent.serves_text(),
                        "orders_executed": hb.orders_executed if hb else None,
                    }
                )
            )
    else:
        click.echo(f"agents of {lab.name} on {where}:")
        table = Table(box=None, pad_edge=False)
        for col in ("AGENT", "STATE", "VERSION", "HOST", "HEARTBEAT", "CLOCK OFFSET", "SERVES"):
            table.add_column(col, overflow="fold")
        for st in rows:
            hb = st.heartbeat
            age = st.heartbeat_age_s()
            table.add_row(
                st.agent.name,
                "up" if st.up else ("down" if hb else "never seen"),
                hb.version if hb else "-",
                f"{hb.host} pid {hb.pid}" if hb else "-",
                f"{age:.1f} s ago" if age is not None else "-",
                f"{st.clock.offset_s * 1e3:+.2f} ms ±{st.clock.uncertainty_s * 1e3:.2f}" if st.clock else "-",
                st.agent.serves_text(),
            )
        Console(width=None if sys.stdout.isatty() else 160, highlight=False).print(table)
    if not all(st.up for st in rows):
        sys.exit(1)
