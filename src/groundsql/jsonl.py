"""Reading the JSON Lines files people write by hand (benchmarks, query banks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from groundsql.errors import ConfigError
from groundsql.files import read_text


def read_jsonl(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a bad line is an error naming file:line."""
    text = read_text(path)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as err:
            raise ConfigError(f"{path}:{number}: not {what} ({err})") from err
        if not isinstance(value, dict):
            raise ConfigError(f"{path}:{number}: not {what} (expected a JSON object)")
        yield number, value


def field_error(path: Path, number: int, what: str, err: Exception) -> ConfigError:
    return ConfigError(f"{path}:{number}: not {what} (missing or wrong field {err})")


def require_text(raw: Any, name: str, where: str) -> None:
    """`raw[name]` must be non-blank text; `where` names the file and entry in the error."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object, found {type(raw).__name__}")
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip():
        found = "nothing" if value is None else f"{type(value).__name__} {value!r}"[:80]
        raise ConfigError(f"{where}: {name!r} must be text, found {found}")
