"""Follow-up questions: what a conversation remembers, and a follow-up made standalone.

A follow-up ("and in 2022?", "only the German ones", "sort them by revenue") means nothing on
its own. Before any grounding it is rewritten, with the conversation's earlier questions and
queries in view, into the question it stands for ("What was Aurora Therapeutics' revenue in
2022?"): one short model call whose prompt is the few earlier turns, not the schema. The
strategy then answers the standalone question as any other, and it is also shown the earlier
turns' queries, which a follow-up most often edits (strategies/context.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groundsql.config import Settings
from groundsql.llm import LLM, Completion
from groundsql.prompts import load_prompt
from groundsql.retrieval import Example

__all__ = ["Turn", "resolve_followup", "earlier_examples"]

_SHOWN_TURNS = 3  # the last few turns: a follow-up refers to what was just asked
_MAX_TOKENS = 96  # one question


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what answered it."""

    question: str  # as asked
    standalone: str  # as answered: the follow-up resolved against the earlier turns
    sql: str | None
    columns: tuple[str, ...] = ()
    rows: int = 0

    @property
    def ok(self) -> bool:
        return self.sql is not None


def resolve_followup(question: str, history: Sequence[Turn], llm: LLM,
                     settings: Settings) -> tuple[str, Completion | None]:
    """The standalone question `question` stands for after `history`, and the call that made
    it (None when there was no history to resolve against)."""
    shown = list(history)[-_SHOWN_TURNS:]
    if not shown:
        return question, None
    request = load_prompt("resolve_followup").request(
        history="\n\n".join(_turn_text(turn) for turn in shown), question=question.strip())
    completion = llm.complete(request.model_copy(update={
        "temperature": 0.0, "max_tokens": _MAX_TOKENS, "seed": settings.llm.seed, "stop": ("\n",)}))
    standalone = completion.text.strip().strip('"').strip()
    for prefix in ("Standalone question:", "Question:"):
        standalone = standalone.removeprefix(prefix).strip()
    return (standalone or question), completion


def earlier_examples(history: Sequence[Turn]) -> tuple[Example, ...]:
    """The earlier turns that were answered, as solved examples for the generator."""
    return tuple(Example(t.standalone, t.sql) for t in list(history)[-_SHOWN_TURNS:] if t.sql)


def _turn_text(turn: Turn) -> str:
    lines = [f"Question: {turn.standalone}"]
    if turn.sql:
        lines.append(f"SQL: {turn.sql}")
        lines.append(f"Result: {turn.rows} row{'s' * (turn.rows != 1)} of {', '.join(turn.columns) or 'no columns'}")
    return "\n".join(lines)
