"""Few-shot: zero-shot plus the k solved examples most like the question (FLINT appendix D.2)."""

from __future__ import annotations

from groundsql.errors import ConfigError
from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import Context, generate_and_execute, generation_request


def few_shot(question: str, ctx: Context) -> Answer:
    if ctx.bank is None:
        raise ConfigError("the few-shot strategy needs a query bank (--bank FILE.jsonl)")
    trace = Trace(question, "few-shot", ctx.on_step)
    with trace.step("retrieve", k=ctx.settings.few_shot.k) as step:
        # A database's own solved questions are kept out only in cross-database evaluation,
        # where the bank holds the benchmark's other items (see evaluation/runner.py).
        examples = ctx.bank.nearest(question, ctx.settings.few_shot.k, exclude_db=ctx.exclude_db,
                                    held_out=ctx.held_out)
        step["examples"] = [e.question for e in examples]
    request = generation_request(ctx, trace, question, examples)
    return generate_and_execute(ctx, request, trace)
