"""The grounded strategy (FLINT): ground every value before generating, then validate, execute
and reflect.

    question ─┬─ lookup agent (reference tables -> IDs) ─┐
              └─ retrieval (similar solved questions) ───┤   concurrently
              ┌─ entity linking (names -> keys) ─────────┤   concurrently
              └─ schema linking (model + FK Steiner tree)┘
              -> generation -> validator -> read-only execution -> reflection on error / empty
                 / a resolved value left unused

Everything domain-specific comes from the domain pack (packs/): no code changes per database.
All stages share one system prompt (the domain: schema overview, reference tables, rules), so
a local backend computes it once per database and every stage pays only for its own turn.
Each stage can be switched off (settings.grounded) for ablations.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx

from groundsql.deadline import in_context
from groundsql.errors import ConfigError, LLMError
from groundsql.grounding.entities import MAX_NAMES, EntityIndex, EntityMatch, Unresolved
from groundsql.grounding.usage import idle_joins, unused_constraints, unused_text
from groundsql.grounding.values import looks_empty, missing_filter_values, missing_values_text
from groundsql.grounding.lookup import (Constraint, ReferenceRows, constraints_from, read_reference,
                                        rows_prompt)
from groundsql.llm import ChatRequest, Message
from groundsql.packs.load import PACK_FILE, load_pack
from groundsql.packs.model import DomainPack
from groundsql.prompts import load_prompt
from groundsql.retrieval import Example, QueryBank, load_embedder
from groundsql.schema import Schema, render_schema
from groundsql.schema.linking import LinkedSchema, connect, join_graph
from groundsql.schema.shortlist import Shortlist, words
from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import (Context, constrained, examples_text, generate_and_execute, name_list,
                                           parse_json)

__all__ = ["grounded", "ground_values", "demo_pack_path", "domain_for", "link_entities", "not_found"]


def demo_pack_path() -> Path:
    return Path(str(resources.files("groundsql.demo").joinpath("pack")))


@dataclass(frozen=True)
class _Domain:
    """What the strategy builds once per session: the pack and its indexes."""

    pack: DomainPack
    schema: Schema  # the database's, with the pack's descriptions
    text: str  # the system prompt every stage shares
    graph: nx.Graph
    entities: EntityIndex | None
    bank: QueryBank


def grounded(question: str, ctx: Context) -> Answer:
    cfg = ctx.settings.grounded
    trace = Trace(question, "grounded", ctx.on_step)
    domain = domain_for(ctx, trace)
    grounds: dict[str, Any] = {"pack": domain.pack.name}
    if len(domain.schema.tables) > cfg.overview_tables:
        domain = _shortlisted(ctx, domain, question, trace)
        grounds["shortlist"] = [t.name for t in domain.schema.tables]
    with ThreadPoolExecutor(max_workers=2) as pool:
        lookup = pool.submit(in_context(_lookup), ctx, domain, question, trace) if cfg.lookup else None
        retrieval = pool.submit(in_context(_retrieve), ctx, domain, question, trace) if cfg.retrieval else None
        constraints = lookup.result() if lookup else []
        examples = retrieval.result() if retrieval else []
        linking = pool.submit(in_context(link_entities), ctx, domain, question, trace) if cfg.entity_linking else None
        # Linking narrows a big schema; a small one is shown whole (no call, nothing to lose).
        small = _small(ctx, domain.schema)
        schema_link = pool.submit(in_context(_link_schema), ctx, domain, question, constraints, trace) \
            if cfg.schema_linking and not small else None
        entities, unresolved = linking.result() if linking else ([], [])
        linked, why = schema_link.result() if schema_link else _whole_schema(domain)
    constraints = constraints + [_entity_constraint(m) for m in entities]
    grounds.update(
        constraints=[_constraint_record(c) for c in constraints],
        unresolved=[vars(u) for u in unresolved],
        tables=[{"table": t, "why": why.get(t, "")} for t in linked.tables],
        joins=[str(j) for j in linked.joins],
        examples=[e.question for e in examples],
        retrieval=domain.bank.method if cfg.retrieval else "off",
    )
    if unresolved and cfg.stop_on_unknown_entity:
        return trace.finish(sql=None, error=not_found(unresolved), grounds=grounds)
    request = _generation_request(ctx, domain, question, linked, constraints, examples)
    # The grammar admits the tables schema linking kept, and the resolved values of their keys.
    resolved: dict[str, list[Any]] = {}
    for c in constraints:
        resolved.setdefault(c.column, []).append(c.value)
    request, constraint = constrained(ctx, request, domain.schema.restrict(linked.tables), resolved)
    retries = ctx.settings.generation.reflection_retries if cfg.reflection else 0
    answer = generate_and_execute(ctx, request, trace, retries=retries, constraint=constraint, grounds=grounds)
    if answer.ok:
        answer = _check_usage(ctx, request, answer, constraints, trace, grounds, constraint)
    if cfg.reflection and answer.ok and looks_empty(answer.rows):
        answer = _reflect_on_missing_values(ctx, request, answer, trace, grounds, constraint)
    return answer


def ground_values(phrase: str, ctx: Context) -> dict[str, Any]:
    """The grounding stages alone: the IDs a phrase resolves to in the reference tables (the
    lookup agent) and the entities it names, each with the row it came from, and the names
    that matched nothing. What the MCP `lookup` tool returns."""
    trace = Trace(phrase, "lookup", ctx.on_step)
    domain = domain_for(ctx, trace)
    constraints = _lookup(ctx, domain, phrase, trace) if ctx.settings.grounded.lookup else []
    entities, unresolved = link_entities(ctx, domain, phrase, trace) if ctx.settings.grounded.entity_linking \
        else ([], [])
    found = constraints + [_entity_constraint(m) for m in entities]
    answer = trace.finish(sql=None)
    # A stage whose model call failed found nothing; say so rather than return less in silence.
    errors = [f"{step.name}: {step.detail['error']}" for step in answer.steps if "error" in step.detail]
    return {"constraints": [_constraint_record(c) for c in found], "unresolved": [vars(u) for u in unresolved],
            "errors": errors, "calls": len(answer.calls)}


# -- the domain, built once per session -------------------------------------------------------


def domain_for(ctx: Context, trace: Trace) -> _Domain:
    cached = ctx.resources.get("grounded")
    if cached is not None:
        return cached
    with trace.step("domain") as step:
        pack = pack_for(ctx)
        schema = _annotated(ctx.schema, pack)
        documented = [(j.left, j.right) for j in pack.schema_docs.joins]
        known = _known_words(ctx, pack, schema)
        entities = (EntityIndex.build(ctx.db, pack.entities, known, ctx.settings.grounded.entity_threshold)
                    if pack.entities else None)
        embedder = load_embedder() if ctx.settings.grounded.embeddings else None
        domain = _Domain(pack, schema, _domain_text(ctx, pack, schema), join_graph(schema, documented),
                         entities, QueryBank((*pack.bank, *ctx.learned), embedder))
        step.update(pack=pack.name, references=len(pack.references),
                    entity_names=len(entities.names) if entities else 0, bank=len(pack.bank),
                    retrieval=domain.bank.method)
        if entities is not None and entities.truncated:
            step["entity_names_cut_short"] = (f"only the first {MAX_NAMES:,} names of "
                                              f"{', '.join(entities.truncated)} are linked")
    ctx.resources["grounded"] = domain
    return domain


def pack_for(ctx: Context) -> DomainPack:
    """The domain pack of the context's database: the session's, the configured folder's, or the
    demo's; a ConfigError says how to draft one when there is none."""
    if ctx.pack is not None:
        return ctx.pack
    folder = pack_folder(ctx)
    if folder is not None:
        return load_pack(folder)
    raise ConfigError("the grounded strategy needs a domain pack for this database: --pack DIR "
                      "(draft one with `groundsql init --db URL --out DIR`)")


