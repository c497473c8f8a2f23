"""Follow-up questions: what a conversation remembers, and a follow-up made standalone.

A follow-up ("and in 2022?", "only the German ones", "sort them by revenue") means nothing on
its own. Before any grounding it is rewritten, with the conversation's earlier questions and
queries in view, into the question it stands for ("What was Aurora Therapeutics' revenue in
2022?"): one short model call whose prompt is the few earlier turns, not the schema. The
strategy then answers the standalone question as any other, and it is also shown the earlier
turns' queries, which a follow-up most often edits (strategies/context.py `examples_text`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from groundsql.errors import LLMError
from groundsql.llm import Completion
from groundsql.prompts import load_prompt
from groundsql.retrieval import Example
from groundsql.strategies import Answer, Context, Step, get_strategy
from groundsql.strategies.answer import Clarification, Option

__all__ = ["Turn", "answer_in_conversation", "resolve_followup", "earlier_examples"]

_MAX_TOKENS = 96  # one question


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what answered it."""

    question: str  # as asked
    standalone: str  # as answered: the follow-up resolved against the earlier turns
    sql: str | None
    columns: tuple[str, ...] = ()
    rows: int = 0
    clarification: Clarification | None = None  # the question groundsql asked back, if it did


def answer_in_conversation(question: str, history: Sequence[Turn], strategy_name: str, ctx: Context) -> Answer:
    """The strategy's answer to `question` asked after `history`: made standalone first (a
    "resolve" step), with the earlier turns shown to the generator; without history, or with
    `conversation.enabled` off, the question as it is."""
    strategy = get_strategy(strategy_name)  # an unknown strategy fails before any model call
    config = ctx.settings.conversation
    shown = list(history)[-config.turns:] if config.enabled else []
    if not shown:
        return strategy(question, ctx)
    start = time.perf_counter()
    # The last turn asked back: a reply that picks an option, or words read as a follow-up.
    asked = shown[-1].clarification if shown[-1].clarification and shown[-1].clarification.options else None
    option = _picked(question, asked) if asked is not None else None
    if option is not None:
        # A reply that picks an option asks the question it stands for: no model call.
        chose = Step("reply", time.perf_counter() - start, {"chosen": option.label, "standalone": option.question})
        if ctx.on_step is not None:
            ctx.on_step(chose)
        answer = strategy(option.question, replace(ctx, conversation=earlier_examples(shown[:-1])))
        grounds = {**answer.grounds, "conversation": {"asked": question, "standalone": option.question,
                                                      "reply_to": asked.text, "chosen": option.label}}
        return replace(answer, steps=(chose, *answer.steps), elapsed_s=answer.elapsed_s + chose.elapsed_s,
                       grounds=grounds)
    try:
        standalone, call = resolve_followup(question, shown, ctx)
    except LLMError as err:
        failed = Step("resolve", time.perf_counter() - start, {"error": str(err)})
        return Answer(question=question, strategy=strategy_name, sql=None, steps=(failed,),
                      error=f"the language model failed: {err}", elapsed_s=failed.elapsed_s)
    resolved = Step("resolve", time.perf_counter() - start, {"standalone": standalone}, (call,))
    if ctx.on_step is not None:
        ctx.on_step(resolved)
    answer = strategy(standalone, replace(ctx, conversation=earlier_examples(shown)))
    grounds = {**answer.grounds, "conversation": {"asked": question, "standalone": standalone,
                                                  "earlier": [t.standalone for t in shown]}}
    if asked is not None:
        grounds["conversation"]["reply_to"] = asked.text
        grounds["conversation"]["unmatched"] = ("the reply matched none of the options: it was read as a "
                                                "follow-up of the question")
    return replace(answer, steps=(resolved, *answer.steps), elapsed_s=answer.elapsed_s + resolved.elapsed_s,
                   grounds=grounds)


def resolve_followup(question: str, history: Sequence[Turn], ctx: Context) -> tuple[str, Completion]:
    """The standalone question `question` stands for after `history`, and the call that made it."""
    request = load_prompt("resolve_followup").request(
        history="\n\n".join(_turn_text(turn) for turn in history), question=question.strip())
    completion = ctx.llm.complete(request.model_copy(update={
        "temperature": 0.0, "max_tokens": _MAX_TOKENS, "seed": ctx.settings.llm.seed, "stop": ("\n",)}))
    standalone = completion.text.strip().strip('"').strip()
    for prefix in ("Standalone question:", "Question:"):
        standalone = standalone.removeprefix(prefix).strip()
    return (standalone or question), completion


def _picked(reply: str, asked: Clarification) -> Option | None:
    from groundsql.strategies.clarify import chosen_option  # imported here: it loads the semantic layer

    return chosen_option(reply, asked.options)


def earlier_examples(history: Sequence[Turn]) -> tuple[Example, ...]:
    """The earlier turns that were answered, as solved examples for the generator."""
    return tuple(Example(t.standalone, t.sql) for t in history if t.sql)


def _turn_text(turn: Turn) -> str:
    lines = [f"Question: {turn.standalone}"]
    if turn.clarification is not None:
        options = "; ".join(o.label for o in turn.clarification.options)
        lines.append(f"Asked back: {turn.clarification.text}" + (f" Options: {options}" if options else ""))
    if turn.sql:
        lines.append(f"SQL: {turn.sql}")
        lines.append(f"Result: {turn.rows} row{'s' * (turn.rows != 1)} of {', '.join(turn.columns) or 'no columns'}")
    return "\n".join(lines)
