"""Figures of the import structure (issue lab-layer): import circles over the whole house, modules of
the lab importing the session, in-function imports in the lab.

    python -m tests.lab.structure [ROOT]      # prints the figures for the tree at ROOT (default: .)

An import circle is a strongly connected component of more than one module in the graph of every
import (module level, inside functions and under TYPE_CHECKING alike, as grimp records them).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grimp


@dataclass(frozen=True)
class FunctionImport:
    module: str
    line: int
    imported: str
    why: str  # the comment on the import's line or the line above ("" when none)


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [
            (root, iter(sorted(graph.find_modules_directly_imported_by(root))))
        ]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    scc.append(m)
                    if m == node:
                        break
                if len(scc) > 1:
                    out.append(sorted(scc))
    return sorted(out)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def function_imports(root: Path, package: str) -> list[FunctionImport]:
    """Imports inside functions (``import``, ``from ... import`` and ``importlib.import_module``)."""
    out: list[FunctionImport] = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                imported = ""
                if isinstance(node, ast.Import):
                    imported = ", ".join(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom):
                    imported = node.module or ""
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "import_module"
                ):
                    imported = "importlib.import_module(...)"
                if imported:
                    here = lines[node.lineno - 1]
                    above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                    why = (
                        here.split("#", 1)[1].strip()
                        if "#" in here
                        else (above[1:].strip() if above.startswith("#") else "")
                    )
                    out.append(FunctionImport(_module_name(root, path), node.lineno, imported, why))
    return sorted(set(out), key=lambda f: (f.module, f.line))


def importers_of(graph: grimp.ImportGraph, module: str, within: str) -> list[str]:
    return sorted(m for m in graph.find_modules_that_directly_import(module) if m.startswith(within + "."))


def build(root: Path) -> grimp.ImportGraph:
    sys.path.insert(0, str(root))
    return grimp.build_graph("labctl", cache_dir=None)


def report(root: Path) -> Iterable[str]:
    graph = build(root)
    found = circles(graph)
    yield f"import circles: {len(found)}"
    for c in found:
        yield f"  {len(c)} modules: {', '.join(c)}"
    users = importers_of(graph, "labctl.lab.session", "labctl.lab")
    yield f"modules in labctl/lab importing labctl.lab.session: {len(users)}"
    fi = function_imports(root, "labctl.lab")
    yield f"in-function imports in labctl/lab: {len(fi)}"
    for f in fi:
        yield f"  {f.module}:{f.line} {f.imported}  # {f.why or '(no reason given)'}"


if __name__ == "__main__":
    for line in report(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()):
        print(line)
