"""The search strategy (IESR): understand, compress, search, verify, select.

    question -> numbers and units (pint) + semantic state (one structured call, asked when a
                reasoning trajectory first needs it), relations checked against the unit rule base
             -> schema compression (3-grams of names and values + embeddings), M-Schema
             -> Monte Carlo Tree Search over six actions (actions.py, tree.py); each finished
                trajectory's query runs on the database and populated variants (probe.py), and
                its reward is its agreement with the other trajectories' results
             -> trajectory selection (selection.py): execution, a discriminator's
                mask-and-complete check, and the vote; the best score wins

Far cheaper than IESR (about 124 calls a question): one conversation per question whose
prefix every call reuses, deterministic tools where IESR asks the model (calculator, value
checks, bridge tables), a call cap, and an early stop when the results already agree.
"""

from __future__ import annotations

import json
import random

from groundsql.config import SearchConfig
from groundsql.llm import ChatRequest, Message
from groundsql.prompts import load_prompt
from groundsql.retrieval import load_embedder
from groundsql.schema import render_schema
from groundsql.schema.compress import CompressedSchema, SchemaIndex, compress
from groundsql.strategies.answer import Answer, Trace
from groundsql.strategies.context import Context, generation_request, parse_json
from groundsql.strategies.search.actions import Problem, SearchEnvironment, Trajectory
from groundsql.strategies.search.probe import Probe, Signature
from groundsql.strategies.search.selection import Candidate, select_candidate
from groundsql.strategies.search.tree import Node, search as tree_search
from groundsql.understanding import (columns_for, default_rules, extract_quantities, named_constants,
                                     STATE_SCHEMA, semantic_state, sql_constants)

__all__ = ["search"]


