"""A reboot the polls never caught is still seen: the streaming server reports a new boot time."""

from __future__ import annotations

from types import SimpleNamespace

from labctl.clock import LabClock
from labctl.inventory.load import load_lab
from labctl.lab.events import Timeline
from labctl.lab.ready import _Tracker


def test_a_new_boot_time_counts_as_a_reboot() -> None:
    clock = LabClock()
    ctx = SimpleNamespace(clock=clock, timeline=Timeline(clock), state_changed=lambda *a, **k: None)
    m = load_lab().clients[0]
    t = _Tracker(ctx, None, [m], expect_boot=True)  # type: ignore[arg-type]
    t.note_session(m, 41.0)
    assert not t.up(m, boot_time_s=41.0)  # still the boot from before the reboot
    t.note_session(m, 41.0)
    assert not t.up(m, boot_time_s=41.0)
    t.note_session(m, 47.5)  # the streaming server measured another boot
    assert t.up(m, boot_time_s=47.5)
    assert t.ready[m.name].boot_time_s == 47.5
