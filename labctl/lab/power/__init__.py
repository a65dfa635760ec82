"""Power for a machine, a group or a selector, whatever carries it (``session.power``).

One module per backend, picked by the machine's inventory ``power:`` setting or its kind
(:mod:`labctl.lab.power.registry`):

- ``wol-ssh`` (:mod:`.clients`): Wake-on-LAN on; the OS's shutdown over SSH, every session
  opened before the burst; state from the streaming servers' device status, else the SSH port.
- ``redfish`` (:mod:`.redfish`): ``ComputerSystem.Reset`` on the server's BMC; ``PowerState``.
- ``vcenter`` (:mod:`.vcenter`): vCenter power tasks; the VM's power state.
- ``ipmi`` (:mod:`.ipmi`): IPMI Chassis Control / Chassis Status (pyghmi).

:class:`Power` (:mod:`.facade`) fans out over them at once; :class:`PowerReport` says per machine
when its request was sent and delivered, and the spreads of both.
"""

from labctl.lab.power.clients import tcp_open
from labctl.lab.power.facade import Power
from labctl.lab.power.model import Action, MachineState, PowerOutcome, PowerReport, State

__all__ = ["Action", "MachineState", "Power", "PowerOutcome", "PowerReport", "State", "tcp_open"]
