"""labctl's pytest plugin: fixtures and a generic cell runner; no plan content.

- :mod:`~labctl.plugin.pytest_plugin`: the entry point (options, ``lab``, ``run_folder``, hooks);
- :mod:`~labctl.plugin.options`: the options and the session's lab;
- :mod:`~labctl.plugin.plans`: plan parameter files, profiles and overrides, typed by the plan's model;
- :mod:`~labctl.plugin.plan_fixtures`: cells, checks at collection, ``lab_env``, ``run_cell``;
- :mod:`~labctl.plugin.selection`: cell ids as pytest ids, ``-k`` by cell number;
- :mod:`~labctl.plugin.runner`: the generic cell runner (recorder, criteria, sinks, status);
- :mod:`~labctl.plugin.environment`: the lab session per configuration, the simulator, the restore;
- :mod:`~labctl.plugin.interrupts`: SIGINT / SIGTERM / SIGHUP;
- :mod:`~labctl.plugin.live`: the live display;
"""
