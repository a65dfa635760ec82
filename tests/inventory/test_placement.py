"""lab.loopback_block: a simulated lab moved onto a loopback block of its own at load time."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.errors import InventoryError
from labctl.inventory import load_lab
from labctl.inventory.load import default_lab_file
from labctl.inventory.placement import AUTO_BLOCKS, PLACEMENTS_DIR_VAR

BASE = default_lab_file().read_text()


@pytest.fixture(autouse=True)
def claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "claims"
    monkeypatch.setenv(PLACEMENTS_DIR_VAR, str(folder))
    return folder


def lab_file(tmp_path: Path, setting: str, name: str = "my.yaml", text: str = BASE) -> Path:
    path = tmp_path / name
    path.write_text(text.replace("  seed: 2007\n", f"  seed: 2007\n  loopback_block: {setting}\n"))
    return path


def test_every_address_moves_consistently_onto_the_block(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path, "57"), every_machine=True)
    assert lab.loopback_block == 57
    net = lab.networks["lab-net"]
    assert (net.subnet, net.broadcast) == ("127.57.0.0/16", "127.57.255.255")
    assert lab.machines["pvs-01"].ip == "127.57.0.11"
    assert [lab.machines[f"optiplex-{i:03d}"].ip for i in (1, 100)] == ["127.57.1.1", "127.57.1.100"]
    # the other prefixes (BMCs 127.21.0, vCenter 127.22.0, array 127.23.0) get rows of their own
    bmc_rows = {lab.machines[n].bmc.url.split(".")[2] for n in ("pvs-01", "pvs-02", "nas-01", "infra-01")}  # type: ignore[union-attr]
    vc_row = lab.vcenters["vc-01"].url.split(".")[2]
    array_row = lab.storage["unity-01"].url.split(".")[2]
    assert len(bmc_rows) == 1 and len({*bmc_rows, vc_row, array_row}) == 3
    assert {*bmc_rows, vc_row, array_row} <= {"252", "253", "254"}
    assert lab.machines["pvs-01"].bmc.url == f"https://127.57.{bmc_rows.pop()}.11:8443"  # type: ignore[union-attr]
    every_ip = [m.ip for m in lab.machines.values() if m.ip]
    assert len(every_ip) == len(set(every_ip)) and all(ip.startswith("127.57.") for ip in every_ip)


def test_auto_keeps_a_file_on_its_block_and_gives_another_file_another(tmp_path: Path, claims: Path) -> None:
    mine = lab_file(tmp_path, "auto")
    first = load_lab(mine).loopback_block
    assert first in AUTO_BLOCKS and load_lab(mine).loopback_block == first  # remembered
    other = lab_file(tmp_path, "auto", name="other.yaml")
    second = load_lab(other).loopback_block
    assert second in AUTO_BLOCKS and second != first
    other.unlink()  # its claim is stale now: the next file may have the block
    third = load_lab(lab_file(tmp_path, "auto", name="third.yaml")).loopback_block
    assert third == second
    assert load_lab(mine).loopback_block == first


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (BASE.replace("simulated: true", "simulated: false"), "this lab is not simulated"),
        (BASE, "loopback_block 0 is not a block"),
        (BASE.replace("subnet: 127.20.0.0/16", "subnet: 127.0.0.0/8"), "wider than one block"),
    ],
    ids=["real lab", "block 0", "a /8 network"],
)
def test_what_cannot_be_placed_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    setting = "0" if says.startswith("loopback_block 0") else "auto"
    with pytest.raises(InventoryError) as exc:
        load_lab(lab_file(tmp_path, setting, text=text))
    assert len(exc.value.problems) == 1 and says in str(exc.value.problems[0])
