"""What controllers and site agents say to each other over NATS: subjects, streams, ids, messages.

Everything lives on the hub (JetStream domain ``hub`` when a client sits behind a leaf node):

=====================  ==========================================  ==============================
stream / subject       subject                                     what
=====================  ==========================================  ==============================
``LABCTL_ORDERS``      ``labctl.order.<lab>.<agent>``              an order to one agent
``LABCTL_RESULTS``     ``labctl.result.<lab>.<agent>.<order>``     one machine's result, or the
                                                                   agent's "done" for the order
``LABCTL_DATA``        ``labctl.sample.<lab>.<agent>.<feed>``      a batch of a feed's samples
``LABCTL_AGENTS``      ``labctl.heartbeat.<lab>.<agent>``          the agent's last heartbeat
(core, no stream)      ``labctl.clock.<lab>.<agent>``              clock pings (request/reply)
(core, no stream)      ``labctl.launcher.<lab>.<agent>``           a ``labctl-launcher/1`` call to a
                                                                   launcher placed at the agent
                                                                   (request/reply)
=====================  ==========================================  ==============================

Every message published to a stream carries ``Nats-Msg-Id``: ``<order>/<agent>`` for an order,
``<order>/<machine>`` for a machine's result, ``<order>/<agent>/done``, ``<feed>/<seq>`` for
samples; an order id is ``<run>/<cell>/<step>``. Within :data:`DEDUP_WINDOW_S` the server stores
a message with a known id once only, so a controller or an agent that re-sends after a dropped
link never doubles an order or a result; the agent's journal (:mod:`labctl.agents.journal`)
keeps an order that is delivered again (its ack was lost) from being executed twice.

Times: ``*_wall`` fields are epoch seconds of the *sender's* wall clock. The controller measures
each agent's offset (:mod:`labctl.drivers.hub.clocksync`), puts ``fire_at`` into every order on that
agent's clock, and turns the agent's stamps back into its own before recording them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

ORDERS_STREAM: Final = "LABCTL_ORDERS"
RESULTS_STREAM: Final = "LABCTL_RESULTS"
DATA_STREAM: Final = "LABCTL_DATA"
AGENTS_STREAM: Final = "LABCTL_AGENTS"
# A re-sent message inside this window is stored once: longer than any link outage a run rides out.
DEDUP_WINDOW_S: Final = 600.0
KEEP_S: Final = 24 * 3600.0  # orders, results and samples stay this long on the hub
MSG_ID: Final = "Nats-Msg-Id"

_TOKEN = re.compile(r"[^A-Za-z0-9_-]")


def token(text: str) -> str:
    """``text`` as one NATS subject token (letters, digits, - and _)."""
    return _TOKEN.sub("_", text) or "_"


def order_token(order_id: str) -> str:
    """A short subject token for an order id (which holds ``/`` and run names)."""
    return hashlib.sha256(order_id.encode()).hexdigest()[:20]


def order_subject(lab: str, agent: str) -> str:
    return f"labctl.order.{token(lab)}.{agent}"


def result_subject(lab: str, agent: str, order_id: str) -> str:
    return f"labctl.result.{token(lab)}.{agent}.{order_token(order_id)}"


def results_of(lab: str, order_id: str) -> str:
    """Every agent's results of one order (a subscription filter)."""
    return f"labctl.result.{token(lab)}.*.{order_token(order_id)}"


def sample_subject(lab: str, agent: str, feed: str) -> str:
    return f"labctl.sample.{token(lab)}.{agent}.{token(feed)}"


def heartbeat_subject(lab: str, agent: str) -> str:
    return f"labctl.heartbeat.{token(lab)}.{agent}"


def heartbeats_of(lab: str) -> str:
    return f"labctl.heartbeat.{token(lab)}.*"


def clock_subject(lab: str, agent: str) -> str:
    return f"labctl.clock.{token(lab)}.{agent}"


def launcher_subject(lab: str, agent: str) -> str:
    return f"labctl.launcher.{token(lab)}.{agent}"


def consumer_name(lab: str, agent: str) -> str:
    """The agent's durable consumer of its orders (its place in the stream survives restarts)."""
    return f"agent-{token(lab)}-{agent}"


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")  # a newer peer may add fields

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Any:
        return cls.model_validate_json(data)


class ClockSpec(Message):
    """The controller's lab clock: the agent stamps lab times on the same scale and anchor."""

    scale: float = 1.0
    anchor_wall_s: float


