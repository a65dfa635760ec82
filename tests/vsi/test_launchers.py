"""The launcher protocol (labctl-launcher/1): the lab side's parser, and the simulator's far side
refusing what a real launcher would refuse."""

from __future__ import annotations

import pytest

from labctl.lab.launchers import wire
from labctl.lab.launchers.model import SessionState
from labctl.sim.sessions.server import _Usage, parse_args


def test_command_line_names_script_verb_and_lists() -> None:
    argv = wire.command(
        r"C:\labctl\launcher.ps1", "start", workload="task", desktop=["d-1", "d-2"], user=["u1", "u2"]
    )
    assert argv[:6] == list(wire.POWERSHELL)
    assert argv[6:] == [
        r"C:\labctl\launcher.ps1",
        "start",
        "-Workload",
        "task",
        "-Desktop",
        "d-1,d-2",
        "-User",
        "u1,u2",
    ]
    script, verb, named = parse_args(argv)  # the far side reads back what the lab side wrote
    assert (script, verb, named["desktop"], named["user"]) == (
        r"C:\labctl\launcher.ps1",
        "start",
        "d-1,d-2",
        "u1,u2",
    )


def test_a_value_with_the_list_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="comma"):
        wire.command("x.ps1", "start", workload="a,b")


def test_events_answer_parsed_with_cursor() -> None:
    out = (
        '{"event":"session","seq":4,"session":"s1","desktop":"d-1","user":"u1","state":"active","ts":10.5,"login_s":31.0}\r\n'
        '{"event":"operation","seq":5,"session":"s1","index":0,"name":"ie_open","start_ts":11.0,"response_s":0.5}\r\n'
        '{"event":"cursor","seq":5,"ts":12.0}\r\n'
    )
    b = wire.events("vsi-01", out, 3)
    assert b.cursor == 5 and b.sessions[0].state is SessionState.ACTIVE and b.sessions[0].login_s == 31.0
    assert b.operations[0].name == "ie_open" and b.operations[0].response_s == 0.5


def test_cut_short_or_foreign_answers_are_protocol_errors() -> None:
    with pytest.raises(wire.ProtocolError, match="cursor"):
        wire.events(
            "vsi-01", '{"event":"session","seq":1,"session":"s","desktop":"d","state":"active","ts":1}', 0
        )
    with pytest.raises(wire.ProtocolError, match="not JSON"):
        wire.events("vsi-01", "Hello from the launcher", 0)
    with pytest.raises(wire.ProtocolError, match="labctl-launcher/1"):
        wire.hello("vsi-01", '{"event":"hello","protocol":"labctl-launcher/0","clock_ts":1,"seq":0}')


def test_far_side_refuses_a_missing_verb() -> None:
    with pytest.raises(_Usage, match="no verb"):
        parse_args(["powershell", "-File", "x.ps1"])
