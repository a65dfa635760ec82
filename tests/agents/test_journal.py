"""The agent's journal: what makes an order delivered twice (at once, or after a restart) execute
once."""

from __future__ import annotations

import threading
from pathlib import Path

from labctl.agents.journal import Journal
from labctl.drivers.hub.protocol import MachineResult, OrderDone


def test_of_many_deliveries_at_once_exactly_one_begins_the_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    began: list[bool] = []
    barrier = threading.Barrier(8)

    def deliver() -> None:
        barrier.wait()
        began.append(journal.begin("run/cell/00001-power-on") is None)

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(began) == [False] * 7 + [True]


def test_after_a_restart_a_started_order_is_known_with_what_it_reported(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    assert j.begin("o1") is None and j.begin("o2") is None
    j.result(MachineResult(order="o1", agent="a", machine="m1", kind="client", ok=True, sent_wall=1.0))
    j.finish(OrderDone(order="o2", agent="a", received_wall=2.0, machines=0))
    j.close()
    with path.open("a") as f:
        f.write('{"op": "result", "order": "o1", "res')  # the agent died while writing a line
    again = Journal(path)
    o1, o2 = again.begin("o1"), again.begin("o2")
    assert o1 is not None and o1.state == "started" and set(o1.results) == {"m1"}
    assert o2 is not None and o2.state == "done" and o2.done is not None
    assert again.begin("o3") is None
    again.finish(OrderDone(order="o1", agent="a", received_wall=3.0, status="interrupted"))
    again.close()
    assert Journal(path).get("o1").state == "done"  # type: ignore[union-attr]  # written after the torn line
