"""`labctl workload`: the in-session workload agent (standard library only; see agent.py)."""
