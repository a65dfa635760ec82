"""EndpointPoller: every endpoint read at once, each against its own deadline, failures named."""

from __future__ import annotations

import threading
import time

from labctl.errors import EndpointError
from labctl.lab.polling import EndpointPoller


def test_a_hung_and_a_failing_endpoint_never_cost_the_healthy_one_a_sample() -> None:
    release = threading.Event()
    reads: dict[str, int] = {"ok": 0, "hung": 0, "bad": 0}

    def read(ep: str) -> str:
        reads[ep] += 1
        if ep == "hung":
            release.wait(30)
            return "late"
        if ep == "bad":
            raise EndpointError("bad", "read power", "HTTP 503 Service Unavailable")
        return f"sample {reads[ep]}"

    poller = EndpointPoller(["ok", "hung", "bad"], read, deadline_wall_s=0.2, deadline_text="12 lab s")
    try:
        got: list[str] = []
        errors: list[dict[str, str]] = []
        for _ in range(10):
            results, errs = poller.poll()
            got += [results["ok"]] if "ok" in results else []
            errors.append(errs)
        # the healthy endpoint answered at every poll, the others are named at every poll
        assert got == [f"sample {i}" for i in range(1, 11)]
        assert all(set(e) == {"hung", "bad"} for e in errors)
        assert errors[-1]["bad"] == "bad: read power: HTTP 503 Service Unavailable"
        assert errors[-1]["hung"] == "hung: no answer within 12 lab s (the read is still running)"
        assert reads["hung"] == 1  # a hung endpoint is not asked again while its read runs
        release.set()
        for _ in range(500):  # the late answer arrives with a later poll
            results, errs = poller.poll()
            if "hung" in results:
                break
            time.sleep(0.01)
        assert results["hung"] == "late" and "hung" not in errs
    finally:
        release.set()
        poller.close()


def test_an_error_that_is_not_an_endpoint_error_still_names_the_endpoint() -> None:
    def read(ep: str) -> str:
        raise ValueError("the body is not JSON")

    poller = EndpointPoller(["pvs-02"], read, deadline_wall_s=5)
    try:
        assert poller.poll() == ({}, {"pvs-02": "pvs-02: ValueError: the body is not JSON"})
    finally:
        poller.close()


def test_a_failed_endpoint_stays_failed_until_it_answers() -> None:
    """A BMC refusing connections fails each read quickly; between two failures its next read is
    under way: every poll still names it (it never looks recovered) until a read succeeds."""
    up = threading.Event()

    def read(ep: str) -> str:
        if not up.is_set():
            raise EndpointError(ep, "read power", "connection refused")
        return "watts"

    poller = EndpointPoller(["bmc"], read, deadline_wall_s=5)
    try:
        polls = [poller.poll() for _ in range(20)]
        assert all(errors == {"bmc": "bmc: read power: connection refused"} for _, errors in polls)
        up.set()
        for _ in range(500):  # until a read that started after the endpoint came back answers
            results, errors = poller.poll()
            if results:
                break
            time.sleep(0.01)
        assert results == {"bmc": "watts"} and errors == {}
    finally:
        poller.close()
