"""Selectors: which machines a target names (a machine, a group, a range, or a comma list)."""

from __future__ import annotations

from labctl.errors import UnknownTargetError
from labctl.inventory.model import Lab, Machine
from labctl.inventory.ranges import RangeError, expand_names, is_name_range


def split_selector(selector: str) -> list[str]:
    """``"pvs-01, optiplex-[001-003]"`` -> parts; commas inside brackets do not split."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]


def resolve(lab: Lab, selector: str | list[str] | tuple[str, ...]) -> list[Machine]:
    """Machines named by ``selector``, in inventory order within each part, without duplicates.

    A part is a group name, a machine name, or a range like ``optiplex-[001-010]``; every name
    must exist in this configuration of the lab (else :class:`UnknownTargetError` with a hint).
    """
    parts = (
        split_selector(selector)
        if isinstance(selector, str)
        else [p for s in selector for p in split_selector(s)]
    )
    if not parts:
        raise UnknownTargetError(str(selector) or "(empty)", lab)
    seen: dict[str, Machine] = {}
    for part in parts:
        if part in lab.groups:
            names = list(lab.groups[part].members)
        elif part in lab.machines:
            names = [part]
        elif is_name_range(part):
            try:
                names = expand_names(part)
            except RangeError as exc:
                raise UnknownTargetError(part, lab) from exc
            for n in names:
                if n not in lab.machines:
                    raise UnknownTargetError(n, lab)
        else:
            raise UnknownTargetError(part, lab)
        for n in names:
            if n in lab.machines:
                seen.setdefault(n, lab.machines[n])
    return list(seen.values())


Selector = str | list[str] | tuple[str, ...]


def resolve_machines(lab: Lab, selector: Selector | list[Machine]) -> list[Machine]:
    """``selector``'s machines, or the list of machines itself when it is one already."""
    if isinstance(selector, list) and selector and isinstance(selector[0], Machine):
        return [m for m in selector if isinstance(m, Machine)]
    return resolve(lab, selector)  # type: ignore[arg-type]
