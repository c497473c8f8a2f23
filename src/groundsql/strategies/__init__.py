"""Strategies turn a question into an `Answer`. Each is a plain function `(question, ctx)`."""

from __future__ import annotations

from typing import Callable

from groundsql.errors import ConfigError
from groundsql.strategies.answer import Answer, Step, Trace
from groundsql.strategies.context import Context
from groundsql.strategies.few_shot import few_shot
from groundsql.strategies.grounded import grounded
from groundsql.strategies.search import search
from groundsql.strategies.self_consistency import self_consistency
from groundsql.strategies.zero_shot import zero_shot

Strategy = Callable[[str, Context], Answer]

STRATEGIES: dict[str, Strategy] = {
    "zero-shot": zero_shot,
    "few-shot": few_shot,
    "self-consistency": self_consistency,
    "grounded": grounded,
    "search": search,
}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r} (available: {', '.join(STRATEGIES)})") from None


__all__ = ["Answer", "Context", "STRATEGIES", "Step", "Strategy", "Trace", "get_strategy"]
