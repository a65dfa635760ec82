"""Scenarios: each runs one whole plan cell against the lab layer and returns a typed result.

- :mod:`~labctl.scenarios.base`: the contracts (Scenario, ScenarioResult, CellContext);
- :mod:`~labctl.scenarios.settings`: typed, bounded parameter types and the settings bases;
- :mod:`~labctl.scenarios.common`: what the storms share (client outcomes, entities, phases, restore);
- :mod:`~labctl.scenarios.boot_storm`: the 2007 boot storm, the whole cell;
- :mod:`~labctl.scenarios.copy_reboot`: the 2007 copy/reboot matrix, the whole cell.
"""
