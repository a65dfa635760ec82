"""The lab wing's structure (issue lab-layer), measured on the import graph: the context at the
bottom, services over it, the session a façade nobody in the lab imports, and no import circle
through the lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.structure import build, circles, function_imports, importers_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph():
    return build(ROOT)


def test_at_most_two_import_circles_in_the_house_and_none_through_the_lab(graph) -> None:
    found = circles(graph)
    assert len(found) <= 2, found
    assert not [c for c in found if any(m.startswith(("labctl.lab.", "labctl.agents.")) for m in c)], found


def test_no_module_of_the_lab_imports_the_session(graph) -> None:
    assert importers_of(graph, "labctl.lab.session", "labctl.lab") == []


def test_the_lab_never_imports_the_agent_process(graph) -> None:
    lab = {m for m in graph.modules if m.startswith("labctl.lab")}
    assert not [
        (m, imported)
        for m in lab
        for imported in graph.find_modules_directly_imported_by(m)
        if imported.startswith("labctl.agents")
    ]


def test_at_most_two_in_function_imports_in_the_lab_each_saying_why() -> None:
    found = function_imports(ROOT, "labctl.lab")
    assert len(found) <= 2, found
    assert all(f.why.startswith("imported here:") for f in found), found
