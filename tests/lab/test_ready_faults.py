"""wait_ready when endpoints fail: every machine still gets its own outcome."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from labctl.inventory import load_lab
from labctl.lab.session import LabSession
from tests.lab.conftest import FAST, start_lab

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    faults = "- {kind: bmc_hang, targets: [infra-01]}\n- {kind: ssh_refuse_auth, targets: [pvs-01]}"
    with pytest.MonkeyPatch.context() as mp:
        sim = start_lab(tmp_path_factory.mktemp("faulty"), mp, clients=3, faults=faults, name="faulty")
        try:
            yield sim
        finally:
            sim.stop()


def test_hung_bmc_is_an_error_for_that_server_only(faulty) -> None:
    with LabSession(load_lab(faulty.lab_file), faulty.clock, settings=FAST) as s:
        t0 = time.monotonic()
        ready = s.wait_ready("servers", timeout_s=60)  # 1 s of wall time at 60x
        took = time.monotonic() - t0
        assert ready["infra-01"].state == "error"
        assert (
            "infra-01 BMC" in ready["infra-01"].detail
            and "no answer within 1.5 s" in ready["infra-01"].detail
        )
        # pvs-01's BMC answers, but its OS refuses our SSH credentials: an error naming them
        assert ready["pvs-01"].state == "error" and "authentication failed" in ready["pvs-01"].detail
        assert took < 10
        states = s.power.state("servers")
        assert states["infra-01"].state.value == "unknown" and "no answer" in states["infra-01"].detail
        assert states["pvs-01"].state.value == "on"


def test_clients_fall_back_to_ssh_and_name_the_streaming_server_that_cannot_be_read(faulty) -> None:
    """pvs-01 refuses our login: every client that booted is ready (it answers over SSH), and its
    missing boot time is pvs-01's failure, named on each outcome, not the client's."""
    with LabSession(load_lab(faulty.lab_file), faulty.clock, settings=FAST) as s:
        assert s.power.on("clients").ok
        ready = s.wait_ready("clients", timeout_s=120)
        assert all(r.ready for r in ready.values()), ready
        assert all(r.boot_time_s is None for r in ready.values())  # only PVS knows boot times
        assert {r.failed_endpoint for r in ready.values()} == {"pvs-01"}
        for r in ready.values():
            assert r.detail.startswith("answers over SSH; streaming server pvs-01 could not be read: ")
            assert "authentication failed" in r.detail
        s.power.off("clients")


@pytest.fixture(scope="module")
def client_refuses_ssh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    faults = "- {kind: ssh_refuse_auth, targets: [optiplex-002]}"
    with pytest.MonkeyPatch.context() as mp:
        sim = start_lab(tmp_path_factory.mktemp("nossh"), mp, clients=3, faults=faults, name="nossh")
        try:
            yield sim
        finally:
            sim.stop()


def test_answering_counts_a_booted_client_only_once_it_answers_over_ssh(client_refuses_ssh) -> None:
    """The streaming server shows all three booted; a cell that commands clients over SSH next
    asks for ``answering``, and optiplex-002 (whose SSH refuses us) is then not ready, by name."""
    sim = client_refuses_ssh
    with LabSession(load_lab(sim.lab_file), sim.clock, settings=FAST) as s:
        assert s.power.on("clients").ok
        booted = s.wait_ready("clients", timeout_s=120)
        assert all(r.ready and r.boot_time_s is not None for r in booted.values()), booted
        answering = s.wait_ready("clients", timeout_s=60, answering=True)
        assert not answering["optiplex-002"].ready
        assert "authentication failed" in answering["optiplex-002"].detail
        for name in ("optiplex-001", "optiplex-003"):
            r = answering[name]
            assert r.ready and r.boot_time_s is not None and r.detail.endswith("answers over SSH"), r
        s.power.off(["optiplex-001", "optiplex-003"])
