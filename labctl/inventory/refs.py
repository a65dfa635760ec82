"""What a credential field holds: a *reference*, never the value.

``env:NAME`` reads the environment variable NAME, ``secret:KEY`` reads KEY from the YAML secrets
file named by $LABCTL_SECRETS_FILE (:mod:`labctl.inventory.credentials` resolves both when an
endpoint is used). One pattern for every credential of the inventory, the 2007 machines' and the
VDI launchers' alike, so a plain-text password is refused wherever it is written.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

CREDENTIAL_REF_PATTERN = r"^(env|secret):[A-Za-z_][A-Za-z0-9_.-]*$"
CREDENTIAL_REF = re.compile(CREDENTIAL_REF_PATTERN)

CredentialRef = Annotated[str, Field(pattern=CREDENTIAL_REF_PATTERN)]
