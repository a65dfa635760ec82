"""TwinParameters: every unknown is named, documented, defaulted and overridable from the inventory."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from labctl.errors import InventoryError
from labctl.inventory import load_lab
from labctl.inventory.twin_params import BootPhase, SettlePhase, TwinParameters
from labctl.sim.twin.storm import run_storm
from tests.labfiles import make_test_lab


@pytest.mark.parametrize("model", [TwinParameters, BootPhase, SettlePhase])
def test_every_parameter_is_documented(model) -> None:
    for name, field in model.model_fields.items():
        assert field.description and len(field.description) > 15, (
            f"{model.__name__}.{name} needs a description"
        )


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError):
        TwinParameters.model_validate({"boot_read_mb": 80})


def test_a_partial_phase_keeps_the_phase_defaults() -> None:
    p = TwinParameters.model_validate({"kernel": {"read_mb": 70}})
    assert p.kernel.read_mb == 70
    assert p.kernel.local_share == TwinParameters().kernel.local_share
    assert p.kernel.read_kb == TwinParameters().kernel.read_kb


def test_boot_shares_must_split_the_local_boot_time() -> None:
    with pytest.raises(ValidationError, match="add up to 1"):
        TwinParameters.model_validate({"kernel": {"local_share": 0.9}})


def test_overrides_in_the_inventory_reach_the_model(tmp_path: Path) -> None:
    path = make_test_lab(
        tmp_path, clients=4, extra_lab_yaml="twin:\n  local_disk_boot_time_s: 40\n  kernel: {read_mb: 80}"
    )
    lab = load_lab(path, every_machine=True)
    assert lab.twin.local_disk_boot_time_s == 40 and lab.twin.kernel.read_mb == 80
    default = load_lab(make_test_lab(tmp_path, clients=4, name="plain.yaml"), every_machine=True)
    slow, fast = run_storm(lab, 1, duration_s=120), run_storm(default, 1, duration_s=120)
    assert slow.mean_boot_s() > fast.mean_boot_s() + 10  # 13 s more local work, 26 MB more to read


def test_a_misspelt_twin_key_is_an_inventory_error(tmp_path: Path) -> None:
    path = make_test_lab(tmp_path, clients=2, extra_lab_yaml="twin:\n  udp_timeout: 300")
    with pytest.raises(InventoryError, match="udp_timeout"):
        load_lab(path)
