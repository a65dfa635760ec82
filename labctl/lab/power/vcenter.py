"""VMs: vCenter tasks, one batch per vCenter (power on is one PowerOnMultiVM per datacenter).

Arming logs in and finds the VMs; firing starts every vCenter's batch at once. Sent = when the
task started (vCenter's TaskInfo.startTime, else the call); delivered = when the task finished
(the VM's power state changed), or None for a guest operation (RebootGuest is a call, not a task).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import ClassVar

from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.vsphere import VCenterClient
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext, by_vcenter
from labctl.lab.power.backend import Gate, Report, in_pool, outcome, together
from labctl.lab.power.model import STATE_OF_READING, MachineState, State

# the task each verb starts, as an operator reads it in vCenter's task list
TASK_WORDS = {
    PowerVerb.ON: "power-on",
    PowerVerb.GRACEFUL_OFF: "power-off",
    PowerVerb.FORCE_OFF: "power-off",
    PowerVerb.RESET: "reset",
    PowerVerb.REBOOT: "guest reboot",
}


def task_failure(verb: PowerVerb, state: str, error: str | None) -> str:
    """``power-on task failed: GenericVmConfigFault: <vCenter's words>``: the failed task's own
    error (the driver keeps ``info.error``'s message and fault type), so a desktop that stays off
    is named with why vCenter refused it rather than only its power state at a deadline."""
    task = TASK_WORDS.get(verb, str(verb))
    why = error or "vCenter gave no error"
    if state == "error":
        return f"{task} task failed: {why}"
    if state == "timeout":
        return f"{task} task did not end: {why}"
    if state == "not_attempted":
        return f"{task} not attempted by vCenter: {why}"
    return f"{task} not sent: {why}"  # dispatch_error: the call itself failed


class VCenterBackend:
    kind: ClassVar[PowerKind] = PowerKind.VCENTER

    def __init__(self, ctx: LabContext):
        self.ctx = ctx

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        clock = self.ctx.clock
        armed: list[tuple[VCenterClient, list[Machine]]] = []
        lock = threading.Lock()

        def arm(item: tuple[str, list[Machine]]) -> None:
            vc_name, ms = item
            try:
                vc = self.ctx.vcenter(vc_name)
                vc.vm_refs([m.name for m in ms])  # the inventory read now, not at the burst
            except EndpointError as exc:
                for m in ms:
                    report(outcome(clock, self.kind, m, False, exc.reason, exc.fix))
                return
            with lock:
                armed.append((vc, ms))

        groups = list(by_vcenter(machines).items())
        try:
            in_pool(arm, groups, max(1, len(groups)), "vcenter-arm")
        except BaseException:
            gate.leave(self.kind.value)  # arming crashed: do not hold the other backends
            raise
        gate.pass_(self.kind.value)

        def fire(item: tuple[VCenterClient, list[Machine]]) -> None:
            vc, ms = item
            try:
                result = vc.act(verb, [m.name for m in ms])
            except EndpointError as exc:
                for m in ms:
                    report(outcome(clock, self.kind, m, False, exc.reason, exc.fix))
                return
            for m in ms:
                o = result.outcomes.get(m.name)
                if o is None:
                    report(outcome(clock, self.kind, m, False, "vCenter reported nothing for it"))
                elif o.ok:
                    started = o.started_wall or result.dispatch_first_wall
                    detail = "task succeeded" if o.finished_wall else "sent"
                    report(
                        outcome(
                            clock,
                            self.kind,
                            m,
                            True,
                            detail,
                            sent_wall=started,
                            delivered_wall=o.finished_wall,
                        )
                    )
                else:
                    report(outcome(clock, self.kind, m, False, task_failure(verb, o.state, o.error)))

        together(fire, armed, "vcenter")

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        out: dict[str, MachineState] = {}
        for vc_name, ms in by_vcenter(machines).items():
            try:
                inv = self.ctx.vcenter(vc_name).inventory()
            except EndpointError as exc:
                for m in ms:
                    out[m.name] = MachineState(m.name, m.kind.value, State.UNKNOWN, str(exc), "vcenter")
                continue
            for m in ms:
                info = inv.get(m.name)
                if info is None:
                    why = self.ctx.vcenter(vc_name).why_missing(m.name)
                    out[m.name] = MachineState(
                        m.name, m.kind.value, State.UNKNOWN, f"{vc_name}: {why}", "vcenter"
                    )
                    continue
                st = STATE_OF_READING[info.reading]
                if info.connection_state != "connected":
                    detail = f"{info.connection_state} (last known: {info.power_state})"
                    out[m.name] = MachineState(m.name, m.kind.value, st, detail, "vcenter")
                    continue
                if st is State.ON and not info.tools_running:
                    detail = "powered on, guest tools not running"
                else:
                    detail = info.power_state + (f", ip {info.ip}" if info.ip else "")
                out[m.name] = MachineState(m.name, m.kind.value, st, detail, "vcenter")
        return out
