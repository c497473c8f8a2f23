"""Reading the YAML files people write by hand (domain packs, the unit rule base), keeping the
line of every key and item so a mistake is reported as file:line: field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from groundsql.errors import ConfigError
from groundsql.files import read_text

__all__ = ["Where", "read_yaml", "read_model", "line_of"]

Where = tuple[str | int, ...]
"""A place in a YAML document: its keys and list indexes from the root."""


def read_yaml(path: Path) -> tuple[Any, dict[Where, int]]:
    """The parsed file ({} when empty) and the 1-based line of every key and list item."""
    text = read_text(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not valid YAML ({getattr(err, 'problem', err)})") from err
    lines: dict[Where, int] = {}
    if root is not None:
        _lines(root, (), lines)
    return (data if data is not None else {}), lines


M = TypeVar("M", bound=BaseModel)


def read_model(path: Path, model: type[M]) -> M:
    """The file validated as `model`; a mistake is a ConfigError naming file:line: field."""
    data, lines = read_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = tuple(first["loc"])
        field = ".".join(str(p) for p in where) or "(top level)"
        raise ConfigError(f"{path}:{line_of(lines, where)}: {field}: {first['msg']}") from err


def line_of(lines: dict[Where, int], where: Where) -> int:
    """The line of the deepest part of `where` the file has (a missing field: its parent's)."""
    for end in range(len(where), -1, -1):
        if where[:end] in lines:
            return lines[where[:end]]
    return 1


def _lines(node: yaml.Node, where: Where, out: dict[Where, int]) -> None:
    out.setdefault(where, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out[where + (key.value,)] = key.start_mark.line + 1
            _lines(value, where + (key.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, where + (i,), out)
