"""The lab inventory: `hardware/*.yaml` loaded into typed, immutable objects."""

from labctl.inventory.credentials import resolve_credential
from labctl.inventory.load import default_lab_file, load_lab, read_inventory
from labctl.inventory.model import Lab, Machine, MachineKind, MachineRole

__all__ = [
    "Lab",
    "Machine",
    "MachineKind",
    "MachineRole",
    "default_lab_file",
    "load_lab",
    "read_inventory",
    "resolve_credential",
]
