"""The NATS wire between a controller and its site agents: one hub (a nats-server with JetStream),
leaf nodes at the sites, and what travels over them.

- :mod:`.loop`: a private event loop thread for synchronous users of nats-py;
- :mod:`.connection`: one connection to the hub (streams, publishing that survives a dropped link);
- :mod:`.protocol`: the messages and subjects (orders, results, samples, heartbeats);
- :mod:`.clocksync`: a peer's clock offset, measured by ping over NATS;
- :mod:`.status`: each agent's heartbeat, up or down.

The lab's adapters over it are :mod:`labctl.lab.sites.link` (the controller's link) and
:mod:`labctl.lab.lease.hub` (the shared lease store); the agent process is :mod:`labctl.agents`.
"""
