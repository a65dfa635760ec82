"""The launcher machine's own configuration file (YAML), checked before anything starts."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

MAX_FILE_BYTES = 256 * 1024  # a launcher's config or credentials file is a few lines
# in state_dir: the daemon writes it, the verbs read it (here, so a verb never imports the daemon)
TOKEN_FILE = "control.token"


class ConfigError(ValueError):
    """One line: the file, the item, the fix."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Listen(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8472, ge=0, le=65535)


class Collector(_Model):
    bind: str = "0.0.0.0"
    port: int = Field(8473, ge=0, le=65535)
    url: str = ""  # what desktops are told to post to, when not http://<this host>:<port>


class BrokerApi(_Model):
    """A broker's management API the connector reads logon timings from (Horizon REST, Citrix Monitor).

    ``secret`` is a reference, never the value: ``env:NAME`` (an environment variable of the
    launcher's service) or ``file:/path`` (a file only the launcher's account can read).
    """

    url: str  # horizon: https://cs01.lab.local ; citrix: https://ddc01/Citrix/Monitor/OData/v4/Data
    auth: Literal["password", "basic", "bearer"] = "password"  # horizon: password; citrix: basic|bearer
    user: str = ""
    domain: str = ""
    secret: str = Field("", pattern=r"^$|^(env:[A-Za-z_][A-Za-z0-9_]*|file:/.+)$")
    customer_id: str = ""  # Citrix Cloud: the Citrix-CustomerId header
    verify_tls: bool = True  # false is insecure: only for a lab broker with a self-signed certificate
    timeout_s: float = Field(10.0, gt=0, le=120)  # each call's timeout
    max_pages: int = Field(50, ge=1, le=10_000)  # a collection longer than this is refused, not cut

    @model_validator(mode="after")
    def _tls(self) -> BrokerApi:
        _plain_http(self.url, self.verify_tls)
        return self


def _plain_http(url: str, verify_tls: bool) -> None:
    """Passwords cross a broker's connection: plain http only when marked insecure."""
    if url.lower().startswith("http://") and verify_tls:
        raise ValueError(f"{url} is plain http: use https, or set verify_tls: false to accept it (insecure)")


class Connector(_Model):
    """How this launcher reaches its pool's desktops."""

    kind: Literal["rdp", "horizon", "citrix", "custom"] = "rdp"
    server: str = "{desktop}"  # rdp: host (template: {desktop}, {user}); horizon/citrix: the broker/store URL
    port: int = Field(3389, ge=1, le=65535)
    domain: str = ""
    gateway: str = ""  # rdp: an RD Gateway host (credentials as the user's)
    certificate: Literal["verify", "tofu", "ignore"] = "verify"
    size: str = "1024x768"
    display: str = ""  # Linux: the X display the clients draw on ('' = the launcher's own Xvfb)
    client: str = ""  # the client program ('' = xfreerdp / mstsc / vmware-view / wfica)
    command: list[str] = Field(
        default_factory=list
    )  # custom: argv template ({desktop} {user} {server} {session})
    pool: str = ""  # horizon: the desktop pool; citrix: the resource name ('' = {desktop})
    addresses: dict[str, str] = Field(
        default_factory=dict
    )  # desktop -> host[:port] where DNS does not know it
    extra_args: list[str] = Field(default_factory=list)
    protocol: str = ""  # horizon: BLAST | PCOIP | RDP ('' = the pool's default)
    verify_tls: bool = True  # citrix: the StoreFront's certificate (false is insecure)
    launch_wait_s: float = Field(300.0, gt=0)  # citrix: how long a desktop may take to become ready
    broker_api: BrokerApi | None = None  # horizon / citrix: the broker's API for logon timings

    @model_validator(mode="after")
    def _store_tls(self) -> Connector:
        if self.kind == "citrix":
            _plain_http(self.server, self.verify_tls)  # the users' passwords go to StoreFront
        return self


class LauncherConfig(_Model):
    name: str = Field(default_factory=lambda: os.uname().nodename)
    state_dir: Path = Path("/var/lib/labctl-launcher")
    control: Listen = Listen()
    collector: Collector = Collector()
    max_sessions: int = Field(30, ge=1, le=500)  # Login Enterprise's per-launcher limit is 30
    logon_timeout_s: float = Field(120.0, gt=0)
    logoff_timeout_s: float = Field(30.0, gt=0)
    credentials_file: Path | None = None  # YAML {user: password}, mode 0600; never on a command line
    connector: Connector = Connector()

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or any(c in v for c in " \t\r\n,\"'"):
            raise ValueError(f"launcher name {v!r} must be one word without commas or quotes")
        return v


def read_small(path: Path, what: str) -> str:
    """A user's file, refused before reading when it is not a regular file or too large."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what} ({exc.strerror}); give an existing file") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{path}: the {what} is not a regular file; give a file")
    if st.st_size > MAX_FILE_BYTES:
        raise ConfigError(
            f"{path}: the {what} is {st.st_size} bytes, more than {MAX_FILE_BYTES}; is it the right file?"
        )
    return path.read_text(encoding="utf-8")


def load(path: Path) -> LauncherConfig:
    text = read_small(path, "launcher configuration")
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML ({str(exc).splitlines()[0]}); fix the syntax") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the configuration must be a mapping (name:, connector:, ...)")
    try:
        return LauncherConfig.model_validate(raw)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(p) for p in e["loc"])
        raise ConfigError(f"{path}: {where}: {e['msg']}; see docs/session-launchers.md") from None


def credentials(cfg: LauncherConfig) -> dict[str, str]:
    """The desktop users' passwords from the launcher's credentials file (0600, owner only)."""
    if cfg.credentials_file is None:
        return {}
    p = cfg.credentials_file
    text = read_small(p, "credentials file")
    if os.name == "posix" and p.stat().st_mode & 0o077:
        raise ConfigError(f"{p}: the credentials file is readable by others; chmod 600 {p}")
    raw = yaml.safe_load(text) or {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise ConfigError(f"{p}: the credentials file must map user: password (strings)")
    return dict(raw)
