"""The plugin's options and the session's lab, resolved once and shared by its fixtures and hooks.

Precedence: command line, environment (``LABCTL_LAB``, ``LABCTL_CONFIG``, ``LABCTL_RESULTS``), ini
file (``labctl_lab``, ``labctl_lab_config``, ``labctl_results_dir``), default (the simulated lab;
``<rootdir>/results``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab

LAB_ENV = "LABCTL_LAB"
CONFIG_ENV = "LABCTL_CONFIG"
RESULTS_ENV = "LABCTL_RESULTS"


@dataclass(frozen=True)
class Settings:
    lab_file: Path | None  # None: the simulated lab shipped with labctl
    lab_config: str | None  # None: the file's default configuration
    results_dir: Path
    lease_wait_s: float = 0.0


_settings_key = pytest.StashKey[Settings]()
_labs_key = pytest.StashKey[dict[str | None, Lab]]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("labctl", "labctl lab orchestration")
    group.addoption(
        "--lab",
        action="store",
        default=None,
        metavar="FILE",
        help=f"inventory file (env {LAB_ENV}; default: hardware/sim-2007.yaml, the simulated lab)",
    )
    group.addoption(
        "--lab-config",
        action="store",
        default=None,
        metavar="NAME",
        help=f"configuration of the lab, e.g. standalone or ha (env {CONFIG_ENV}; default: the file's)",
    )
    group.addoption(
        "--results-dir",
        action="store",
        default=None,
        metavar="DIR",
        help=f"where run folders go (env {RESULTS_ENV}; default: <rootdir>/results)",
    )
    group.addoption(
        "--lease-wait",
        action="store",
        default="0",
        metavar="SECONDS",
        help="wait this long for a lab another run holds (default 0: stop at once, naming the holder)",
    )
    group.addoption(
        "--profile", default=None, metavar="NAME", help="plan parameter profile, e.g. quick or full"
    )
    group.addoption(
        "--plan-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a plan parameter, e.g. --plan-param group_sizes=25,50 (repeatable)",
    )
    group.addoption("--plan-file", default=None, metavar="FILE", help="plan parameter file to use instead")
    parser.addini("labctl_lab", "inventory file, relative to the ini file", default="")
    parser.addini("labctl_lab_config", "configuration of the lab", default="")
    parser.addini("labctl_results_dir", "where run folders go, relative to the ini file", default="")


def _pick(config: pytest.Config, option: str, env: str, ini: str) -> tuple[str | None, Path]:
    """The first of option, environment, ini value that is set, and the folder it is relative to."""
    value = config.getoption(option)
    if value:
        return str(value), config.invocation_params.dir
    if os.environ.get(env):
        return os.environ[env], config.invocation_params.dir
    ini_value = config.getini(ini)
    if ini_value:
        base = config.inipath.parent if config.inipath else config.rootpath
        return str(ini_value), base
    return None, config.rootpath


def settings(config: pytest.Config) -> Settings:
    """The labctl options of this session, resolved once."""
    if _settings_key not in config.stash:
        lab, lab_base = _pick(config, "--lab", LAB_ENV, "labctl_lab")
        lab_config, _ = _pick(config, "--lab-config", CONFIG_ENV, "labctl_lab_config")
        results, results_base = _pick(config, "--results-dir", RESULTS_ENV, "labctl_results_dir")
        raw_wait = str(config.getoption("--lease-wait") or "0")
        try:
            wait = float(raw_wait)
        except ValueError:
            wait = -1.0
        if not 0 <= wait <= 86_400:
            raise pytest.UsageError(f"--lease-wait {raw_wait!r}: give seconds between 0 and 86400")
        config.stash[_settings_key] = Settings(
            lab_file=lab_base / lab if lab else None,
            lab_config=lab_config,
            results_dir=results_base / results if results else config.rootpath / "results",
            lease_wait_s=wait,
        )
    return config.stash[_settings_key]


def session_lab(config: pytest.Config, configuration: str | None = None) -> Lab:
    """The session's lab (``--lab``) in ``configuration`` (default: ``--lab-config`` or the file's),
    loaded once per configuration. Raises the inventory's own errors."""
    labs = config.stash.setdefault(_labs_key, {})
    s = settings(config)
    cfg = configuration or s.lab_config
    if cfg not in labs:
        labs[cfg] = load_lab(s.lab_file, cfg)
    return labs[cfg]