def pack_folder(ctx: Context) -> Path | None:
    """The folder of the context's domain pack: the configured one, or the demo's on the demo."""
    folder = ctx.settings.grounded.pack
    if folder is not None:
        # A pack, or a folder of packs named after their databases (an evaluation over many).
        own = Path(folder) / _database_name(ctx)
        return own if (own / PACK_FILE).is_file() else Path(folder)
    return demo_pack_path() if _is_demo(ctx) else None


def _database_name(ctx: Context) -> str:
    """A SQLite file's stem, or the database name of a server URL."""
    database = ctx.db.url.database or ""
    return Path(database).stem if ctx.db.dialect in ("sqlite", "duckdb") else database


def _is_demo(ctx: Context) -> bool:
    from groundsql.config import data_home
    from groundsql.demo import DEMO_DB_FILENAME

    if ctx.db.dialect != "sqlite" or not ctx.db.url.database:
        return False
    return Path(ctx.db.url.database).resolve() == (data_home() / "demo" / DEMO_DB_FILENAME).resolve()


def _annotated(schema: Schema, pack: DomainPack) -> Schema:
    """The schema with the pack's table and column descriptions."""
    tables = []
    for table in schema.tables:
        doc = pack.table_doc(table.name)
        if doc is None:
            tables.append(table)
            continue
        notes = {k.lower(): v for k, v in doc.columns.items()}
        columns = tuple(replace(c, description=notes.get(c.name.lower(), c.description))
                        for c in table.columns)
        tables.append(replace(table, columns=columns, description=doc.description or table.description))
    return Schema(schema.dialect, tuple(tables), schema.name)


