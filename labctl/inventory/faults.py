"""Fault injection for the simulated lab, declared in the inventory (`lab.faults`) or on `sim up`."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat


class FaultKind(StrEnum):
    CLIENT_NEVER_WAKES = "client_never_wakes"  # magic packets to this client are ignored
    BMC_503 = "bmc_503"  # every Redfish request answers 503 Service Unavailable
    BMC_HANG = "bmc_hang"  # the BMC accepts the connection and never answers
    VCENTER_TASK_FAILS = "vcenter_task_fails"  # power tasks on this VM end in error
    SSH_DROP_MID_COMMAND = "ssh_drop_mid_command"  # the channel closes before the command ends
    SSH_REFUSE_AUTH = "ssh_refuse_auth"  # every authentication attempt fails
    STORAGE_TOKEN_EXPIRY = "storage_token_expiry"  # the session expires (401) every `after_s`
    # virtual-desktop labs (labctl.sim.twin.vdi)
    ARRAY_CONTROLLER_FAILOVER = (
        "array_controller_failover"  # an array's controller fails; its peer takes over
    )
    HOST_IN_MAINTENANCE = "host_in_maintenance"  # an ESXi host enters maintenance; its VMs move to the others
    DATASTORE_FULL = "datastore_full"  # a datastore has no free space; VMs writing to it are stunned
    SESSION_LOGIN_FAILS = "session_login_fails"  # logons to these desktops fail


class FaultSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FaultKind
    targets: tuple[str, ...] = Field(min_length=1)  # machine, BMC owner, VM or array names/ranges
    after_s: NonNegativeFloat = 0.0  # lab seconds after sim start before the fault is active
    probability: float = Field(default=1.0, gt=0.0, le=1.0)  # share of calls affected
