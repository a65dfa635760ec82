"""The lab lease: one owner at a time for a lab, a group or a shared resource.

One package, one job each:

- :mod:`.model`: what a lease is (``LeaseInfo``, the held ``Lease`` and its renewal thread, the
  ``LeaseStore`` protocol, the errors, resource names, notes made safe for a terminal);
- :mod:`.record`: the take / renew / release / reserve logic both backends share, as
  transactions over one resource's record;
- :mod:`.file`: this machine's store (a JSON file per resource, under a file lock);
- :mod:`.hub`: the site's store (a JetStream key-value bucket on the NATS hub);
- :mod:`.open`: the one way to open a store (:func:`lease_store_for`: the lab's hub, else
  ``$LABCTL_HUB``, else the file store);
- :mod:`.guard`: the check behind `labctl power` (someone else's lease refuses it).

    store = lease_store_for(lab)
    with store.take(lease_resource("lab", lab.name), holder_description("labctl run boot_storm")):
        ...
"""

from labctl.lab.lease.model import (
    DEFAULT_TTL_S,
    HUB_DOMAIN_VAR,
    HUB_VAR,
    LEASE_BUCKET_VAR,
    LEASE_DIR_VAR,
    MAX_NOTE_LEN,
    MAX_TTL_S,
    MIN_TTL_S,
    Lease,
    LeaseHeld,
    LeaseInfo,
    LeaseLost,
    LeaseStore,
    LeaseStoreError,
    check_resource,
    check_ttl,
    clean_note,
    default_lease_dir,
    format_duration,
    holder_description,
    lease_resource,
    this_host,
    this_user,
)
from labctl.lab.lease.open import lease_store_for, open_lease_store

__all__ = [
    "DEFAULT_TTL_S",
    "HUB_DOMAIN_VAR",
    "HUB_VAR",
    "LEASE_BUCKET_VAR",
    "LEASE_DIR_VAR",
    "MAX_NOTE_LEN",
    "MAX_TTL_S",
    "MIN_TTL_S",
    "Lease",
    "LeaseHeld",
    "LeaseInfo",
    "LeaseLost",
    "LeaseStore",
    "LeaseStoreError",
    "check_resource",
    "check_ttl",
    "clean_note",
    "default_lease_dir",
    "format_duration",
    "holder_description",
    "lease_resource",
    "lease_store_for",
    "open_lease_store",
    "this_host",
    "this_user",
]