_VALUES_PER_COLUMN = 2000  # distinct values of one text column read as known words


def _known_words(ctx: Context, pack: DomainPack, schema: Schema) -> list[str]:
    """Words of the domain that are not entity names: values of the text columns (reference
    labels, countries, genres ...) and the names of tables and columns. A capitalised word of
    a question that is none of these, nor an entity name, is an unknown entity."""
    words: list[str] = []
    names = {(e.table.lower(), n.lower()) for e in pack.entities for n in e.names}
    for table in schema.tables:
        names = [table.name, *table.name.split("_"), *(c.name for c in table.columns)]
        names += [w for c in table.columns for w in c.name.split("_")]
        # "airport" of the table airports: the singular is a schema word too.
        words += names + [n[:-1] for n in names if n.lower().endswith("s") and len(n) > 3]
        for column in table.columns:
            if not column.is_text or (table.name.lower(), column.name.lower()) in names:
                continue
            sql = (f"SELECT DISTINCT {ctx.db.quote(column.name)} FROM {ctx.db.quote(table.name)} "
                   f"WHERE {ctx.db.quote(column.name)} IS NOT NULL")
            rows = ctx.db.execute(sql, max_rows=_VALUES_PER_COLUMN).rows
            words += [str(v) for (v,) in rows if isinstance(v, str) and len(v) <= 80]
    return words


def _domain_text(ctx: Context, pack: DomainPack, schema: Schema) -> str:
    about = "" if pack.description.upper().startswith("TODO") else pack.description
    if _small(ctx, schema):
        # Shown whole, once, in full detail, under zero-shot's own instructions: on a small
        # schema with nothing to ground the strategy asks exactly what zero-shot asks.
        gen = ctx.settings.generation
        system, _ = load_prompt("generate_sql").render(
            dialect=ctx.dialect_label, examples="", question="",
            schema=render_schema(schema, gen.schema_format, with_examples=gen.with_examples))
        lines = [system.content]
        if about:
            lines += ["", f"The {pack.name} database: {about}"]
    else:  # an overview; the tables a question needs are shown in full in its own turn
        lines = [f"You are an expert data analyst who writes {ctx.dialect_label} SQL for the "
                 f"{pack.name} database. {about}".strip(), "", "Tables (columns):"]
        for table in schema.tables:
            drafted = table.description.upper().startswith("TODO")
            about = f" - {table.description}" if table.description and not drafted else ""
            lines.append(f"- {table.name}{about} ({', '.join(c.name for c in table.columns)})")
    if pack.references:
        lines += ["", "Reference tables (a concept's id -> its label):"]
        for ref in pack.references:
            about = f": {ref.description}" if ref.description else ""
            lines.append(f"- {ref.table} ({ref.key} -> {ref.label}){about}")
    rules = [*pack.rules.schema_linking, *pack.rules.generation]
    if rules:
        lines += ["", "Rules of this domain:", *(f"- {r}" for r in rules)]
    return "\n".join(lines)


# -- the stages -------------------------------------------------------------------------------


def _ask_json(ctx: Context, prompt: str, schema: dict, step: dict, **values: Any) -> Any:
    """One structured-output call; the parsed JSON, or None when the model's answer is not."""
    request = load_prompt(prompt).request(**values).model_copy(update={
        "temperature": 0.0, "max_tokens": 256, "seed": ctx.settings.llm.seed, "json_schema": schema})
    try:
        completion = ctx.llm.complete(request)
    except LLMError as err:
        step["error"] = str(err)
        return None
    step["calls"].append(completion)
    return parse_json(completion.text)


