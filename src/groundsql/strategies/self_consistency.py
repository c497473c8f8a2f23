"""Self-consistency: k samples (one greedy, the rest at a temperature), majority vote by
execution result (CHESS k=10, IESR SC@maj). The bar every strategy of ours must clear at equal
or lower cost.

All samples share one prompt, so a local backend computes the prompt once and decodes the k
answers together (`LLM.complete_all`). Ties go to the group holding the earliest sample, i.e. the greedy one when it ran.
"""

from __future__ import annotations

from groundsql.db import QueryResult
from groundsql.errors import DatabaseError, LLMError, UnsafeSQLError
from groundsql.llm import Completion
from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import Context, constrained, extract_sql, generation_request


def result_key(result: QueryResult) -> tuple[str, ...]:
    """Two results vote together when they hold the same rows, in any order, under any column
    names (floats to 9 significant digits, so float noise does not split a vote)."""

    def cell(value: object) -> str:
        return f"{value:.9g}" if isinstance(value, float) else repr(value)

    return tuple(sorted("|".join(cell(v) for v in row) for row in result.rows))


def self_consistency(question: str, ctx: Context) -> Answer:
    config = ctx.settings.self_consistency
    trace = Trace(question, "self-consistency", ctx.on_step)
    greedy, constraint = constrained(ctx, generation_request(ctx, trace, question))
    votes: dict[tuple[str, ...], list[int]] = {}
    ran: list[tuple[str, QueryResult] | None] = []
    last_error = "no sample produced SQL"
    samples = [greedy.model_copy(update={"temperature": config.temperature, "seed": greedy.seed + i} if i else {})
               for i in range(config.k)]
    # The samples are independent: the backend may decode them together (one shared prefix).
    with trace.step("generate", samples=config.k) as step:
        answers = ctx.llm.complete_all(samples)
        step["calls"].extend(a for a in answers if isinstance(a, Completion))
    for i, (sample, answer) in enumerate(zip(samples, answers)):
        with trace.step("sample", index=i, temperature=sample.temperature) as step:
            outcome = None
            try:
                if isinstance(answer, LLMError):
                    raise answer
                sql = extract_sql(answer.text)
                step["sql"] = sql
                if sql is None:
                    raise GenerationFailed("the answer contained no SQL query")
                checked, result = ctx.run_sql(sql, record=step)
                outcome = (checked.sql, result)
                votes.setdefault(result_key(result), []).append(i)
                step["rows"] = len(result.rows)
            except (LLMError, UnsafeSQLError, DatabaseError, GenerationFailed) as err:
                last_error = str(err)
                step["error"] = last_error
            ran.append(outcome)
    if not votes:
        return trace.finish(sql=None, error=f"none of {config.k} samples ran: {last_error}")
    with trace.step("vote", groups=sorted((len(v) for v in votes.values()), reverse=True)) as step:
        winners = max(votes.values(), key=lambda members: (len(members), -members[0]))
        step["chosen_sample"] = winners[0]
    sql, result = ran[winners[0]]  # type: ignore[misc]
    # Every distinct query that ran, with the size of its result's vote: what the vote chose
    # among (and what an evaluation's best-of-pool score reads).
    group_size = {i: len(members) for members in votes.values() for i in members}
    candidates: dict[str, int] = {}
    for i, outcome in enumerate(ran):
        if outcome is not None:
            candidates.setdefault(outcome[0], group_size[i])
    grounds = {"candidates": [{"sql": q, "votes": n} for q, n in candidates.items()],
               **({"constraint": constraint} if constraint else {})}
    return trace.finish(sql=sql, columns=result.columns, rows=result.rows, truncated=result.truncated,
                        grounds=grounds)


class GenerationFailed(Exception):
    """A sample that produced no SQL; it simply casts no vote."""
