"""The plugin's options and the session's lab, resolved once and shared by its fixtures and hooks.

Precedence: command line, environment (``LABCTL_LAB``, ``LABCTL_CONFIG``, ``LABCTL_RESULTS``), ini
file (``labctl_lab``, ``labctl_lab_config``, ``labctl_results_dir``), default (the simulated lab;
``<rootdir>/results``). The results store the run is written to as it goes: ``--store URL`` (env
``LABCTL_STORE``), by default the embedded store in ``<results-dir>/store`` (where ``labctl runs``
looks by default); ``--no-store`` (or ``LABCTL_STORE=none``) writes none. A store that fails never
costs the run its folder or its verdicts (the store's sink is one output among others; ``labctl
runs import`` brings the run in later).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.errors import BadInputError
from labctl.inventory.lab_ref import resolve_lab_file
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab
from labctl.store import STORE_DIR, default_store_url
from labctl.store.urls import check_no_password

LAB_ENV = "LABCTL_LAB"
CONFIG_ENV = "LABCTL_CONFIG"
RESULTS_ENV = "LABCTL_RESULTS"
STORE_ENV = "LABCTL_STORE"  # the same variable `labctl runs` reads (labctl.store.STORE_ENV)
NO_STORE = ("none", "off", "no")  # LABCTL_STORE values that mean --no-store


@dataclass(frozen=True)
class Settings:
    lab_file: Path | None  # None: the simulated lab shipped with labctl
    lab_config: str | None  # None: the file's default configuration
    results_dir: Path
    lease_wait_s: float = 0.0
    store_url: str | None = None  # None: no results store is written during the run (--no-store)


_settings_key = pytest.StashKey[Settings]()
_labs_key = pytest.StashKey[dict[str | None, Lab]]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("labctl", "labctl lab orchestration")
    group.addoption(
        "--lab",
        action="store",
        default=None,
        metavar="FILE|NAME",
        help=f"inventory file, or a lab's name in hardware/ (env {LAB_ENV}; default: hardware/sim-2007.yaml, "
        "the simulated lab)",
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
        "--store",
        action="store",
        default=None,
        metavar="URL",
        help=f"results store to write the run to as it goes: duckdb:FOLDER or postgresql://user@host/db "
        f"(env {STORE_ENV}; default: duckdb:<results-dir>/{STORE_DIR}, the embedded store)",
    )
    group.addoption(
        "--no-store",
        action="store_true",
        default=False,
        help=f"write no results store during the run (or {STORE_ENV}=none); `labctl runs import` can add it later",
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
        results_dir = results_base / results if results else config.rootpath / "results"
        try:  # a file, relative to where it was given; or a lab's name in hardware/
            lab_file = resolve_lab_file(lab, base=lab_base)
        except BadInputError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[_settings_key] = Settings(
            lab_file=lab_file,
            lab_config=lab_config,
            results_dir=results_dir,
            lease_wait_s=wait,
            store_url=store_url(config, results_dir),
        )
    return config.stash[_settings_key]


def store_url(config: pytest.Config, results_dir: Path) -> str | None:
    """The store the run is written to: ``--store``, else $LABCTL_STORE, else the embedded store in
    the results folder; None with ``--no-store`` or LABCTL_STORE=none. A URL with a password is a
    usage error before anything runs (it would be kept in run.json's pytest arguments)."""
    given = config.getoption("--store") or os.environ.get(STORE_ENV, "").strip() or None
    if config.getoption("--no-store") or (given or "").lower() in NO_STORE:
        if config.getoption("--store") and config.getoption("--no-store"):
            raise pytest.UsageError("--store and --no-store: give one of them")
        return None
    try:
        return check_no_password(given) if given else default_store_url(results_dir.resolve())
    except BadInputError as exc:
        raise pytest.UsageError(str(exc)) from None


def session_lab(config: pytest.Config, configuration: str | None = None) -> Lab:
    """The session's lab (``--lab``) in ``configuration`` (default: ``--lab-config`` or the file's),
    loaded once per configuration. Raises the inventory's own errors."""
    labs = config.stash.setdefault(_labs_key, {})
    s = settings(config)
    cfg = configuration or s.lab_config
    if cfg not in labs:
        labs[cfg] = load_lab(s.lab_file, cfg)
    return labs[cfg]