# Structured outputs are constrained by a grammar (context.name_list): real names, bounded lists.
_MAX_PICKED = 4
_MAX_LINKED = 8
_MAX_CONSTRAINTS = 8


def _pick_output(pack: DomainPack) -> dict:
    return {"type": "object", "required": ["tables"],
            "properties": {"tables": name_list([r.table for r in pack.references], _MAX_PICKED)}}


def _constraints_output(tables: list[ReferenceRows]) -> dict:
    item = {"type": "object", "required": ["table", "id", "phrase"], "properties": {
        "table": {"type": "string", "enum": sorted({t.ref.table for t in tables})},
        "id": {"type": ["integer", "string"]}, "phrase": {"type": "string", "maxLength": 80}}}
    return {"type": "object", "required": ["constraints"], "properties": {
        "constraints": {"type": "array", "items": item, "maxItems": _MAX_CONSTRAINTS}}}


def _linking_output(schema: Schema) -> dict:
    return {"type": "object", "required": ["tables", "reason"], "properties": {
        "tables": name_list([t.name for t in schema.tables], _MAX_LINKED),
        "reason": {"type": "string", "maxLength": 200}}}


def _lookup(ctx: Context, domain: _Domain, question: str, trace: Trace) -> list[Constraint]:
    pack = domain.pack
    if not pack.references:
        return []  # nothing to look up: no model call
    with trace.step("lookup: pick reference tables") as step:
        picked = _ask_json(ctx, "grounded_pick", _pick_output(pack), step, domain=domain.text,
                           question=question.strip())
        names = picked.get("tables", []) if isinstance(picked, dict) else []
        refs = [r for r in (pack.reference(str(n)) for n in names if isinstance(n, str)) if r]
        refs = list({r.table: r for r in refs}.values())
        step["tables"] = [r.table for r in refs]
    if not refs:
        return []
    with trace.step("lookup: read rows") as step:
        limit = ctx.settings.grounded.max_reference_rows
        tables: list[ReferenceRows] = [read_reference(ctx.db, r, question, limit) for r in refs]
        step["rows"] = {t.ref.table: f"{len(t.rows)} of {t.total}" for t in tables}
    with trace.step("lookup: write constraints") as step:
        answer = _ask_json(ctx, "grounded_constraints", _constraints_output(tables), step,
                           domain=domain.text, question=question.strip(), rows=rows_prompt(tables))
        constraints, problems = constraints_from(answer, tables, question)
        step["constraints"] = [c.sql() for c in constraints]
        if problems:
            step["dropped"] = problems
    return constraints


def _retrieve(ctx: Context, domain: _Domain, question: str, trace: Trace) -> list[Example]:
    with trace.step("retrieve", k=ctx.settings.grounded.k, method=domain.bank.method) as step:
        examples = domain.bank.nearest(question, ctx.settings.grounded.k, held_out=ctx.held_out)
        step["examples"] = [e.question for e in examples]
    return examples


def link_entities(ctx: Context, domain: _Domain, question: str,
                   trace: Trace) -> tuple[list[EntityMatch], list[Unresolved]]:
    if domain.entities is None:
        return [], []
    with trace.step("link entities") as step:
        matches, unresolved = domain.entities.link(question)
        step["matches"] = [f"{m.mention!r} -> {m.table}.{m.key_column} = {m.key} ({m.name}, "
                           f"{m.confidence:.2f})" for m in matches]
        if unresolved:
            step["unresolved"] = [u.mention for u in unresolved]
    return matches, unresolved


def _link_schema(ctx: Context, domain: _Domain, question: str, constraints: list[Constraint],
                 trace: Trace) -> tuple[LinkedSchema, dict[str, str]]:
    with trace.step("link schema") as step:
        answer = _ask_json(ctx, "grounded_link", _linking_output(domain.schema), step, domain=domain.text,
                           question=question.strip(), grounds=_grounds_text(constraints))
        chosen = answer.get("tables", []) if isinstance(answer, dict) else []
        chosen = [str(t) for t in chosen if isinstance(t, str)]
        reason = str(answer.get("reason", "")) if isinstance(answer, dict) else ""
        why = {}
        for table in chosen:
            why[table.lower()] = f"chosen by the model: {reason}" if reason else "chosen by the model"
        for c in constraints:
            chosen.append(c.table)
            why.setdefault(c.table.lower(), f"holds the resolved value {c.label!r}")
        if not chosen:  # no usable answer: fall back to the whole schema
            linked, full_why = _whole_schema(domain)
            step["fallback"] = "the model chose no table: the whole schema"
            return linked, full_why
        linked = connect(domain.schema, chosen, domain.graph)
        named = {}
        for table in linked.tables:
            named[table] = why.get(table.lower(), "")
        for bridge in linked.bridges:
            named[bridge] = "bridge: joins the chosen tables (foreign-key path)"
        step.update(tables=list(linked.tables), bridges=list(linked.bridges),
                    unconnected=list(linked.unconnected))
    return linked, named


