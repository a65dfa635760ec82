"""The site agent process (`labctl agent NAME`): it runs the lab layer's actions on its own site,
where the wire is, taking orders from the hub and answering with results and samples.

- :mod:`.agent`: the process (its hub connection, heartbeats, the order loop);
- :mod:`.execute`: one order carried out on the agent's own lab session;
- :mod:`.feeds`: metric sources read here and streamed to the controller;
- :mod:`.journal`: orders already done, so a re-sent order is answered, not repeated;
- :mod:`.launchers`: the session launchers placed at the agent, and the relay of the
  controller's ``labctl-launcher/1`` calls to them (:mod:`.launcher_serve`: the daemon it hosts);
- :mod:`.nats_server`: start and stop a pinned ``nats-server`` (a hub, a leaf node).

It stands above the lab (it uses :mod:`labctl.lab`) and the hub's wire (:mod:`labctl.drivers.hub`);
nothing below imports it.
"""
