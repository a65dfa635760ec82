"""The vendor's EqualLogic MIBs, compiled by pysmi in the test run (to JSON) and looked up by OID.

The MIB sources under ``mibs/`` are verbatim public copies (``tests/conformance/SOURCES.md``).
Nothing here knows an EqualLogic OID: every name, type, index and unit the tests compare comes
out of the compiled MIBs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysmi.codegen import JsonCodeGen
from pysmi.compiler import MibCompiler
from pysmi.parser import SmiStarParser
from pysmi.reader import FileReader
from pysmi.searcher import StubSearcher
from pysmi.writer import FileWriter

MIB_DIR = Path(__file__).parent / "mibs"
MIBS = ("SNMPv2-MIB", "EQLVOLUME-MIB", "EQLDISK-MIB", "EQLMEMBER-MIB", "EQLCONTROLLER-MIB")

# How a MIB words a unit, in its UNITS clause or in the object's DESCRIPTION
UNIT_WORDS = {
    "octets": r"\boctets\b",
    "ms": r"\bmilli ?seconds\b",
    "s": r"(?<!milli )\bseconds\b",
    "Mbytes": r"\bMbytes\b",
    "operations": r"\boperations\b",
    "transfers": r"\btransfers\b",
    "MB": r"\bin MB\b",
    "hundredths of a second": r"\bhundredths of a second\b",
}

# SMI base types -> the BER tag (class, number) they go on the wire with (RFC 2578 / RFC 3416)
WIRE_TAG = {
    "INTEGER": (0, 2),
    "Integer32": (0, 2),
    "OCTET STRING": (0, 4),
    "OBJECT IDENTIFIER": (0, 6),
    "IpAddress": (64, 0),
    "Counter32": (64, 1),
    "Gauge32": (64, 2),
    "Unsigned32": (64, 2),
    "TimeTicks": (64, 3),
    "Opaque": (64, 4),
    "Counter64": (64, 6),
}
# Textual conventions of the stub MIBs pysmi does not compile (SNMPv2-TC), by their base type
STUB_TCS = {
    "DisplayString": "OCTET STRING",
    "TruthValue": "INTEGER",
    "RowStatus": "INTEGER",
    "DateAndTime": "OCTET STRING",
    "RowPointer": "OBJECT IDENTIFIER",
    "TimeStamp": "TimeTicks",
    "AutonomousType": "OBJECT IDENTIFIER",
}


@dataclass(frozen=True)
class MibNode:
    module: str
    name: str
    oid: tuple[int, ...]
    raw: dict[str, Any]

    @property
    def nodetype(self) -> str:
        return str(self.raw.get("nodetype", ""))

    @property
    def units(self) -> str:
        return str(self.raw.get("units", ""))

    @property
    def description(self) -> str:
        return " ".join(str(self.raw.get("description", "")).split())

    def states_unit(self, unit: str) -> bool:
        """The MIB names ``unit`` for this object, in its UNITS clause or its DESCRIPTION."""
        pattern = UNIT_WORDS[unit]
        return bool(re.search(pattern, self.units) or re.search(pattern, self.description))

    @property
    def enumeration(self) -> dict[str, int]:
        return dict((self.raw.get("syntax") or {}).get("constraints", {}).get("enumeration", {}))


def compile_mibs(out: Path) -> dict[str, str]:
    """pysmi: the MIB sources -> one JSON document per module in ``out`` (texts kept: units need them)."""
    compiler = MibCompiler(SmiStarParser(), JsonCodeGen(), FileWriter(str(out)).set_options(suffix=".json"))
    compiler.add_sources(FileReader(str(MIB_DIR)))
    compiler.add_searchers(StubSearcher(*JsonCodeGen.baseMibs))
    results = compiler.compile(*MIBS, genTexts=True, textFilter=lambda symbol, text: text)
    return {k: str(v) for k, v in results.items()}


class Mibs:
    """The compiled modules: OID -> object, a row's INDEX, an object's base type."""

    def __init__(self, compiled: Path):
        self.modules: dict[str, dict[str, Any]] = {
            p.stem: json.loads(p.read_text()) for p in sorted(compiled.glob("*.json"))
        }
        self.by_oid: dict[tuple[int, ...], MibNode] = {}
        for mod, syms in self.modules.items():
            for name, sym in syms.items():
                if (
                    isinstance(sym, dict)
                    and sym.get("oid")
                    and sym.get("class") in ("objecttype", "objectidentity")
                ):
                    oid = tuple(int(x) for x in str(sym["oid"]).split("."))
                    self.by_oid[oid] = MibNode(mod, name, oid, sym)

    def node(self, oid: tuple[int, ...]) -> tuple[MibNode, tuple[int, ...]] | None:
        """The object an instance OID names (the longest defined prefix) and the instance suffix."""
        for n in range(len(oid), 0, -1):
            hit = self.by_oid.get(tuple(oid[:n]))
            if hit is not None:
                return hit, tuple(oid[n:])
        return None

    def symbol(self, module: str, name: str) -> dict[str, Any]:
        return dict(self.modules.get(module, {}).get(name) or {})

    def base_type(self, node: MibNode) -> str:
        """The SMI base type of an object, through textual conventions."""
        syntax = node.raw.get("syntax") or {}
        t, module = str(syntax.get("type", "")), str(syntax.get("module", node.module))
        for _ in range(5):
            if t in WIRE_TAG:
                return t
            if t in STUB_TCS:
                return STUB_TCS[t]
            tc = self.symbol(module, t) or next(
                (m[t] for m in self.modules.values() if isinstance(m.get(t), dict)), {}
            )
            inner = tc.get("type") or {}
            t, module = str(inner.get("type", "")), str(inner.get("module", module))
        raise KeyError(f"{node.module}::{node.name}: no base type for {syntax}")

    def indexes(self, column: MibNode) -> list[MibNode]:
        """The INDEX objects of a column's row (an AUGMENTS row: the row it augments)."""
        row = self.by_oid[column.oid[:-1]].raw
        for _ in range(5):  # a row may augment a row that augments another
            aug = row.get("augmention")
            if not aug:
                break
            row = self.symbol(str(aug["module"]), str(aug["object"]))
        out = []
        for ix in row.get("indices", []):
            sym = self.symbol(str(ix["module"]), str(ix["object"]))
            out.append(
                MibNode(str(ix["module"]), str(ix["object"]), tuple(map(int, sym["oid"].split("."))), sym)
            )
        return out