def _shortlisted(ctx: Context, domain: _Domain, question: str, trace: Trace) -> _Domain:
    """The domain as one question of a warehouse sees it: the tables its words and the names
    it mentions point at (schema/shortlist.py), the reference tables those refer to or its
    words name, and the system prompt of only those."""
    cfg = ctx.settings.grounded
    with trace.step("shortlist") as step:
        shortlist = ctx.resources.get("grounded_shortlist")
        if shortlist is None:
            shortlist = Shortlist({t.name: words(" ".join([t.name, t.description, *(
                f"{c.name} {c.description}" for c in t.columns)])) for t in domain.schema.tables})
            ctx.resources["grounded_shortlist"] = shortlist
        # Linked again by its own stage later: tens of milliseconds, and the stages stay apart.
        named = [m.table for m in domain.entities.link(question)[0]] if domain.entities is not None else []
        said = words(question)
        references = {r.table.lower(): r for r in domain.pack.references}
        best = [t for t, _ in shortlist.ranked(said, named) if t.lower() not in references][:cfg.shortlist_tables]
        # The tables that join them come too (the foreign-key graph's Steiner tree).
        linked = connect(domain.schema, best, domain.graph)
        tables = [*linked.tables, *linked.unconnected]
        by_name = {t.name.lower(): t for t in domain.schema.tables}
        used = {fk.ref_table.lower() for t in tables for fk in by_name[t.lower()].foreign_keys}
        ranked_refs = [t for t, score in shortlist.ranked(said, among=[r.table for r in references.values()])
                       if score > 0]
        refs = [r for name, r in references.items() if name in used or r.table in ranked_refs[:cfg.shortlist_tables]]
        kept = [*tables, *(r.table for r in refs)]
        schema = domain.schema.restrict(kept)
        pack = domain.pack.model_copy(update={"references": tuple(refs)})
        documented = [(j.left, j.right) for j in pack.schema_docs.joins]
        step.update(tables=tables, references=[r.table for r in refs])
    return replace(domain, pack=pack, schema=schema, text=_domain_text(ctx, pack, schema),
                   graph=join_graph(schema, documented))


def _small(ctx: Context, schema: Schema) -> bool:
    return len(schema.tables) <= ctx.settings.grounded.link_above_tables


def _whole_schema(domain: _Domain) -> tuple[LinkedSchema, dict[str, str]]:
    tables = tuple(t.name for t in domain.schema.tables)
    joins = tuple(sorted((j for _, _, d in domain.graph.edges(data=True) for j in d["joins"]), key=str))
    return LinkedSchema(tables, (), joins), {t: "the whole schema is shown" for t in tables}


def _entity_constraint(match: EntityMatch) -> Constraint:
    return Constraint(table=match.table, column=match.key_column, value=match.key, label=match.name,
                      phrase=match.mention, source="entity", confidence=match.confidence,
                      row={match.key_column: match.key, match.name_column: match.name})


def _constraint_record(c: Constraint) -> dict[str, Any]:
    return {"filter": c.sql(), "table": c.table, "column": c.column, "id": c.value,
            "label": c.label, "phrase": c.phrase, "source": c.source,
            "confidence": c.confidence, "row": c.row}


def _grounds_text(constraints: list[Constraint]) -> str:
    if not constraints:
        return ""
    lines = [f"- \"{c.phrase}\" is {c.sql()} ({c.label})" for c in constraints]
    return "Resolved values:\n" + "\n".join(lines) + "\n"


