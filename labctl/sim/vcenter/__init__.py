"""The simulated vCenter: govmomi's simulator shaped like the inventory and fed by the lab twin.

- ``vcsimlab/`` (Go, the `labctl-vcsim` program): the inventory built in memory (3,000 desktops in
  seconds), power tasks with latency and spread, paced as the twin's ``vcenter_power_ops_per_s``
  says; guest reboot and shutdown, maintenance mode and the out-of-space question; QueryPerf
  answered from the twin's counters as vCenter serves real-time statistics; a WaitForUpdatesEx
  that scales to thousands of objects; and a private link (``/labctl/twin``) to the twin's side.
- :mod:`.topology`: datacenters, clusters, hosts, datastores and VMs from the lab, placed as the
  twin places them; task latency and pacing in lab seconds.
- :mod:`.launcher`: builds (if needed) and starts `labctl-vcsim` as its own process.
- :mod:`.guest`: the twin's side (threads in the simulator process): applies vCenter's journal of
  operations to the twin and pushes the twin's state and, every 20 lab seconds, its counters.
- :mod:`.columns` reads the twin as columns, :mod:`.push` builds what is sent, :mod:`.link` is the
  HTTPS client of the link.

Why the twin pushes and Go serves: QueryPerf for 3,000 VMs must answer within a second and must
not wait on the Python process (busy with the twin, SSH and the arrays); a real-time sample is the
difference of two snapshots of cumulative counters 20 lab seconds apart, so the snapshots are
taken once at each boundary, where the twin is, and every query after that is Go arithmetic over
a ring of an hour of snapshots.
"""
