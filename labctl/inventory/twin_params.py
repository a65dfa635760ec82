"""Parameters of the lab twin that no paper gives: named, documented, with defaults.

Owned by the lab twin (`labctl.sim.twin`); declared here because only the inventory parses YAML.
Each field says what it is, its unit, and why the default is what it is.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat


class TwinParameters(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Placeholder set; the physical twin extends this model.
    local_disk_boot_time_s: PositiveFloat = Field(
        default=27.0, description="Boot time to agent start from a local disk (2007 paper: 27 s)."
    )
    udp_timeout_ms: PositiveFloat = Field(
        default=200.0, description="Streaming protocol request timeout before a re-send (retry)."
    )
