"""What `groundsql serve` serves: one validated YAML file (`--config serve.yaml`).

    host: 127.0.0.1          # loopback by default; another address needs auth
    port: 8000
    state_url: null          # conversations, feedback, keys, audit: SQLite under the data
                             # directory, or postgresql://... shared by several servers
    auth: true               # API keys (`groundsql keys add`); false only on loopback
    max_concurrent: 2        # questions answered at once; more are told 429 and when to retry
    max_concurrent_sql: 4    # people's own queries at once (/v1/sql, corrections, CSV downloads)
    max_concurrent_sql_per_key: 1   # ... of them for one key (fewer than the database's workers)
    deadline_s: 300          # a question that takes longer is answered 504
    llm: {model: qwen2.5-coder-1.5b}      # any llm.* setting, for every database
    databases:
      demo:                  # the name clients use
        url: null            # a SQLAlchemy URL or SQLite path; null: the demo database
        pack: null           # a domain pack folder (the demo has its own)
        strategy: auto       # the default strategy for /v1/ask
        settings: {}         # any other setting: safety, database, grounded, llm ...

`groundsql serve --db URL` is the one-database shorthand.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from groundsql.config import Settings, data_home
from groundsql.errors import ConfigError
from groundsql.strategies import STRATEGIES
from groundsql.yamlfile import read_model

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class DatabaseEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    pack: Path | None = None
    strategy: str = "auto"
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("strategy")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r} (known: {', '.join(sorted(STRATEGIES))})")
        return value


class ServeConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    state_url: str | None = None
    auth: bool = True
    max_concurrent: int = Field(2, ge=1, le=256)
    # Queries a person writes (/v1/sql, a correction's, a CSV download's) running at once, in
    # all and for one key: more are told 429, so one key's slow queries cannot hold the rest.
    # One a key by default: a database has two query workers (database.workers), and a key
    # holding both would make everyone else's query wait for them.
    max_concurrent_sql: int = Field(4, ge=1, le=256)
    max_concurrent_sql_per_key: int = Field(1, ge=1, le=256)
    deadline_s: float = Field(300.0, gt=0)
    max_body_bytes: int = Field(256 * 1024, ge=1024)
    max_turns: int = Field(50, ge=1)  # a conversation this long must start afresh
    llm: dict[str, Any] = Field(default_factory=dict)
    databases: dict[str, DatabaseEntry]

    @field_validator("databases")
    @classmethod
    def _named(cls, value: dict[str, DatabaseEntry]) -> dict[str, DatabaseEntry]:
        if not value:
            raise ValueError("at least one database is needed")
        for name in value:
            if not _NAME.match(name):
                raise ValueError(f"database name {name!r}: letters, digits, '_', '.' or '-', at most 63")
        return value

    @model_validator(mode="after")
    def _auth_off_only_on_loopback(self) -> "ServeConfig":
        if not self.auth and not is_loopback(self.host):
            raise ValueError(f"auth may be off only on a loopback address, not on {self.host}")
        return self

    def settings_for(self, name: str) -> Settings:
        """The settings a database's session runs with: the defaults, then the file's `llm`,
        then the database's own `settings`; each checked by the one configuration model."""
        entry = self.databases[name]
        merged: dict[str, Any] = {"llm": dict(self.llm)}
        for section, values in entry.settings.items():
            if isinstance(values, dict) and isinstance(merged.get(section), dict):
                merged[section] = {**merged[section], **values}
            else:
                merged[section] = values
        if entry.pack is not None:
            merged["grounded"] = {**merged.get("grounded", {}), "pack": str(entry.pack)}
        try:
            return Settings.model_validate(merged)
        except ValueError as err:
            raise ConfigError(f"database {name!r}: {err}") from None

    @property
    def state(self) -> str:
        return self.state_url or f"sqlite:///{data_home() / 'server' / 'state.sqlite'}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_serve_config(path: Path | None, *, db: str | None = None, **overrides: Any) -> ServeConfig:
    """The file's configuration, or the one-database shorthand (`--db`), with command-line
    overrides (host, port, ...) on top."""
    if path is not None and db is not None:
        raise ConfigError("give --config or --db, not both")
    if path is not None:
        config = read_model(Path(path), ServeConfig)
    else:
        config = ServeConfig(databases={_name_of(db): DatabaseEntry(url=db)})
    changes = {k: v for k, v in overrides.items() if v is not None}
    # A bad value (--port 99999) is a pydantic error; the command line says it in one line.
    return ServeConfig.model_validate({**config.model_dump(), **changes}) if changes else config


def _name_of(url: str | None) -> str:
    """A short name for the one database of `--db`: its file or database name."""
    if url is None:
        return "demo"
    tail = re.split(r"[/\\]", url.split("?", 1)[0].rstrip("/"))[-1]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", tail.rsplit(".", 1)[0] if "." in tail else tail)
    return name if _NAME.match(name) else "db"
