"""What every strategy works with, and the stage they all end in: generate, validate, execute,
and reflect on failure."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable
from functools import cached_property

from groundsql.config import Settings
from groundsql.db import Database, QueryResult
from groundsql.errors import DatabaseError, LLMError, UnsafeSQLError
from groundsql.llm import LLM, ChatRequest, Message
from groundsql.packs.model import DomainPack
from groundsql.prompts import load_prompt
from groundsql.retrieval import Example, QueryBank
from groundsql.safety import ValidatedSQL, run_validated
from groundsql.safety.tables import visible_schema
from groundsql.schema import Schema, render_schema
from groundsql.schema.grammar import admitted, grammar_problem, sql_grammar
from groundsql.strategies.answer import Answer, Step, Trace
from groundsql.strategies.feedback import error_feedback, repaired

_MOST_REPAIRS = 3  # one per misqualified column; a query with more is the model's to rewrite


@dataclass
class Context:
    db: Database
    llm: LLM
    settings: Settings
    bank: QueryBank | None = None  # solved examples, for the strategies that retrieve them
    exclude_db: str | None = None  # keep this database's own examples out of retrieval
    # A question whose own solved example (and verified query) is kept out: a pack's benchmark
    # scores each of its verified queries with the others as the bank (leave-one-out).
    held_out: str | None = None
    pack: DomainPack | None = None  # the domain pack (grounded strategy)
    # Per-session objects a strategy builds once (the grounded strategy's indexes).
    resources: dict[str, Any] = field(default_factory=dict)
    # Hears of each step of a question as it finishes (the server's event stream).
    on_step: Callable[[Step], None] | None = None
    # A follow-up's earlier turns, as solved examples shown before the retrieved ones.
    conversation: tuple[Example, ...] = ()
    # Examples confirmed by people (Session.learn), on top of the bank and the pack's bank.
    learned: list[Example] = field(default_factory=list)

    def learn(self, example: Example) -> None:
        """A confirmed example joins the bank every retrieving strategy reads (few-shot's, and
        the grounded strategy's pack bank)."""
        self.learned.append(example)
        self.bank = QueryBank((*(self.bank.examples if self.bank else ()), example),
                              self.bank.embedder if self.bank else None)
        domain = self.resources.get("grounded")
        if domain is not None:
            self.resources["grounded"] = replace(domain, bank=domain.bank.extended([example]))

    @cached_property
    def schema(self) -> Schema:
        """The database's schema as the safety policy lets it be seen."""
        return visible_schema(self.db.introspect(), self.settings.safety)

    @cached_property
    def schema_text(self) -> str:
        gen = self.settings.generation
        return render_schema(self.schema, gen.schema_format, with_examples=gen.with_examples)

    @property
    def dialect_label(self) -> str:
        return {"sqlite": "SQLite", "postgres": "PostgreSQL", "duckdb": "DuckDB", "mysql": "MySQL"}.get(
            self.db.dialect, self.db.dialect
        )

    def run_sql(self, sql: str, record: dict[str, Any] | None = None) -> tuple[ValidatedSQL, QueryResult]:
        """Validate and run model-written SQL. With `record` (a trace step) and repair on, a
        misqualified column is requalified, a referenced table's column joined, or a ^ written as
        POWER, and the query run again (feedback.repaired); the step lists the queries so repaired
        with their errors. When no repair runs, the error of the query as written is raised: its
        feedback is about what the model wrote."""
        most = _MOST_REPAIRS if record is not None and self.settings.generation.repair else 0
        mended: list[dict[str, str]] = []
        first: DatabaseError | None = None
        while True:
            try:
                outcome = run_validated(self.db, sql, self.settings.safety)
            except DatabaseError as err:
                first = first or err
                fixed = repaired(sql, str(err), self.schema) if len(mended) < most else None
                if fixed is None or fixed == sql:
                    raise first from None
                mended.append({"sql": sql, "error": str(err)})
                sql = fixed
                continue
            if mended and record is not None:
                record.update(repaired=mended, sql=sql)  # the query that ran, after those that failed
            return outcome


def generation_request(
    ctx: Context, trace: Trace, question: str, examples: Sequence[Example] = ()
) -> ChatRequest:
    """The generation prompt for `question`, with solved examples when given, and the model
    settings (temperature, max tokens, seed) from the configuration; recorded as the trace's
    "schema" step (introspection and rendering happen here on first use)."""
    with trace.step("schema", format=ctx.settings.generation.schema_format) as step:
        step["tables"] = len(ctx.schema.tables)
        request = load_prompt("generate_sql").request(
            dialect=ctx.dialect_label,
            schema=ctx.schema_text,
            examples=examples_text(ctx, examples),
            question=question.strip(),
        )
    llm = ctx.settings.llm
    return request.model_copy(
        update={"temperature": llm.temperature, "max_tokens": llm.max_tokens, "seed": llm.seed}
    )


def examples_text(ctx: Context, examples: Sequence[Example]) -> str:
    """The solved examples a generation prompt shows: a conversation's earlier turns first
    (a follow-up most often edits the last query), then the retrieved ones."""
    def block(title: str, shown: Sequence[Example]) -> str:
        body = "".join(f"Question: {e.question}\nSQL: {e.sql}\n\n" for e in shown)
        return f"{title}:\n\n{body}" if shown else ""

    return block("Earlier in this conversation", ctx.conversation) + block("Solved examples", examples)


_FENCED = re.compile(r"```[ \t]*(?:sql|sqlite|postgresql|postgres|duckdb)?[ \t]*\n?(.*?)```", re.S | re.I)
_BARE = re.compile(r"\b(SELECT|WITH)\b.*", re.S | re.I)


def extract_sql(text: str) -> str | None:
    """The SQL in a model's answer: a fenced block if any, else from the first SELECT/WITH on."""
    fenced = [block.strip() for block in _FENCED.findall(text) if block.strip()]
    if fenced:
        candidate = fenced[0]
    else:
        # An answer cut off by max_tokens has an opening fence and no closing one.
        opened = re.search(r"```[ \t]*\w*[ \t]*\n(.*)", text, re.S)
        source = opened.group(1) if opened else text
        bare = _BARE.search(source)
        if bare is None:
            return None
        candidate = bare.group(0).strip()
    candidate = candidate.strip().rstrip(";").strip()
    return candidate or None


def parse_json(text: str) -> Any:
    """The first JSON object in a model's answer, or None."""
    match = re.search(r"\{.*\}", text, re.S)
    if match is None:
        return None
    try:
        return json.loads(match.group(0))
    except ValueError:
        return None


def name_list(names: Sequence[str], most: int) -> dict[str, Any]:
    """A JSON-schema list of at most `most` of these names: under a grammar, a small model can
    neither invent a name nor repeat names until max_tokens (measured: the 1.5B model listed
    four table names over and over for 256 tokens)."""
    return {"type": "array", "items": {"type": "string", "enum": sorted(set(names))}, "maxItems": most}


def constrained(ctx: Context, request: ChatRequest, schema: Schema | None = None,
                resolved: Mapping[str, Sequence[Any]] | None = None) -> tuple[ChatRequest, dict[str, Any]]:
    """`request` decoded under the grammar of `schema` (the context's by default; schema/grammar.py)
    when `generation.constrain` is on, and what the grounds say of it: whether it was applied,
    what it admits, how long it took to build; or why not."""
    if not ctx.settings.generation.constrain:
        return request, {}
    if not ctx.llm.grammars:
        return request, {"applied": False, "why": "the model backend cannot enforce a grammar: "
                                                  "the query was written unconstrained"}
    start = time.perf_counter()
    schema = schema or ctx.schema
    grammar = sql_grammar(schema, resolved)
    built = time.perf_counter()
    # Checked here: the runtime ignores a grammar it cannot compile, silently (measured).
    problem = grammar_problem(grammar.text)
    info = {"applied": problem is None, "tables": grammar.tables, "columns": grammar.columns,
            "resolved_keys": grammar.resolved, "build_ms": round((built - start) * 1000, 2),
            "check_ms": round((time.perf_counter() - built) * 1000, 2)}
    if problem is not None:
        info["why"] = f"llguidance cannot compile the grammar ({problem}): the query was written unconstrained"
        return request, info
    return request.model_copy(update={"grammar": grammar.text}), info


def generate_and_execute(
    ctx: Context, request: ChatRequest, trace: Trace, retries: int | None = None, *,
    constraint: dict[str, Any] | None = None, **extra: Any
) -> Answer:
    """Ask for SQL, validate and run it; on failure, show the model its error and retry.

    The SQL is decoded under a grammar where `generation.constrain` is on: the request's own,
    with `constraint` (what `constrained` said of it), or else the context's whole schema's.
    Reflection continues the same conversation (assistant turn, then the error as a user turn)
    so a local backend reuses the whole prefix it already computed.
    """
    retries = ctx.settings.generation.reflection_retries if retries is None else retries
    if constraint is None:
        request, constraint = constrained(ctx, request)
    if constraint:
        extra["grounds"] = {**extra.get("grounds", {}), "constraint": constraint}
    messages = request.messages
    error = "no attempt made"
    sql: str | None = None
    # A query that failed fails again the same way: not run twice (a timed-out one would
    # spend the whole timeout again).
    failed: dict[str, str] = {}
    for attempt in range(retries + 1):
        # Steps are recorded when their block exits, so `finish` is called outside the blocks.
        with trace.step("generate" if attempt == 0 else "reflect") as step:
            try:
                completion = ctx.llm.complete(request.model_copy(update={"messages": messages}))
            except LLMError as err:
                step["error"] = str(err)
                completion = None
            else:
                step["calls"].append(completion)
                sql = extract_sql(completion.text)
                step["sql"] = sql
                verdict = admitted(completion.text, request.grammar) if request.grammar is not None else None
                if verdict == "outside":
                    # The runtime let the grammar go mid-answer (its limits): the model wrote freely.
                    # An answer cut off by max_tokens under the grammar is not counted here.
                    step["grammar_dropped"] = True
                    constraint["dropped"] = constraint.get("dropped", 0) + 1
        if completion is None:
            return trace.finish(sql=sql, error=f"the language model failed: {step['error']}", **extra)
        if sql is None:
            error = "the answer contained no SQL query"
        elif sql.strip() in failed:
            error = f"{failed[sql.strip()]} (the same query as before, not run again)"
        else:
            with trace.step("validate+execute", sql=sql) as step:
                try:
                    checked, result = ctx.run_sql(sql, record=step)
                except (UnsafeSQLError, DatabaseError) as err:
                    error = str(err)
                    step["error"] = error
                    failed[sql.strip()] = error
                    result = None
                else:
                    # The statement as it ran (the validator may have added a LIMIT): what the audit logs.
                    step.update(sql=checked.sql, rows=len(result.rows), limit_added=checked.limit_added)
            if result is not None:
                return trace.finish(
                    sql=checked.sql,
                    columns=result.columns,
                    rows=result.rows,
                    truncated=result.truncated,
                    **extra,
                )
        feedback = error_feedback(sql, error, ctx.schema) if sql else error
        follow_up = load_prompt("reflect_sql").render(error=feedback)
        messages = (*messages, Message(role="assistant", content=completion.text), *follow_up)
    return trace.finish(sql=sql, error=f"no working query after {retries + 1} attempts: {error}",
                        **extra)
