"""`labctl launcher`: the process on a launcher machine that starts real desktop sessions.

One daemon per launcher machine (`labctl launcher serve --config F`) holds the sessions, their
display clients (connectors: rdp, horizon, citrix, custom), the collector the in-session workloads
(`labctl workload`) report to, and a journal of everything in `labctl-launcher/1`'s words. The
protocol's verbs (`labctl launcher hello|start|events|logoff ...`, one SSH command each from the
controller) are short clients of that daemon. docs/session-launchers.md is the set-up guide.

This package imports only the ground (nothing of the lab, drivers or simulator): it runs on a
machine that is not the controller.
"""
