"""Evaluation configurations: a strategy plus settings, written on the command line as
`NAME[:key=value,...]`, e.g. `zero-shot`, `zero-shot:format=ddl,examples=false`,
`few-shot:k=3`, `self-consistency:k=5,temperature=0.7`, `grounded:lookup=false` (an ablation),
`search:rollouts=8`, `search:actions=schema_selection+sql_revision`, or `gold` (the gold query scored
against itself, the harness's own correctness check).

Keys are short names (below) or dotted settings paths such as `generation.reflection_retries`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from groundsql.config import Settings
from groundsql.errors import ConfigError
from groundsql.strategies import STRATEGIES

GOLD = "gold"

_SHORT_KEYS = {
    "format": "generation.schema_format",
    "examples": "generation.with_examples",
    "reflection": "generation.reflection_retries",
    "repair": "generation.repair",
    "constrain": "generation.constrain",
    "model": "llm.model",
    "max_tokens": "llm.max_tokens",
}
# A strategy's own settings (its section of Settings, `few-shot` -> `few_shot`) go by their bare
# names (`k` and `temperature` mean the strategy's), read off its config model so that a new
# setting is reachable without an edit here.
_STRATEGY_KEYS = {
    name: {key: f"{section}.{key}" for key in Settings.model_fields[section].annotation.model_fields}
    for name in STRATEGIES if (section := name.replace("-", "_")) in Settings.model_fields
}


@dataclass(frozen=True)
class EvalConfig:
    label: str
    strategy: str
    settings: Settings


def parse_config(spec: str, base: Settings) -> EvalConfig:
    name, _, options = spec.partition(":")
    name = name.strip()
    if name != GOLD and name not in STRATEGIES:
        known = ", ".join([*STRATEGIES, GOLD])
        raise ConfigError(f"unknown configuration {name!r} in {spec!r} (strategies: {known})")
    data: dict[str, Any] = base.model_dump()
    for option in filter(None, (o.strip() for o in options.split(","))):
        key, sep, value = option.partition("=")
        if not sep:
            raise ConfigError(f"{spec!r}: option {option!r} needs a value (key=value)")
        path = _STRATEGY_KEYS.get(name, {}).get(key) or _SHORT_KEYS.get(key) or key
        section, _, field = path.partition(".")
        if section not in data or not field or field not in data[section]:
            raise ConfigError(f"{spec!r}: unknown option {key!r}")
        data[section][field] = _value(value)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"{spec!r}: {err.errors()[0]['msg']}") from err
    return EvalConfig(label=spec, strategy=name, settings=settings)


def _value(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in {"true", "yes", "on"}:
        return True
    if lowered in {"false", "no", "off"}:
        return False
    return text.strip()  # pydantic converts numbers and checks choices