def _generation_request(ctx: Context, domain: _Domain, question: str, linked: LinkedSchema,
                        constraints: list[Constraint], examples: list[Example]) -> ChatRequest:
    if _small(ctx, domain.schema):
        # Zero-shot's turn (the system part already is zero-shot's), with what grounding found
        # before the question. The label columns are in the prompt, so the model may filter on
        # a label or on its id: no instruction to prefer ids.
        evidence = _grounds_text(constraints) + examples_text(ctx, examples)
        _, user = load_prompt("generate_sql").render(
            dialect=ctx.dialect_label, schema="", question=question.strip(), examples=evidence)
        request = ChatRequest(messages=(Message(role="system", content=domain.text), user))
    else:
        gen = ctx.settings.generation
        if len(linked.tables) < len(domain.schema.tables):
            tables = render_schema(domain.schema.restrict(linked.tables), gen.schema_format,
                                   with_examples=gen.with_examples)
            joins = "\n".join(f"- {j}" for j in linked.joins) or "- (one table: no joins)"
        else:  # nothing linked (an ablation): the overview is all there is; no table in detail
            tables, joins = "every table listed above", "\n".join(f"- {j}" for j in linked.joins)
        request = load_prompt("grounded_generate").request(
            domain=domain.text,
            linked=tables,
            joins=joins,
            grounds=_grounds_text(constraints),
            examples=examples_text(ctx, examples),
            dialect=ctx.dialect_label,
            filters="\n- Filter on the resolved values above, not on names or labels." if constraints else "",
            question=question.strip(),
        )
    llm = ctx.settings.llm
    return request.model_copy(update={"temperature": llm.temperature, "max_tokens": llm.max_tokens,
                                      "seed": llm.seed})


# -- endings ----------------------------------------------------------------------------------

def _check_usage(ctx: Context, request: ChatRequest, answer: Answer, constraints: list[Constraint],
                 trace: Trace, grounds: dict[str, Any], constraint: dict[str, Any]) -> Answer:
    """Flag an inner join the query reads nothing from, and give the model one more turn when
    the query ignores a resolved value (grounding/usage.py). The new query is taken only when
    it runs, finds rows and leaves fewer resolved values unused; else the first one stands.

    Joins are flagged, never retried: 57 of Spider dev's 479 gold queries join a table only to
    count or keep its matches (student JOIN has_pet for "pets per student")."""
    sql = answer.sql or ""
    with trace.step("check grounds") as step:
        unused = unused_constraints(sql, constraints, ctx.schema)
        idle = idle_joins(sql, ctx.schema)
        step.update(unused=[c.sql() for c in unused], idle_joins=idle)
    if idle:
        grounds["idle_joins"] = idle
    if not unused or not ctx.settings.grounded.reflection:
        return trace.amend(answer)
    follow_up = load_prompt("reflect_grounds").render(unused=unused_text(unused))
    messages = (*request.messages, Message(role="assistant", content=f"```sql\n{sql}\n```"), *follow_up)
    retry = generate_and_execute(ctx, request.model_copy(update={"messages": messages}), trace,
                                 retries=0, constraint=constraint, grounds=grounds)
    if (retry.ok and not looks_empty(retry.rows)
            and len(unused_constraints(retry.sql or "", constraints, ctx.schema)) < len(unused)):
        return retry
    return trace.amend(answer)


def _reflect_on_missing_values(ctx: Context, request: ChatRequest, answer: Answer, trace: Trace,
                               grounds: dict[str, Any], constraint: dict[str, Any]) -> Answer:
    """One more turn when a query found nothing because it filters on a value that is not in
    the data (grounding/values.py); an empty result whose filter values all exist stands."""
    with trace.step("check filter values") as step:
        missing = missing_filter_values(answer.sql or "", ctx.db, ctx.schema, ctx.settings.safety)
        step["missing"] = [m.text() for m in missing]
    if not missing:
        return trace.amend(answer)
    follow_up = load_prompt("reflect_values").render(missing=missing_values_text(missing))
    messages = (*request.messages, Message(role="assistant", content=f"```sql\n{answer.sql}\n```"),
                *follow_up)
    retry = generate_and_execute(ctx, request.model_copy(update={"messages": messages}), trace,
                                 retries=0, constraint=constraint, grounds=grounds)
    if retry.ok and not looks_empty(retry.rows):
        return retry
    return trace.amend(answer)


def not_found(unresolved: list[Unresolved]) -> str:
    parts = []
    for u in unresolved:
        kind = u.kind or "entity"
        closest = f" (closest: {u.closest!r}, {u.confidence:.0%} alike)" if u.closest else ""
        parts.append(f"no {kind} named {u.mention!r} in the database{closest}")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + ". I did not guess an ID for it."
