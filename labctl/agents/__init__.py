"""Site agents and what they share over NATS JetStream (the hub, leaf nodes, the lease bucket).

- :mod:`labctl.agents.lease_nats`: the lab lease in a JetStream key-value bucket on the hub;
- :mod:`labctl.agents.nats_server`: start and stop a pinned ``nats-server`` (a hub, a leaf node);
- :mod:`labctl.agents.aioloop`: a private event loop thread for synchronous users of nats-py.
"""
