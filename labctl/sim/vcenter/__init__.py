"""The simulated vCenter: govmomi's simulator shaped like the inventory, plus guest readiness.

- :mod:`.topology`: datacenters, clusters, hosts and VMs from the lab; task latency in lab seconds.
- :mod:`.launcher`: builds (if needed) and starts the `labctl-vcsim` program (source in
  ``vcsimlab/``) as its own process.
- :mod:`.guest`: the updater (threads in the simulator process) that feeds VM power changes to the
  twin and marks a guest ready -- VMware Tools running, IP, host name -- when the twin says it has
  booted.
"""
