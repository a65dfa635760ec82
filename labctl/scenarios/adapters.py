"""ADAPTER (remove when branch power-backends is merged): the per-machine send times and the
group actions of a power burst, read from the new ``PowerReport`` API of ENGINE.md when it is
there (``sent_lab``, ``group_actions()``), else derived from today's report (send spread only;
the delivery spread is not observable through it)."""

from __future__ import annotations

from typing import Any

from labctl.records.run_record import GroupAction

# today's PowerOutcome.kind -> the backend that carried the action (GroupAction.backend)
_BACKEND = {"client": "wol-ssh", "server": "redfish", "vm": "vcenter"}


def sent_times(report: Any) -> dict[str, float | None]:
    """Machine -> lab time its power action was sent (None when it was not)."""
    if report is None:
        return {}
    return {
        n: getattr(o, "sent_lab", None) if hasattr(o, "sent_lab") else getattr(o, "dispatched_lab", None)
        for n, o in report.outcomes.items()
    }


def group_actions(report: Any) -> list[GroupAction]:
    """The bursts of one power report, one per backend."""
    if report is None:
        return []
    native = getattr(report, "group_actions", None)
    if callable(native):
        return list(native())
    by_backend: dict[str, list[Any]] = {}
    for o in report.outcomes.values():
        by_backend.setdefault(_BACKEND.get(o.kind, o.kind), []).append(o)
    out = []
    scale = report.spread_lab_s / report.spread_wall_s if report.spread_wall_s else 0.0
    for backend, outcomes in sorted(by_backend.items()):
        sent = [o.dispatched_lab for o in outcomes if o.ok and o.dispatched_lab is not None]
        spread_lab = (max(sent) - min(sent)) if len(sent) > 1 else 0.0
        out.append(
            GroupAction(
                action=report.action,
                backend=backend,
                machines=len(outcomes),
                ok=sum(1 for o in outcomes if o.ok),
                failed={o.machine: o.detail for o in outcomes if not o.ok},
                first_sent_ts_s=min(sent) if sent else None,
                send_spread_s=spread_lab,
                send_spread_wall_s=spread_lab / scale if scale else 0.0,
                delivery_spread_s=None,
            )
        )
    return out
