"""docs/session-launchers.md's Horizon and Citrix set-up: its configurations load, and the command
lines it shows are the ones the connectors build from them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from labctl.launcher.config import LauncherConfig
from labctl.launcher.connectors.horizon import HorizonConnector

DOC = Path(__file__).resolve().parents[3] / "docs" / "session-launchers.md"


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"### {title}\n")
    end = re.compile(r"^##+ ", re.M).search(text, start + 4)
    return text[start : end.start() if end else len(text)]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def configs(title: str) -> list[LauncherConfig]:
    return [LauncherConfig.model_validate(yaml.safe_load(b)) for b in blocks(section(title), "yaml")]


def test_the_horizon_section_configures_and_runs_what_it_shows(tmp_path: Path) -> None:
    (cfg,) = configs("Horizon")
    assert cfg.connector.kind == "horizon" and cfg.connector.broker_api is not None
    assert cfg.connector.broker_api.secret == "env:HZ_API_PASSWORD"
    linux, windows = (shlex.split(line) for line in blocks(section("Horizon"), "sh")[0].splitlines())
    for argv, is_windows in ((linux, False), (windows, True)):
        plain = cfg.connector.model_copy(update={"broker_api": None, "client": argv[0]})
        launch = HorizonConnector(plain, windows=is_windows).launch("d1", "vsi001", "pw", "s1", tmp_path)
        assert launch.argv == argv


def test_the_citrix_section_configures_with_references_only() -> None:
    (cfg,) = configs("Citrix")
    c = cfg.connector
    assert c.kind == "citrix" and c.server.endswith("/Citrix/StoreWeb") and c.verify_tls
    assert c.broker_api is not None and c.broker_api.auth == "basic"
    assert c.broker_api.secret.startswith("file:/")
