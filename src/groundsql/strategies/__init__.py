"""Strategies turn a question into an `Answer`. Each is a plain function `(question, ctx)`."""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from groundsql.errors import ConfigError
from groundsql.strategies.answer import Answer, Step, Trace
from groundsql.strategies.context import Context

Strategy = Callable[[str, Context], Answer]

# Where each strategy lives, imported when first asked for: the grounded strategy and the
# search pull in 3-gram indexes, graphs and embeddings, which a zero-shot question never needs (an
# import of all of them was a second of every `groundsql ask`).
STRATEGIES: dict[str, str] = {
    "zero-shot": "groundsql.strategies.zero_shot:zero_shot",
    "few-shot": "groundsql.strategies.few_shot:few_shot",
    "self-consistency": "groundsql.strategies.self_consistency:self_consistency",
    "grounded": "groundsql.strategies.grounded:grounded",
    "compiled": "groundsql.strategies.compiled:compiled",
    "search": "groundsql.strategies.search:search",
    "auto": "groundsql.strategies.auto:auto",
}


def get_strategy(name: str) -> Strategy:
    try:
        module, function = STRATEGIES[name].split(":")
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r} (available: {', '.join(STRATEGIES)})") from None
    return getattr(import_module(module), function)


__all__ = ["Answer", "Context", "STRATEGIES", "Step", "Strategy", "Trace", "get_strategy"]
