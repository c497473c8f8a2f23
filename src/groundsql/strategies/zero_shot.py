"""Zero-shot: the whole schema and the question, one call (plus reflection on failure).

The baseline every other strategy must beat (FLINT appendix D.2)."""

from __future__ import annotations

from groundsql.prompts import load_prompt
from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import Context, generate_and_execute


def zero_shot(question: str, ctx: Context) -> Answer:
    trace = Trace(question, "zero-shot")
    with trace.step("schema", format=ctx.settings.generation.schema_format) as step:
        schema_text = ctx.schema_text
        step["tables"] = len(ctx.schema.tables)
    request = load_prompt("generate_sql").request(
        dialect=ctx.dialect_label, schema=schema_text, question=question.strip()
    )
    gen = ctx.settings.llm
    request = request.model_copy(
        update={"temperature": gen.temperature, "max_tokens": gen.max_tokens, "seed": gen.seed}
    )
    return generate_and_execute(ctx, request, trace)
