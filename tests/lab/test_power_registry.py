"""Backends are chosen by the inventory's ``power:`` setting or the machine's kind, from one
registry; a name nobody registered is refused when the inventory loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.errors import InventoryError
from labctl.inventory import load_lab
from labctl.inventory.model import MachineKind, PowerKind
from labctl.lab.power.backend import Gate
from labctl.lab.power.registry import BACKENDS, by_backend
from tests.labfiles import make_test_lab


def test_every_power_kind_has_exactly_one_backend_module() -> None:
    assert set(BACKENDS) == set(PowerKind)
    for kind, cls in BACKENDS.items():
        assert cls.kind is kind
        assert cls.__module__.startswith("labctl.lab.power.")
    assert len({cls.__module__ for cls in BACKENDS.values()}) == len(BACKENDS)


def test_default_backend_by_kind_and_override(tmp_path: Path) -> None:
    lab = load_lab(make_test_lab(tmp_path, clients=2))
    groups = by_backend(lab.machines.values())
    assert {m.kind for m in groups[PowerKind.WOL_SSH]} == {MachineKind.CLIENT}
    assert {m.kind for m in groups[PowerKind.REDFISH]} == {MachineKind.SERVER}
    assert {m.kind for m in groups[PowerKind.VCENTER]} == {MachineKind.VM}
    from tests.drivers.power_labs import ipmi_lab_file

    lab = load_lab(ipmi_lab_file(tmp_path, name="ipmi.yaml"))
    assert lab.machine("infra-01").power_kind is PowerKind.IPMI
    assert lab.machine("pvs-01").power_kind is PowerKind.REDFISH
    assert [m.name for m in by_backend(lab.machines.values())[PowerKind.IPMI]] == ["infra-01"]


def _with_infra_line(tmp_path: Path, line: str, name: str) -> Path:
    path = make_test_lab(tmp_path, clients=2, name=name)
    text = path.read_text()
    anchor = "  - name: infra-01          # AD / DHCP / DNS, and the file share the copy tests use\n"
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + f"    {line}\n"))
    return path


def test_an_unknown_power_backend_is_refused_at_load_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as ei:
        load_lab(_with_infra_line(tmp_path, "power: pdu", "pdu.yaml"))
    (problem,) = ei.value.problems
    text = str(problem)
    assert "\n" not in text
    assert "servers[3].power: unknown power backend 'pdu'" in text
    assert "use one of: wol-ssh, redfish, vcenter, ipmi" in text and "labctl/lab/power/" in text


def test_a_backend_without_its_endpoint_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as ei:
        load_lab(_with_infra_line(tmp_path, "power: ipmi", "noipmi.yaml"))
    (problem,) = ei.value.problems
    assert "power: ipmi needs the machine's ipmi: endpoint" in str(problem)
    assert "add ipmi: {host: ..., user: ..., password: ...}" in str(problem)


def test_a_gate_lets_the_others_go_when_one_backend_leaves() -> None:
    import threading

    gate = Gate(3)
    passed: list[str] = []

    def arm_then_fire(name: str) -> None:
        gate.pass_(name)
        passed.append(name)

    threads = [threading.Thread(target=arm_then_fire, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    threads[0].join(0.2)
    assert passed == []  # a and b wait for the third
    gate.leave("c")  # the third crashed while arming
    for t in threads:
        t.join(5)
    assert sorted(passed) == ["a", "b"]


def test_the_storage_base_module_imports_no_driver() -> None:
    """base <-> unity was an import cycle; the registry imports both, neither imports it."""
    import ast

    import labctl.drivers.storage.base as base
    import labctl.drivers.storage.unity as unity

    def imported(module: object) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        return names

    assert not {n for n in imported(base) if n.startswith("labctl.drivers.storage")}
    assert "labctl.drivers.storage.registry" not in imported(unity)


def test_every_storage_kind_has_a_driver() -> None:
    from labctl.drivers.storage.registry import DRIVERS
    from labctl.inventory.model import StorageKind

    assert set(DRIVERS) == set(StorageKind)