class FeedSpec(Message):
    """A metric source the agent runs where the wire is, streaming its samples back."""

    id: str  # unique per run: <run>/<cell>/<source>
    source: Literal["pvs", "typeperf", "redfish_power"]
    targets: list[str]  # machine names: the streaming server, the server, the BMCs' servers
    interval_s: float = 5.0  # lab seconds between reads (typeperf: its -si)
    max_s: float = 86400.0  # wall seconds: an orphaned feed (its controller died) ends by itself


OrderKind = Literal["power", "state", "ready", "health", "feed", "cancel"]


class Order(Message):
    id: str  # <run>/<cell>/<step>: the same id is the same order (never executed twice)
    kind: OrderKind
    lab: str
    agent: str
    machines: list[str] = Field(default_factory=list)
    issued_wall: float  # controller clock
    fire_at: float | None = None  # agent clock: power fires together at this instant
    expires_at: float  # agent clock: an order delivered later is reported expired, not executed
    clock: ClockSpec
    action: str | None = None  # power: labctl.lab.power.Action (on, off, reboot, reset)
    force: bool = False  # power off: without the OS shutting down
    deadline_lab: float | None = None  # ready / health: the lab time to give up at
    expect_boot: bool = False  # ready
    wake: bool = False  # health: wake machines that are off to check they come up
    feed: FeedSpec | None = None  # feed: start it; cancel: the feed or order id to stop
    cancels: str | None = None  # cancel: the order or feed id to stop


class MachineResult(Message):
    """One machine's part in an order, as the agent saw it (its clock)."""

    order: str
    agent: str
    machine: str
    kind: str  # client, server, vm
    ok: bool
    detail: str = ""
    fix: str = ""
    backend: str = ""  # the backend the agent ran (wol-ssh, redfish, ...)
    sent_wall: float | None = None
    delivered_wall: float | None = None
    state: str | None = None  # state: on/off/booting/unknown; ready: ready/timeout/error; health: ok/failed
    source: str = ""
    at_wall: float | None = None  # ready: when it was seen ready
    boot_time_s: float | None = None
    retries: int | None = None
    checks: dict[str, str] = Field(default_factory=dict)  # health: check -> "ok" or why not
    extra: dict[str, Any] = Field(default_factory=dict)


class OrderDone(Message):
    """The agent's last word on an order: everything it will report has been sent."""

    order: str
    agent: str
    received_wall: float
    fired_wall: float | None = None  # power: when the gate opened (all armed, fire_at reached)
    late_s: float | None = None  # power: how long after fire_at it fired (arming took longer)
    machines: int = 0
    reported: int = 0
    status: Literal["done", "expired", "interrupted", "refused", "failed"] = "done"
    detail: str = ""
    redelivered: bool = False  # delivered again (a lost ack): results re-sent, nothing re-executed


class ResultEnvelope(Message):
    """What travels on a result subject: one machine's result, or the order's done."""

    result: MachineResult | None = None
    done: OrderDone | None = None


class SampleRow(Message):
    source: str
    entity: str
    metric: str
    unit: str
    source_ts: float
    value: float


class SampleBatch(Message):
    feed: str
    agent: str
    seq: int
    read_wall: float  # agent clock
    samples: list[SampleRow] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)  # endpoint -> one line
    last: bool = False  # the feed ended (stopped, or max_s reached)


class Heartbeat(Message):
    lab: str
    agent: str
    version: str
    host: str
    pid: int
    started_wall: float
    beat_wall: float  # agent clock
    heartbeat_s: float
    serves: str  # one line: networks, bmcs, hosts, machines
    orders_executed: int = 0
    orders_refused_again: int = 0  # redeliveries answered from the journal
    running: list[str] = Field(default_factory=list)  # order ids in progress
    hub: str = ""  # how it reaches the hub: direct URL or leaf node


class Ping(Message):
    t0: float  # controller wall, sent


class Pong(Message):
    t0: float
    t1: float  # agent wall, received
    t2: float  # agent wall, answered
    agent: str


class LauncherCall(Message):
    """One ``labctl-launcher/1`` call to a session launcher placed at the agent (request/reply: the
    launcher's journal and cursor already make a lost answer harmless, asked again from the same
    cursor; a start lost in flight shows in the next ``events`` under its session id)."""

    lab: str
    agent: str
    launcher: str
    verb: Literal["hello", "start", "events", "logoff"]
    args: dict[str, str | int | list[str]] = Field(default_factory=dict)
    timeout_s: float  # the agent gives the launcher this long (wall seconds); the caller waits a bit more
    clock: ClockSpec


class LauncherAnswer(Message):
    """The launcher's answer as its protocol text (JSON lines, parsed by the controller's
    :mod:`labctl.lab.launchers.wire`), or why the agent could not get one (one line)."""

    launcher: str
    agent: str
    ok: bool
    stdout: str = ""
    error: str = ""
    fix: str = ""
