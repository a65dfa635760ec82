"""How much of an inventory file labctl is willing to read: the file is checked against these
bounds before it is trusted with memory, so a hostile or broken file is one line of error, never
a ``MemoryError`` or ``RecursionError`` (a YAML alias bomb grew labctl to 2.8 GB).

- size: at most ``MAX_FILE_BYTES`` (read no further);
- encoding: UTF-8 (a byte-order mark is allowed), so names never carry replacement characters;
- nesting: at most ``MAX_DEPTH`` levels of mappings and lists (a lab file nests about 8 deep);
- aliases: the document expanded (every ``*alias`` counted as a copy of its anchor, which is what
  validating it makes of it) holds at most ``MAX_NODES`` items;
- machines: the clients, servers and VMs its ranges stand for are at most ``MAX_MACHINES``,
  counted from the range bounds before anything is expanded.

Depth and size are measured on the YAML event stream (no recursion, no objects built), aliases on
the composed node graph (each node once).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

MAX_FILE_BYTES = 16 * 2**20  # 20,000 machines written out one per line is about 6 MB
MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_MACHINES = 20_000  # the twin's largest modelled lab is 3,000 clients; VDI pools a few thousand VMs

_RANGE = re.compile(r"\[(\d+)-(\d+)\]")


@dataclass(frozen=True)
class Exceeded:
    """A bound the file breaks: where (1-based line, None for the whole file), what, the fix."""

    line: int | None
    message: str
    fix: str


def decode(raw: bytes) -> str | Exceeded:
    """UTF-8 text (without a leading byte-order mark), or the line of the first undecodable byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Exceeded(
            line,
            f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            "save it as UTF-8",
        )


def check_events(text: str, loader: Any) -> Exceeded | None:
    """Nesting depth and item count on the event stream; None when within bounds.

    YAML errors are left for the composer to report with its own words."""
    depth = 0
    items = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return Exceeded(
                        _line(event),
                        f"nested more than {MAX_DEPTH} levels deep",
                        "an inventory nests a few levels, servers > hardware > volumes; check the brackets",
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if isinstance(event, yaml.NodeEvent):
                items += 1
                if items > MAX_NODES:
                    return Exceeded(
                        _line(event),
                        f"more than {MAX_NODES} YAML items",
                        "describe machines with ranges such as name: pc-[001-500] instead of one entry each",
                    )
    except yaml.YAMLError:
        return None
    return None


def _line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark is not None else None


def check_aliases(node: yaml.Node, max_nodes: int = MAX_NODES) -> Exceeded | None:
    """The document's size with every alias expanded, counted once per node (memoised)."""
    sizes: dict[int, int] = {}
    for n in _post_order(node):
        if isinstance(n, yaml.MappingNode):
            size = 1 + sum(sizes.get(id(k), 1) + sizes.get(id(v), 1) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            size = 1 + sum(sizes.get(id(v), 1) for v in n.value)
        else:
            size = 1
        sizes[id(n)] = size
        if size > max_nodes:
            return Exceeded(
                n.start_mark.line + 1 if n.start_mark is not None else None,
                f"YAML aliases here expand to more than {max_nodes} items (an alias bomb?)",
                "write the items out, or use fewer *aliases of anchors that hold aliases",
            )
    return None


def _post_order(root: yaml.Node) -> Iterator[yaml.Node]:
    """Every node once, children before parents, without recursion; a node that contains itself
    (``&a [*a]``) is yielded once, its cycle counted as a leaf."""
    done: set[int] = set()
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        if expanded:
            on_path.discard(id(n))
            done.add(id(n))
            yield n
            continue
        if id(n) in on_path:
            continue
        on_path.add(id(n))
        stack.append((n, True))
        for child in _children(n):
            if id(child) not in done and id(child) not in on_path:
                stack.append((child, False))


def _children(n: yaml.Node) -> list[yaml.Node]:
    if isinstance(n, yaml.MappingNode):
        return [x for kv in n.value for x in kv]
    if isinstance(n, yaml.SequenceNode):
        return list(n.value)
    return []


def machines_declared(data: dict[str, Any]) -> int:
    """How many machines the clients, servers, VMs and VDI desktop pools stand for, from range
    bounds alone."""
    total = 0
    for section in ("clients", "servers", "vms"):
        items = data.get(section)
        if not isinstance(items, list):
            continue
        for item in items:
            name = item.get("name") if isinstance(item, dict) else None
            total += _range_size(name) if isinstance(name, str) else 1
    vdi = data.get("vdi")
    pools = vdi.get("pools") if isinstance(vdi, dict) else None
    for pool in pools if isinstance(pools, list) else []:
        desktops = pool.get("desktops") if isinstance(pool, dict) else None
        total += _range_size(desktops) if isinstance(desktops, str) else 0
    return total


def check_machines(data: dict[str, Any]) -> Exceeded | None:
    n = machines_declared(data)
    if n > MAX_MACHINES:
        return Exceeded(
            None,
            f"the ranges declare {n} machines, more than the {MAX_MACHINES} labctl handles",
            "check the bounds of the name ranges, e.g. name: pc-[001-500]",
        )
    return None


def _range_size(name: str) -> int:
    m = _RANGE.search(name)
    if m is None:
        return 1
    return max(1, int(m[2]) - int(m[1]) + 1)
