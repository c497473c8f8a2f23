"""`auto`, the default: the strategy the measurements favour for this database and budget
(BENCHMARKS.md).

- A database whose domain pack has a semantic model (the demo's; `groundsql init` drafts one):
  the compiled path (a verified query, or a semantic request the model fills under a JSON
  schema and groundsql compiles; the grounded pipeline when neither fits). On the demo's 90
  questions it answers 64 % where zero-shot answers 7 % and grounded 18 %, at about one
  model call a question.
- A pack without one: grounded (the pack resolves what opaque keys mean).
- Otherwise the search (Spider 100: 75.0 EX / 64.0 TS against zero-shot's 63.0 / 52.0, at
  about 7 model calls a question), or self-consistency when `auto.budget` is `fast` (5 calls).

The choice and its reason are the answer's first step and `grounds["auto"]`.
"""

from __future__ import annotations

from dataclasses import replace

from groundsql.errors import ConfigError
from groundsql.strategies.answer import Answer, Step
from groundsql.strategies.context import Context


def choose(ctx: Context) -> tuple[str, str]:
    """The strategy for this context and why, in words for the trace."""
    from groundsql.strategies.grounded import pack_for

    try:
        pack = pack_for(ctx)
    except ConfigError:
        pack = None
    if pack is not None and pack.semantic is not None:
        return "compiled", (f"the database's domain pack ({pack.name}) has a semantic model: a verified "
                            "query or a request the model fills, compiled to SQL")
    if pack is not None:
        return "grounded", f"the database has a domain pack ({pack.name}) to ground its values in"
    if ctx.settings.auto.budget == "fast":
        return "self-consistency", "no domain pack; a fast budget: five samples and a vote by result"
    return "search", "no domain pack: the search scored best on Spider (BENCHMARKS.md)"


def auto(question: str, ctx: Context) -> Answer:
    from groundsql.strategies import get_strategy

    name, why = choose(ctx)
    step = Step("strategy", 0.0, {"chosen": name, "why": why})
    if ctx.on_step is not None:
        ctx.on_step(step)
    answer = get_strategy(name)(question, ctx)
    return replace(answer, steps=(step, *answer.steps), grounds={"auto": {"chosen": name, "why": why},
                                                                  **answer.grounds})
