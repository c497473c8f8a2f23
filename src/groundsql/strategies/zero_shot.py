"""Zero-shot: the whole schema and the question, one call (plus reflection on failure).

The baseline every other strategy must beat (FLINT appendix D.2)."""

from __future__ import annotations

from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import Context, generate_and_execute, generation_request


def zero_shot(question: str, ctx: Context) -> Answer:
    trace = Trace(question, "zero-shot", ctx.on_step)
    request = generation_request(ctx, trace, question)
    return generate_and_execute(ctx, request, trace)
