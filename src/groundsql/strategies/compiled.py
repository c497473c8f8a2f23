"""The compiled path: the model chooses, code writes the SQL.

    question ─ entity linking (no model) ─┬─ a verified query that fits ─> its SQL, filled ("trusted")
                                          ├─ a semantic request, chosen by the model under a JSON
                                          │  schema of the pack's semantic model ─> compiled SQL
                                          └─ neither: the grounded pipeline, with the reason

Most questions analysts ask of a FLINT-like schema are a measure, aggregated, filtered by
resolved names and a period, grouped by a label, ordered and limited. Written out token by
token, a small model invents a column or forgets a filter on the way; choosing among the
names of a semantic model, under a grammar that admits only those names and the values
linking found, it cannot. One model call a question, a few dozen generated tokens, and a
prompt whose long part (the semantic model) is computed once per database.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from groundsql.errors import DatabaseError, GroundsqlError, LLMError, UnsafeSQLError
from groundsql.llm import ChatRequest, Message
from groundsql.prompts import load_prompt
from groundsql.retrieval import Example, QueryBank
from groundsql.semantic.catalog import Catalog
from groundsql.semantic.compile import CompileError, compile_request
from groundsql.semantic.render import render_catalog
from groundsql.semantic.request import Request, as_asked, request_schema, unjoined_filters
from groundsql.semantic.scope import Scope, scoped
from groundsql.semantic.terms import Terms, terms_of
from groundsql.semantic.verified import Mention, find_mentions, infer_params, match_template, parameter_mentions
from groundsql.strategies.answer import Answer, Clarification, Trace
from groundsql.strategies.clarify import ask_back, last_year_of
from groundsql.strategies.context import Context, parse_json

__all__ = ["compiled", "shared_prompts"]

_MAX_TOKENS = 200  # a request is a few dozen tokens; a bound on a runaway answer
_MAX_LABELS = 2000  # labels read from one reference table


@dataclass(frozen=True)
class _Semantic:
    """What the path builds once per session."""

    name: str  # the pack's
    catalog: Catalog
    system: str  # the semantic model as the model reads it; "" when too large to show whole
    entity_dimensions: dict[str, tuple[str, ...]]  # entity table -> dimensions it names
    examples: QueryBank  # solved questions that carry their request
    templates: tuple[Example, ...]  # verified queries with parameters
    template_mentions: dict[int, list[Mention]]  # the values each one's own question names
    labels: tuple[tuple[str, str], ...]  # (reference table, label): values a question names
    last_year: int | None  # the last year the data holds (a question after it is out of scope)
    learned: int = 0  # how many of the context's confirmed examples (feedback) were read in


def compiled(question: str, ctx: Context) -> Answer:
    from groundsql.strategies.grounded import domain_for, link_entities, not_found

    trace = Trace(question, "compiled", ctx.on_step)
    domain = domain_for(ctx, trace)
    semantic = _semantic(ctx, domain, trace)
    if semantic is None:
        return _fallback(question, ctx, trace, "the domain pack has no semantic model (semantic.yaml)")
    entities, unresolved = link_entities(ctx, domain, question, trace)
    grounds: dict[str, Any] = {"pack": domain.pack.name, "entities": [
        {"mention": m.mention, "table": m.table, "key": m.key, "name": m.name, "confidence": m.confidence}
        for m in entities]}
    found: dict[str, list[str]] = {}
    for match in entities:
        for dimension in semantic.entity_dimensions.get(match.table.lower(), ()):
            names = found.setdefault(dimension, [])
            if match.name not in names:
                names.append(match.name)
    terms = terms_of(question, semantic.catalog, found, [m.mention for m in entities])
    catalog, scope = semantic.catalog, None
    if not semantic.system:  # a large model: the part the question speaks of, from here on
        scope = scoped(catalog, question, terms, ctx.settings.compiled.scope_tables, ctx.settings.compiled.areas)
        catalog, terms = scope.catalog, scope.terms
        grounds["scope"] = list(scope.tables)
        if scope.area:
            grounds["area"] = scope.area
    if ctx.settings.compiled.ask_back:
        with trace.step("ask back?") as step:
            clarification = ask_back(question, catalog, terms, domain.entities, entities, semantic.last_year)
            step["asks"] = clarification.why if clarification else None
        if clarification is not None:
            return _clarify(trace, clarification, grounds)
    if unresolved and ctx.settings.grounded.stop_on_unknown_entity:
        grounds["unresolved"] = [vars(u) for u in unresolved]
        lacks = Clarification("out_of_scope", not_found(unresolved), about=unresolved[0].mention,
                              why="a name the database does not hold")
        return _clarify(trace, lacks, grounds)

    verified = _verified(ctx, semantic, question, entities, trace, grounds)
    if verified is not None and verified.ok:
        return verified
    chat = _chat(ctx, semantic, catalog, question, terms, entities, scope)
    request, why, reply = _ask(ctx, chat, trace, "semantic request")
    for attempt in range(ctx.settings.compiled.retries + 1):
        if request is not None:
            answer = _run(ctx, semantic, as_asked(request, terms, semantic.catalog), trace, grounds,
                          _unused_years(request, terms))
            if answer.ok:
                return answer
            why, grounds = answer.error or "the compiled query failed", answer.grounds
        if attempt == ctx.settings.compiled.retries or reply is None:
            break
        # One more turn with what went wrong: cheaper than the grounded pipeline by far. A
        # filter the request's measures are not joined to is not offered again (the 1.5B model
        # repeated a sales order's date for purchase orders, told it was unreachable).
        follow_up = load_prompt("semantic_revise").render(error=why)
        update: dict[str, Any] = {"messages": (*chat.messages, Message(role="assistant", content=reply), *follow_up)}
        rows, unjoined = unjoined_filters(semantic.catalog, request) if request is not None else ([], [])
        if unjoined:
            update["json_schema"] = request_schema(catalog, terms, rows)
        chat = chat.model_copy(update=update)
        request, why, reply = _ask(ctx, chat, trace, "revise request", **({"not_offered": unjoined} if unjoined else {}))
    return _fallback(question, ctx, trace, why, grounds)


def _semantic(ctx: Context, domain: Any, trace: Trace) -> _Semantic | None:
    if "compiled" in ctx.resources:
        semantic = ctx.resources["compiled"]
        return _with_learned(ctx, semantic, trace) if semantic is not None else None
    from groundsql.semantic.load import catalog_for, check_data

    pack = domain.pack
    semantic = None
    if pack.semantic is not None:
        with trace.step("semantic model") as step:
            entity_tables = tuple(e.table for e in pack.entities)
            catalog = catalog_for(pack.semantic, ctx.schema, pack.semantic_path, entity_tables)
            check_data(catalog, ctx.db, pack.semantic_path)
            by_entity: dict[str, list[str]] = {}
            for ref in catalog.of_kind("dimension"):
                entity = ref.source.entity  # type: ignore[union-attr]
                if entity:
                    by_entity.setdefault(entity.lower(), []).append(ref.name)
            # A warehouse's model is shown in part, per question (semantic/scope.py).
            whole = len(catalog.fields) <= ctx.settings.compiled.whole_catalog_fields
            system = _system(pack.name, render_catalog(catalog)) if whole else ""
            bank = QueryBank([e for e in domain.bank.examples if e.request], domain.bank.embedder)
            labels = _labels(ctx, pack)
            templates = tuple(e for e in domain.bank.examples if e.params)
            where = {i: _question_mentions(e, domain, labels) for i, e in enumerate(templates)}
            unusable = [templates[i].question for i, found in where.items() if found is None]
            semantic = _Semantic(pack.name, catalog, system, {k: tuple(v) for k, v in by_entity.items()},
                                 bank, templates, {i: m for i, m in where.items() if m is not None}, labels,
                                 last_year_of(catalog, ctx.db))
            step.update(verified_queries=len(templates) - len(unusable))
            if unusable:
                step["verified_queries_unusable"] = unusable
            step.update(fields=len(catalog.fields), drafted=pack.semantic.drafted, shown_whole=whole)
    ctx.resources["compiled"] = semantic
    return _with_learned(ctx, semantic, trace) if semantic is not None else None


def _with_learned(ctx: Context, semantic: _Semantic, trace: Trace) -> _Semantic:
    """The examples people confirmed since (feedback), each read back into a request
    (semantic/decompile.py: kept only where the compiled request gives the SQL's rows), among
    the solved examples the model is shown: a confirmed answer teaches the compiled path too.
    One confirmed by an editor whose question names values its SQL holds (a name, a year, a
    label) is also a verified query: a later question like it, with other values, is answered
    by its SQL, trusted, as the pack's verified queries are."""
    from groundsql.semantic.decompile import verified_request

    new = ctx.learned[semantic.learned:]
    if not new:
        return semantic
    with trace.step("learned examples") as step:
        read, templates, mentions = [], list(semantic.templates), dict(semantic.template_mentions)
        domain = ctx.resources.get("grounded")
        label_columns = frozenset(ref.label.lower() for ref in domain.pack.references) if domain else frozenset()
        for example in new:  # a question and the SQL a person confirmed (Session.learn): no request
            request = verified_request(example.sql, semantic.catalog, ctx.db)
            if request is not None:
                if request.limit == ctx.settings.safety.default_limit:
                    request = request.model_copy(update={"limit": None})  # the validator's LIMIT, not the question's
                read.append(replace(example, request=request.to_json()))
            template = _learned_template(ctx, semantic, example, label_columns)
            if template is not None:
                mentions[len(templates)] = template[1]
                templates.append(template[0])
        step.update(confirmed=len(new), as_requests=len(read),
                    as_verified_queries=len(templates) - len(semantic.templates))
    semantic = replace(semantic, examples=semantic.examples.extended(read), templates=tuple(templates),
                       template_mentions=mentions, learned=len(ctx.learned))
    ctx.resources["compiled"] = semantic
    return semantic


def _learned_template(ctx: Context, semantic: _Semantic, example: Example,
                      label_columns: frozenset[str]) -> tuple[Example, list[Mention]] | None:
    """A confirmed example as a verified query, with the parameters its question and SQL share;
    None when it was not confirmed by an editor, names no value of its SQL, or is off."""
    domain = ctx.resources.get("grounded")
    if not example.verified_by or not ctx.settings.compiled.learned_verified or domain is None:
        return None
    params = infer_params(example.question, example.sql, ctx.db.dialect, label_columns)
    if not params:
        return None
    template = replace(example, params=params)
    found = _question_mentions(template, domain, semantic.labels)
    return (template, found) if found is not None else None


def _labels(ctx: Context, pack: Any) -> tuple[tuple[str, str], ...]:
    """The labels of the pack's reference tables: values a verified query's question names."""
    labels = []
    for ref in pack.references:
        sql = f"SELECT DISTINCT {ctx.db.quote(ref.label)} FROM {ctx.db.quote(ref.table)}"
        try:
            rows = ctx.db.execute(sql, max_rows=_MAX_LABELS).rows
        except GroundsqlError:
            continue
        labels += [(ref.table, str(v)) for (v,) in rows if isinstance(v, str) and 2 < len(v) <= 60]
    return tuple(labels)


def _question_mentions(example: Example, domain: Any, labels: tuple[tuple[str, str], ...]) -> list[Mention] | None:
    """The values a verified query's own question names; None when one of its parameters is
    not among them (the query cannot be matched by its question)."""
    entities = domain.entities.link(example.question)[0] if domain.entities is not None else []
    mentions = find_mentions(example.question, entities, labels)
    return mentions if parameter_mentions(example.params, mentions) is not None else None


def _verified(ctx: Context, semantic: _Semantic, question: str, entities: list[Any], trace: Trace,
              grounds: dict[str, Any]) -> Answer | None:
    """The answer of the verified query the question fits, run with its values; None when
    none fits (or its filled SQL fails: then the request path goes on)."""
    if not semantic.templates or not ctx.settings.compiled.verified:
        return None
    with trace.step("verified query") as step:
        mentions = find_mentions(question, entities, semantic.labels)
        usable = {i: found for i, found in semantic.template_mentions.items()
                  if ctx.held_out is None or semantic.templates[i].question != ctx.held_out}
        match = match_template(question, mentions, semantic.templates, usable, ctx.db.dialect,
                               ctx.settings.compiled.verified_threshold)
        step["matched"] = match.example.question if match else None
        if match is None:
            return None
        step.update(score=match.score, values=match.values)
    example = match.example
    record = {"question": example.question, "values": match.values, "score": match.score,
              "verified_by": example.verified_by, "verified_at": example.verified_at,
              "drafted": example.drafted}
    grounds = {**grounds, "path": "verified", "trusted": not example.drafted, "verified_query": record}
    with trace.step("validate+execute", sql=match.sql, written_by="groundsql") as step:
        try:
            checked, result = ctx.run_sql(match.sql)
        except (UnsafeSQLError, DatabaseError) as err:
            step["error"] = str(err)
            return None
        step.update(sql=checked.sql, rows=len(result.rows), limit_added=checked.limit_added)
    return trace.finish(sql=checked.sql, columns=result.columns, rows=result.rows, truncated=result.truncated,
                        grounds=grounds)


def _chat(ctx: Context, semantic: _Semantic, catalog: Catalog, question: str, terms: Terms,
          entities: list[Any], scope: Scope | None = None) -> ChatRequest:
    """The request for a semantic request: the semantic model (shared by every question; on
    a large one, the question's area, shared by the area's questions, and the tables beyond it
    the question speaks of; or its scope alone), the nearest solved examples with their
    requests, the question and the names found in it, under a JSON schema of what the
    question grounds."""
    schema = request_schema(catalog, terms)
    lines = [f'"{m.mention}" is {m.name!r} ({" or ".join(semantic.entity_dimensions.get(m.table.lower(), ()))})'
             for m in entities if semantic.entity_dimensions.get(m.table.lower())]
    found_text = ("Names found in the question: " + "; ".join(lines) + "\n") if lines else ""
    examples = semantic.examples.nearest(question, ctx.settings.compiled.k, held_out=ctx.held_out)
    shown = "".join(f"Question: {e.question}\nRequest: {json.dumps(e.request, ensure_ascii=False)}\n\n"
                    for e in examples)
    shown_model, more = "" if semantic.system else render_catalog(catalog), ""
    if scope is not None and scope.shared is not None:
        shown_model = scope.shared
        if scope.extra is not None:
            more = f"More of the semantic model, for this question:\n{render_catalog(scope.extra, whole=False)}\n\n"
    # The whole model is rendered once for every question.
    system = Message(role="system", content=semantic.system or _system(semantic.name, shown_model))
    user = load_prompt("semantic_request").render(name=semantic.name, catalog="", more=more, examples=shown,
                                                  question=question.strip(), found=found_text)[1]
    return ChatRequest(messages=(system, user),
                       temperature=0.0, max_tokens=_MAX_TOKENS, seed=ctx.settings.llm.seed, json_schema=schema)


def _system(name: str, shown_model: str) -> str:
    """The system message: the instructions and the model shown (whole, or an area's part)."""
    return load_prompt("semantic_request").render(name=name, catalog=shown_model, more="", examples="",
                                                  question="", found="")[0].content


def shared_prompts(ctx: Context) -> list[str]:
    """The system messages the database's questions start from: its whole semantic model, or
    each subject area of a large one (semantic/scope.py). Empty without a semantic model."""
    from groundsql.semantic.scope import area_text, areas
    from groundsql.strategies.grounded import domain_for

    trace = Trace("", "compiled")
    semantic = _semantic(ctx, domain_for(ctx, trace), trace)
    if semantic is None:
        return []
    if semantic.system:
        return [semantic.system]
    if not ctx.settings.compiled.areas:
        return []
    texts = (area_text(semantic.catalog, area) for area in areas(semantic.catalog))
    return [_system(semantic.name, text) for text in texts if text is not None]


def _ask(ctx: Context, chat: ChatRequest, trace: Trace, name: str,
         **detail: Any) -> tuple[Request | None, str, str | None]:
    """The model's semantic request (or None and why there is none) and its reply's text."""
    with trace.step(name, **detail) as step:
        try:
            completion = ctx.llm.complete(chat)
        except LLMError as err:
            step["error"] = str(err)
            return None, f"the language model failed: {err}", None
        step["calls"].append(completion)
        raw = parse_json(completion.text)
        step["answer"] = raw if raw is not None else completion.text
        if raw is None:
            return None, "the model's answer was not a JSON request", completion.text
        try:
            chosen = Request.model_validate(raw)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return None, f"the model's request does not fit the schema ({where}: {first['msg']})", completion.text
        step["request"] = chosen.to_json()
    return chosen, "", completion.text


def _clarify(trace: Trace, clarification: Clarification, grounds: dict[str, Any]) -> Answer:
    """A question back (no SQL, no error), or what the data lacks (as the error)."""
    grounds = {**grounds, "path": "clarify", "clarification": clarification.why}
    error = clarification.text if clarification.kind == "out_of_scope" else None
    return trace.finish(sql=None, error=error, grounds=grounds, clarification=clarification)


def _unused_years(request: Request, terms: Terms) -> list[int]:
    """The years the question states that the request uses nowhere (the model left the
    filter out): the answer then covers every period, which the grounds must say."""
    said = json.dumps(request.to_json())
    return [year for year in dict.fromkeys(terms.years or ()) if str(year) not in said]


def _run(ctx: Context, semantic: _Semantic, request: Request, trace: Trace, grounds: dict[str, Any],
         unused_years: Sequence[int] = ()) -> Answer:
    grounds = {**grounds, "path": "semantic", "request": request.to_json()}
    with trace.step("compile") as step:
        try:
            compiled_sql = compile_request(semantic.catalog, request)
        except CompileError as err:
            step["error"] = str(err)
            return trace.finish(sql=None, error=f"the request cannot be compiled: {err}", grounds=grounds)
        step.update(sql=compiled_sql.sql, base=compiled_sql.base, notes=list(compiled_sql.notes))
    assumed = list(compiled_sql.notes)
    if unused_years:
        years = " and ".join(map(str, unused_years))
        assumed.append(f"the question names {years}, but the request is not limited to it: the figures cover "
                       "every period the data holds")
    if assumed:
        grounds["assumed"] = assumed
    with trace.step("validate+execute", sql=compiled_sql.sql, written_by="groundsql") as step:
        try:
            checked, result = ctx.run_sql(compiled_sql.sql)
        except (UnsafeSQLError, DatabaseError) as err:
            step["error"] = str(err)
            return trace.finish(sql=compiled_sql.sql, error=f"the compiled query failed: {err}", grounds=grounds)
        step.update(sql=checked.sql, rows=len(result.rows), limit_added=checked.limit_added)
    if _no_value(result.rows):
        with trace.step("why no value") as step:
            step["why"] = grounds["no_value"] = _why_no_value(ctx, semantic, request)
    return trace.finish(sql=checked.sql, columns=result.columns, rows=result.rows, truncated=result.truncated,
                        grounds=grounds)


def _no_value(rows: tuple[tuple[Any, ...], ...]) -> bool:
    """No row, or rows whose every value is NULL: an answer that is not a value."""
    return all(v is None for row in rows for v in row)


def _why_no_value(ctx: Context, semantic: _Semantic, request: Request) -> str:
    """Why a compiled request found no value, where the data shows it: the same request
    without its currency conversion, or without one of its filters, finds one."""
    def finds(changed: Request) -> int:
        try:
            rows = ctx.db.execute(compile_request(semantic.catalog, changed).sql, max_rows=1000).rows
        except (CompileError, GroundsqlError):
            return 0
        return 0 if _no_value(rows) else len(rows)

    if request.currency is not None and finds(request.model_copy(update={"currency": None})):
        return (f"the amounts exist, but no exchange rate converts them into {_codes(request.currency)} for "
                "that period: ask in the reporting currency, or for a period the rates cover")
    for i, condition in enumerate(request.where):
        found = finds(request.model_copy(update={"where": request.where[:i] + request.where[i + 1:]}))
        if found:
            shown = condition.value if not isinstance(condition.value, list) else ", ".join(map(str, condition.value))
            return (f"no data where {condition.field} {condition.op} {shown}; without that condition the "
                    f"request finds {found}{'+' if found >= 1000 else ''} row{'s' * (found != 1)}")
    return "the data holds no row this request matches"


def _codes(currency: str | tuple[str, str]) -> str:
    return currency if isinstance(currency, str) else " and ".join(currency)


def _fallback(question: str, ctx: Context, trace: Trace, why: str,
              grounds: dict[str, Any] | None = None) -> Answer:
    """Today's grounded pipeline, with the reason the compiled path gave way (or, with
    compiled.fallback off, the reason alone)."""
    from dataclasses import replace

    from groundsql.strategies.grounded import grounded

    if not ctx.settings.compiled.fallback:
        return trace.finish(sql=None, error=why, grounds={**(grounds or {}), "path": "none", "fallback": why})
    answer = grounded(question, ctx)
    steps = (*trace.steps, *answer.steps)
    merged = {**(grounds or {}), **answer.grounds, "path": "generated", "fallback": why}
    return replace(answer, strategy="compiled", steps=steps, grounds=merged,
                   elapsed_s=trace.amend(answer).elapsed_s)
