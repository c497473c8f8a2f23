"""Scoring one prediction against its gold: execution accuracy, FLINT's three semantic tiers,
filter-value accuracy. Pure composition of the metric modules, plus the optional LLM judge."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from groundsql.db import QueryResult
from groundsql.errors import LLMError
from groundsql.evaluation.ast_match import ast_equivalent, tree_edit_distance
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.evaluation.filter_values import filter_values_correct
from groundsql.evaluation.result_match import results_equivalent
from groundsql.llm import LLM
from groundsql.prompts import load_prompt

_JUDGE_ROWS = 20  # rows of each result shown to the judge


@dataclass(frozen=True)
class Score:
    ex: bool  # execution accuracy, Spider test-suite semantics
    semantic: bool  # FLINT's three-tier verdict
    tier: int | None  # which tier decided: 1 AST, 2 results, 3 judge; None: prediction failed
    tree_edit_distance: int | None
    filter_value: bool | None  # None when the gold has no numeric ID literals


def score(
    *,
    question: str,
    gold_sql: str,
    gold: QueryResult,
    pred_sql: str | None,
    pred: QueryResult | None,
    dialect: str,
    schema: dict[str, dict[str, str]] | None = None,
    ignore_limit: int | None = None,
    judge: LLM | None = None,
) -> Score:
    """`ignore_limit`: the LIMIT the validator adds to queries without one; the AST tier
    ignores it when the gold has no LIMIT."""
    filter_value = filter_values_correct(gold_sql, pred_sql or "", dialect)
    if pred_sql is None or pred is None:
        return Score(False, False, None, None, False if filter_value is not None else None)
    ex = results_match(gold.rows, pred.rows, gold_orders(gold_sql))
    distance = _safe(lambda: tree_edit_distance(gold_sql, pred_sql, dialect, schema, ignore_limit=ignore_limit))
    if _safe(lambda: ast_equivalent(gold_sql, pred_sql, dialect, schema, ignore_limit=ignore_limit)):
        return Score(ex, True, 1, distance, filter_value)
    if results_equivalent(gold.rows, pred.rows):
        return Score(ex, True, 2, distance, filter_value)
    if judge is None:
        return Score(ex, False, 2, distance, filter_value)
    return Score(ex, judge_equivalent(judge, question, gold, pred), 3, distance, filter_value)


def _safe(compute: Any) -> Any:
    # A metric that cannot parse a query (a dialect corner sqlglot lacks) must not end a run.
    try:
        return compute()
    except Exception:  # noqa: BLE001 - any parser failure just means "no verdict here"
        return None


def judge_equivalent(judge: LLM, question: str, gold: QueryResult, pred: QueryResult) -> bool:
    """FLINT tier 3: the model sees the question and both results and says if both answer it."""
    request = load_prompt("judge_results").request(
        question=question, gold=_table(gold), prediction=_table(pred)
    )
    try:
        text = judge.complete(request.model_copy(update={"max_tokens": 64})).text
    except LLMError:
        return False
    try:
        return bool(json.loads(text[text.index("{") : text.rindex("}") + 1])["equivalent"])
    except (ValueError, KeyError, TypeError):
        return text.strip().lower().startswith("yes")


def _table(result: QueryResult) -> str:
    lines = [" | ".join(result.columns)]
    lines += [" | ".join(map(str, row)) for row in result.rows[:_JUDGE_ROWS]]
    if len(result.rows) > _JUDGE_ROWS:
        lines.append(f"... ({len(result.rows)} rows in all)")
    return "\n".join(lines)
