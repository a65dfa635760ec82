"""An agent killed in the middle of a storm: its machines are a lab fault naming it, the rest of the
storm is measured and restored; restarted, it reports the order it was executing as interrupted
and never executes it a second time."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from labctl.lab.power.model import State
from labctl.lab.sites import AgentDown, require_agents
from tests.agents.conftest import CLIENTS_PER_SITE, SiteLab
from tests.agents.labs import clients_of
from tests.agents.storm import storm

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SITE_LAB_AGENT_ARGS = ("--ack-wait", "2")  # a killed agent's unacked order comes back quickly
# one of site-2's clients never wakes, so site-2's readiness watch lasts until its deadline
SITE_LAB_FAULTS = "- {kind: client_never_wakes, targets: [optiplex-004]}"
ALL = [n for k in range(1, 4) for n in clients_of(k, CLIENTS_PER_SITE)]
SITE2 = clients_of(2, CLIENTS_PER_SITE)
OTHERS = [n for n in ALL if n not in SITE2]


def _processes_naming(arg: str) -> list[int]:
    """Live (not zombie) processes with ``arg`` among their command-line arguments."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError, ValueError):
            continue
        if arg.encode() in argv and state not in ("Z", "X"):
            pids.append(int(proc.name))
    return pids


def test_an_agent_killed_mid_storm_is_a_lab_fault_for_its_machines_and_the_rest_is_restored(
    site_lab: SiteLab,
) -> None:
    s = site_lab.session()
    s.power.off(ALL)
    waiting = threading.Event()

    journal = site_lab.agents["site-2"].log.parent / "site-2" / "journal.jsonl"

    def kill_when_waiting() -> None:  # once site-2 has taken up its readiness watch
        waiting.wait(60)
        deadline = time.monotonic() + 30
        while '-ready", "op"' not in journal.read_text() and '-ready"}' not in journal.read_text():
            assert time.monotonic() < deadline, "site-2 never received its readiness order"
            time.sleep(0.05)
        site_lab.agents["site-2"].kill()

    killer = threading.Thread(target=kill_when_waiting)
    killer.start()
    result = storm(s, ALL, ready_timeout_s=600, during_ready=waiting)
    killer.join()
    # its leaf node died with it: a SIGKILLed agent leaves no nats-server behind
    leaf_conf = str(journal.parent / "leaf" / "leaf-site-2.conf")
    deadline = time.monotonic() + 10
    while _processes_naming(leaf_conf) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_naming(leaf_conf), "the killed agent's leaf node is still running"
    # every client was woken (site-2 fired before it died) ...
    assert result.on.ok, result.on.failed
    # ... the others were measured, site-2's are a lab fault naming the agent
    for n in OTHERS:
        c = result.outcome(n)
        assert c.outcome == "ready" and c.boot_time_s, c
    for n in SITE2:
        c = result.outcome(n)
        assert c.outcome == "error" and c.boot_time_s is None
        assert "agent site-2 went silent" in c.detail and "ping" in c.detail, c.detail
    # restore: the rest went off; site-2's could not be sent, and say why
    assert set(result.off.failed) == set(SITE2)
    for n in SITE2:
        assert "site-2 does not answer" in result.off.outcomes[n].detail
    states = s.power.client_states([s.lab.machine(n) for n in ALL])  # this controller's own view
    assert {n: states[n].state for n in OTHERS} == dict.fromkeys(OTHERS, State.OFF)
    woke = [n for n in SITE2 if n != "optiplex-004"]  # left on (and recorded as not restored)
    assert {n: states[n].state for n in woke} == dict.fromkeys(woke, State.ON)
    # the next run refuses to start, in one line naming the agent and how to start it
    with pytest.raises(AgentDown) as err:
        require_agents(s.lab, [s.lab.machine(n) for n in SITE2])
    line = str(err.value)
    assert (
        "\n" not in line
        and "agent site-2" in line
        and "labctl agent --lab" in line
        and "--name site-2" in line
    )
    require_agents(s.lab, [s.lab.machine(n) for n in OTHERS])  # the others are fine


def test_a_restarted_agent_reports_the_order_it_died_in_as_interrupted_and_does_not_repeat_it(
    site_lab: SiteLab,
) -> None:
    agent = site_lab.restart_agent("site-2")
    journal = agent.log.parent / "site-2" / "journal.jsonl"
    # the readiness watch site-2 was running when it was killed: started once, never finished
    # before; delivered again to the new process, it is answered, not executed
    deadline = time.monotonic() + 60
    while True:
        recs = [json.loads(x) for x in journal.read_text().splitlines()]
        ready = {r["order"] for r in recs if r["order"].endswith("-ready")}
        done = {r["order"]: r["done"] for r in recs if r["op"] == "done" and r["order"] in ready}
        if ready and set(done) == ready:
            break
        assert time.monotonic() < deadline, recs[-3:]
        time.sleep(0.2)
    (order,) = ready
    assert [r["op"] for r in recs if r["order"] == order and r["op"] == "start"] == ["start"]
    assert done[order]["status"] == "interrupted" and done[order]["redelivered"]
    # and it serves again
    s = site_lab.session()
    require_agents(s.lab, [s.lab.machine(n) for n in SITE2])
    report = s.power.off(SITE2)
    assert report.ok, report.failed
