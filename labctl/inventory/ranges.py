"""Compact ranges: ``optiplex-[001-100]``, ``00:1a:a0:00:00:01..00:1a:a0:00:00:64``, ``10.0.0.1..10.0.0.100``."""

from __future__ import annotations

import ipaddress
import re

_NAME_RANGE = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<lo>\d+)-(?P<hi>\d+)\](?P<suffix>[^\[\]]*)$")
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
# More boxes than any lab racks: a range beyond this is a typo in its bounds, and expanding it
# (one Machine per name) would take minutes and gigabytes before saying so.
MAX_RANGE = 100_000


class RangeError(ValueError):
    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.fix = fix


def is_name_range(name: str) -> bool:
    return "[" in name or "]" in name


def expand_names(name: str) -> list[str]:
    """``optiplex-[001-003]`` -> optiplex-001, optiplex-002, optiplex-003 (width from the first bound)."""
    if not is_name_range(name):
        return [name]
    m = _NAME_RANGE.match(name)
    if not m:
        raise RangeError(
            f"malformed name range {name!r}", "write it as prefix-[001-100] with one bracketed range"
        )
    lo, hi = int(m["lo"]), int(m["hi"])
    if hi < lo:
        raise RangeError(f"name range {name!r} runs backwards", f"write [{m['hi']}-{m['lo']}]")
    if hi - lo + 1 > MAX_RANGE:
        raise RangeError(
            f"name range {name!r} stands for {hi - lo + 1} machines",
            f"a range may hold at most {MAX_RANGE}; check its bounds",
        )
    width = len(m["lo"])
    return [f"{m['prefix']}{i:0{width}d}{m['suffix']}" for i in range(lo, hi + 1)]


def normalise_mac(mac: str) -> str:
    if not _MAC.match(mac):
        raise RangeError(f"malformed MAC address {mac!r}", "write six hex pairs, e.g. 00:1a:a0:00:00:01")
    return mac.replace("-", ":").lower()


def _mac_int(mac: str) -> int:
    return int(normalise_mac(mac).replace(":", ""), 16)


def _int_mac(value: int) -> str:
    raw = f"{value:012x}"
    return ":".join(raw[i : i + 2] for i in range(0, 12, 2))


def expand_macs(spec: str, count: int) -> list[str]:
    """One MAC incremented ``count`` times, or ``first..last`` which must hold exactly ``count``."""
    if ".." in spec:
        first, last = (s.strip() for s in spec.split("..", 1))
        lo, hi = _mac_int(first), _mac_int(last)
        n = hi - lo + 1
        if n != count:
            raise RangeError(
                f"MAC range {spec!r} holds {max(n, 0)} addresses but the name range has {count} machines",
                f"make the range end at {_int_mac(lo + count - 1)}",
            )
        return [_int_mac(v) for v in range(lo, hi + 1)]
    lo = _mac_int(spec)
    if lo + count - 1 > 0xFFFFFFFFFFFF:
        raise RangeError(f"MAC range from {spec!r} overflows", "start lower")
    return [_int_mac(lo + i) for i in range(count)]


def _ip(value: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(value.strip())
    except ValueError:
        raise RangeError(
            f"malformed IPv4 address {value!r}", "write four dotted numbers, e.g. 10.0.0.1"
        ) from None


def expand_ips(spec: str, count: int) -> list[str]:
    """One IPv4 incremented ``count`` times, or ``first..last`` which must hold exactly ``count``."""
    if ".." in spec:
        first, last = spec.split("..", 1)
        lo, hi = _ip(first), _ip(last)
        n = int(hi) - int(lo) + 1
        if n != count:
            raise RangeError(
                f"IP range {spec!r} holds {max(n, 0)} addresses but the name range has {count} machines",
                f"make the range end at {ipaddress.IPv4Address(int(lo) + count - 1)}",
            )
        return [str(ipaddress.IPv4Address(v)) for v in range(int(lo), int(hi) + 1)]
    lo = _ip(spec)
    if int(lo) + count - 1 > 0xFFFFFFFF:
        raise RangeError(
            f"IP range from {spec!r} for {count} machines runs past 255.255.255.255", "start lower"
        )
    return [str(ipaddress.IPv4Address(int(lo) + i)) for i in range(count)]


def compact_names(names: list[str]) -> str:
    """The inverse of :func:`expand_names` for display: ``optiplex-[001-100]`` where it can."""
    if not names:
        return ""
    runs: list[str] = []
    pat = re.compile(r"^(.*?)(\d+)$")
    i = 0
    while i < len(names):
        m = pat.match(names[i])
        j = i
        if m:
            prefix, num = m[1], m[2]
            while j + 1 < len(names):
                n = pat.match(names[j + 1])
                if not (
                    n and n[1] == prefix and len(n[2]) == len(num) and int(n[2]) == int(num) + (j + 1 - i)
                ):
                    break
                j += 1
            if j > i:
                last = pat.match(names[j])
                assert last
                runs.append(f"{prefix}[{num}-{last[2]}]")
                i = j + 1
                continue
        runs.append(names[i])
        i += 1
    return ", ".join(runs)