def search(question: str, ctx: Context) -> Answer:
    config = ctx.settings.search
    trace = Trace(question, "search", ctx.on_step)
    compressed = _compress(ctx, question, config, trace)
    problem = _understand(ctx, question, compressed, config, trace)
    probe = Probe(ctx.db, ctx.settings.safety, config.probe_variants, seed=ctx.settings.llm.seed)
    terminals: list[Node[Trajectory]] = []

    def pool() -> list[Trajectory]:
        return [n.state for n in terminals]

    # Once there are candidates to tell apart, the discriminator's checks (a completion each)
    # are kept out of the search's share of the cap: a search that spends every call leaves
    # the selection nothing to check with. Until then the search may use every call.
    reserve = min(config.discriminated, config.max_calls // 2) if config.discriminator else 0
    env = SearchEnvironment(ctx, problem, config, trace, scorer=lambda state: _reward(state, pool(), probe))
    try:
        def stop(reached: list[Node[Trajectory]]) -> bool:
            terminals[:] = reached
            ran = {t.sql for t in pool() if t.sql and t.ran}
            env.reserved = reserve if len(ran) > 1 else 0
            return env.exhausted() or _agreed(pool(), probe, config.early_stop)

        with trace.step("search", rollouts=config.rollouts) as step:
            result = tree_search(Trajectory(), env, rollouts=config.rollouts,
                                 exploration=config.exploration, depth_limit=config.depth, stop=stop)
            terminals[:] = result.terminals
            step.update(rollouts_run=result.rollouts, trajectories=len(result.terminals),
                        model_calls=env.calls)
        finished = [t for t in pool() if t.sql and t.ran]
        if not finished:
            reason = next((t.failed or t.error for t in pool() if t.failed or t.error), None)
            return trace.finish(sql=None, error=f"no trajectory produced a query that runs: {reason}")
        signatures = probe.signatures([t.sql for t in finished if t.sql])
        candidates = [Candidate(t, signatures.get(t.sql or ""), probe.vacuous(t.sql or "")) for t in finished]
        env.reserved = 0
        with trace.step("select") as step:
            chosen, scores = select_candidate(candidates, env, probe, config,
                                              random.Random(f"{ctx.settings.llm.seed}:{question}"))
            step.update(scores=scores, chosen=chosen.trajectory.sql)
    finally:
        probe.close()
    _, result = ctx.run_sql(chosen.trajectory.sql or "")
    constraint = next((info for _, info in env.grammars.values() if info), None)
    grounds = {
        "schema": {"tables": list(compressed.tables), "bridges": list(compressed.bridges),
                   "kept_columns": compressed.kept_columns, "of_columns": compressed.total_columns},
        "constants": sql_constants(list(problem.constants.values())),
        "trajectory": [s.action for s in chosen.trajectory.steps],
        "computed": [f"{n} = {v}" for n, v in chosen.trajectory.computed],
        "candidates": scores,
        **({"constraint": constraint} if constraint else {}),
    }
    return trace.finish(sql=chosen.trajectory.sql, columns=result.columns, rows=result.rows,
                        truncated=result.truncated, grounds=grounds)


# -- before the search -----------------------------------------------------------------------


def _compress(ctx: Context, question: str, config: SearchConfig, trace: Trace) -> CompressedSchema:
    with trace.step("compress schema", on=config.compression) as step:
        index = ctx.resources.get("search-index")
        if index is None:
            # An embedding weight of 0 means lexical compression only: no model is loaded.
            wanted = config.compression_settings.embedding_weight > 0
            embedder = load_embedder() if wanted else None
            index = SchemaIndex.build(ctx.db, ctx.schema, embedder, config=config.compression_settings)
            ctx.resources["search-index"] = index
        settings = config.compression_settings
        if not config.compression:  # every schema counts as small: kept whole
            settings = settings.model_copy(update={"whole_below_columns": 10**9})
        compressed = compress(question, index, settings)
        step.update(tables=list(compressed.tables), kept_columns=compressed.kept_columns,
                    of_columns=compressed.total_columns,
                    values=[str(v) for v in compressed.values])
    return compressed


_STATE_REQUEST = "\nDescribe the question as JSON"  # where search_system's request for the state starts


def _understand(ctx: Context, question: str, compressed: CompressedSchema, config: SearchConfig,
                trace: Trace) -> Problem:
    """The question's numbers (deterministic) and, when switched on, the model's semantic
    state (asked lazily: a question whose direct samples agree never needs it); relations
    whose units do not agree are reported to the model, not kept silently."""
    rules = default_rules()
    quantities = extract_quantities(question, rules)
    constants = named_constants(quantities)
    # A number a column stores is said so: the query reads or filters the column (fields.py).
    stored = {name: columns_for(q, compressed.schema, rules) for name, q in constants.items()}
    lines = sql_constants(quantities, rules=rules, stored=stored)
    numbers = "Numbers of the question (names for formulas):\n" + "\n".join(f"- {x}" for x in lines)
    # The rule base's formulas that the question's quantities fit: the 1.5B model otherwise
    # invents the physics (LogicCat: `Max_Gross_Weight * Max_Disk_Loading` for the lift of a
    # rotor of stated disk area and disk loading). No Spider question has one.
    formulas = rules.formulas_applying(question, quantities) if config.understanding else ()
    if formulas:
        with trace.step("formulas") as step:
            step["relations"] = [f.relation for f in formulas]
    known = "Formulas that may apply:\n" + "\n".join(f"- {f.description}: {f.relation}" for f in formulas)
    values = "Values of the question found in the data:\n" + "\n".join(f"- {v}" for v in compressed.values)
    facts = [fact for fact, shown in ((numbers, lines), (known, formulas), (values, compressed.values)) if shown]
    gen = ctx.settings.generation
    schema_text = render_schema(compressed.schema, "m-schema", with_examples=gen.with_examples)

    def turns(shown: list[str]) -> tuple[Message, Message]:
        return load_prompt("search_system").render(  # type: ignore[return-value]
            dialect=ctx.dialect_label, schema=schema_text, question=question.strip(),
            facts="\n".join(shown) + ("\n" if shown else ""))

    def question_turn(shown: list[str]) -> Message:
        """The question turn without the semantic state's request (which ends the template)."""
        return Message(role="user", content=turns(shown)[1].content.rsplit(_STATE_REQUEST, 1)[0])

    system, user = turns(facts)
    instruction = user.content.rsplit(_STATE_REQUEST, 1)[1]
    informed = (system, question_turn(facts))
    # The direct samples see the question, the schema and the values found in the data, not
    # the numbers named for formulas: named, the 1.5B model computed with the question's
    # copies of stored values (`67054745 * ...`) where the columns were meant, and zero-shot,
    # which is not shown them, read the columns (LogicCat, 40 questions: 3 of 22 against 1 of
    # 40). The calculator's numbers serve the reasoning trajectories (equation analysis).
    direct = (system, question_turn([fact for fact in facts if fact is not numbers]))

    def understand() -> tuple[Message, ...]:
        """The semantic state: one structured call, asked when a trajectory first needs it."""
        with trace.step("understand") as step:
            llm = ctx.settings.llm
            request = ChatRequest(messages=(system, user), temperature=0.0, max_tokens=384, seed=llm.seed,
                                  json_schema=STATE_SCHEMA)
            completion = ctx.llm.complete(request)
            step["calls"].append(completion)
            # What the model copied from the request is dropped (state.py); the rule base
            # filters the relations: one whose units cannot agree is dropped from the state every
            # later turn sees, one that needs a unit factor keeps a note.
            state = semantic_state(parse_json(completion.text), request=instruction, question=question)
            checks, kept = [], []
            for relation in state["relations"]:
                verdict = rules.check_relation(relation, dict(constants))
                if verdict.status == "inconsistent":
                    checks.append(f"- dropped {relation}: {verdict.reason}")
                    continue
                if verdict.status == "rescale":
                    checks.append(f"- {relation}: {verdict.reason}")
                kept.append(relation)
            state["relations"] = kept
            step.update(intent=state["intent"], relations=kept, unit_checks=checks)
        prefix = [system, user, Message(role="assistant", content=json.dumps(state))]
        if checks:
            prefix.append(Message(role="user", content="Unit check of the relations:\n" + "\n".join(checks)))
        return tuple(prefix)

    # The first direct sample is the zero-shot generator's call: a second view of the question
    # (the whole schema, another prompt) whose query the pool then always holds. On LogicCat
    # (1.5B) zero-shot answered a question none of the search's trajectories did (logiccat/65:
    # the compressed view listed Manufacturer_ID for "the manufacturers"). Where the search's
    # view is the whole schema it adds no view, only a second cold prefix, and takes a
    # sampled slot (Spider, 100 questions: BENCHMARKS.md).
    wanted = config.baseline_sample == "always" or (
        config.baseline_sample == "compressed" and compressed.kept_columns < compressed.total_columns)
    baseline = generation_request(ctx, trace, question).messages if wanted else None
    # Without the semantic state (the ablation) every trajectory starts from the direct prefix.
    return Problem(question, compressed.schema, direct, constants, ctx.dialect_label,
                   understand=understand if config.understanding else None, informed=informed,
                   stored={name: tuple(columns) for name, columns in stored.items() if columns},
                   baseline=baseline)


# -- reward and early stop -------------------------------------------------------------------


def _reward(state: Trajectory, pool: list[Trajectory], probe: Probe) -> float:
    """Execution self-consistency: 0 for a query that does not run; otherwise its agreement
    with the other finished trajectories' results on the probe (0.5 with none to compare).
    Queries that find nothing anywhere do not agree with each other: they fail alike."""
    if not state.sql or not state.ran:
        return 0.0
    others = [t for t in pool if t is not state and t.sql and t.ran]
    sigs = probe.signatures([state.sql, *(t.sql for t in others if t.sql)])
    mine = sigs[state.sql]
    if mine is None:
        return 0.0
    agree = 0 if probe.vacuous(state.sql) else sum(1 for t in others if sigs.get(t.sql or "") == mine)
    return (agree + 0.5) / (len(others) + 1)


def _agreed(pool: list[Trajectory], probe: Probe, needed: int) -> bool:
    if needed <= 0:
        return False
    sqls = [t.sql for t in pool if t.sql and t.ran and not probe.vacuous(t.sql)]
    if len(sqls) < needed:
        return False
    sigs = probe.signatures(sqls)
    counts: dict[Signature, int] = {}
    for sql in sqls:
        sig = sigs.get(sql)
        if sig is not None:
            counts[sig] = counts.get(sig, 0) + 1
    return max(counts.values(), default=0) >= needed
