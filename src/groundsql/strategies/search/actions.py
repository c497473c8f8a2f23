"""The six reasoning actions (IESR 3.2) as a tree-search environment.

A state is a trajectory: the actions taken so far, each with the model's reply and what the
tools made of it (the note shown before the next turn). All calls of one question form one
conversation that grows by a turn per action, on a prefix shared by every call (instructions,
compressed schema, question), so a local backend only computes each new turn. The semantic
state follows the question for the trajectories that start with a reasoning action; those that
start by writing SQL do without it (see `messages`).

    equation_analysis  the model names formulas and constants; the calculator (pint) computes
                       every formula over the question's numbers, not the model
    schema_selection   the model picks tables; the foreign-key graph adds the bridges
    identify_columns   the model names columns; unknown ones are reported back
    entity_extraction  the model names filter values; each is looked up in the data, with the
                       closest real values when it is not there (grounding/values.py)
    sql_generation     the model writes the query; it runs (validator, read-only connection)
    sql_revision       after an error, an empty result caused by a value not in the data, a
                       comparison with a number the question does not state (guessed), a
                       filter on a text value neither the question nor the data has (invented),
                       or a value required of two columns that the question names once (doubled),
                       or a foreign key compared with a column other than the one it holds
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from groundsql.config import SearchConfig
from groundsql.errors import DatabaseError, LLMError, UnsafeSQLError
from groundsql.grounding.entities import names_a_value
from groundsql.grounding.values import (check_value, doubled_filter_values, has_values, looks_empty,
                                        missing_filter_values, missing_values_text, unmentioned_filter_values)
from groundsql.llm import ChatRequest, Message
from groundsql.prompts import load_prompt
from groundsql.schema import Schema
from groundsql.schema.linking import connect, join_graph
from groundsql.strategies.answer import Trace
from groundsql.strategies.context import Context, constrained, extract_sql, name_list, parse_json
from groundsql.strategies.feedback import error_feedback, mismatched_keys
from groundsql.understanding import (CalculatorError, Quantity, bind_constants, drop_restated_filters,
                                     evaluate, read_stored, sql_value, unstated_numbers)

__all__ = ["Problem", "Step", "Trajectory", "SearchEnvironment"]

# Reasoning actions in the order a node tries them (after SQL generation).
REASONING = ("equation_analysis", "schema_selection", "identify_columns", "entity_extraction")


@dataclass(frozen=True)
class Problem:
    """What every call of one question shares."""

    question: str
    schema: Schema  # compressed
    prefix: tuple[Message, ...]  # system, question turn: what every call starts with
    constants: dict[str, Quantity]  # the question's numbers, by formula name
    dialect: str
    # The semantic state, asked once when a trajectory first needs it (one call): the prefix
    # with the state's turns. None: no state (the ablation).
    understand: Callable[[], tuple[Message, ...]] | None = None
    # The prefix with the question's numbers named for formulas (the reasoning trajectories'
    # without the semantic state); None: the same as `prefix`.
    informed: tuple[Message, ...] | None = None
    # The columns that store a number of the question, by its formula name (fields.py).
    stored: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The zero-shot generator's request (the whole schema, its prompt): the first direct
    # sample's conversation. None: every direct sample starts from `prefix`.
    baseline: tuple[Message, ...] | None = None


@dataclass(frozen=True)
class Step:
    action: str
    prompt: str  # the user turn asked
    reply: str  # the model's answer
    note: str = ""  # what the tools made of it, told before the next turn


@dataclass(frozen=True)
class Trajectory:
    steps: tuple[Step, ...] = ()
    sql: str | None = None
    error: str | None = None  # why the query is not a final answer yet (feedback text)
    ran: bool = False  # the query executed on the database
    revised: bool = False
    failed: str | None = None  # why no query could be had (model error, budget)
    computed: tuple[tuple[str, str], ...] = ()  # calculator results (name, value text)
    baseline: bool = False  # continues the zero-shot generator's conversation (Problem.baseline)

    @property
    def taken(self) -> set[str]:
        return {s.action for s in self.steps}

    @property
    def direct(self) -> bool:
        """A direct sample: its first step wrote SQL (no reasoning action before it)."""
        return not self.steps or self.steps[0].action == "sql_generation"


@dataclass
class SearchEnvironment:
    ctx: Context
    problem: Problem
    config: SearchConfig
    trace: Trace
    calls: int = 0
    graph: Any = field(default=None)
    # Turns asked before: asked again (a root resample, a discriminator's completion), a turn
    # is sampled at the configured temperature; asked the first time, it is greedy.
    asked: set[tuple[Message, ...]] = field(default_factory=set)
    # The terminal score; the strategy supplies it because it needs the other trajectories.
    scorer: Callable[[Trajectory], float] | None = None
    # Calls of the cap kept back for a later phase (the discriminator's, during the search).
    reserved: int = 0
    stated: tuple[Message, ...] | None = None  # the prefix with the semantic state, once asked
    baseline_taken: bool = False  # the first direct sample went to the zero-shot generator
    # The grammar SQL is written under (context.constrained), built once per view: the whole
    # schema's (the zero-shot sample) and the compressed one's.
    grammars: dict[bool, tuple[str | None, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.graph = join_graph(self.problem.schema)

    # -- the tree's view ---------------------------------------------------------------------

    def actions(self, state: Trajectory) -> list[str]:
        if self.is_terminal(state):
            return []
        if state.sql is not None:
            return ["sql_revision"]
        enabled = self.config.actions
        reasoning = [a for a in REASONING if a in enabled and a not in state.taken
                     and self._applies(a)]
        # The root samples its direct generations before any reasoning action: for a small
        # model they are the most accurate trajectories (1.5B on Spider, same questions: 81 %
        # right against 67-68 % after schema selection or identify columns), and when they
        # agree the search stops there; the reasoning actions spend what is left on the
        # questions whose samples disagree.
        samples = self.config.root_samples if not state.steps else 1
        return [*["sql_generation"] * samples, *reasoning]

    def default_action(self, state: Trajectory) -> str:
        return "sql_generation" if state.sql is None else "sql_revision"

    def is_terminal(self, state: Trajectory) -> bool:
        if state.failed:
            return True
        if state.sql is None:
            return False
        return state.error is None or state.revised or "sql_revision" not in self.config.actions

    def reward(self, state: Trajectory) -> float:
        if self.scorer is None:
            raise ValueError("SearchEnvironment needs a scorer to reward a terminal state")
        return self.scorer(state)

    def exhausted(self) -> bool:
        return self.calls >= self.config.max_calls - self.reserved

    def _applies(self, action: str) -> bool:
        if action == "equation_analysis":
            return bool(self.problem.constants)
        if action == "schema_selection":
            return len(self.problem.schema.tables) > 1
        if action == "entity_extraction":  # asked of a question naming nothing, the model invents
            return names_a_value(self.problem.question)
        return True

    # -- applying an action ------------------------------------------------------------------

    def apply(self, state: Trajectory, action: str) -> Trajectory:
        # The semantic state is one more call the first time a trajectory needs it.
        needs_state = self.stated is None and not self._direct(state, action) and self.problem.understand
        if self.exhausted() or (needs_state and self.calls + 2 > self.config.max_calls - self.reserved):
            return replace(state, failed="the search's call budget is spent")
        if needs_state:
            self.calls += 1
            try:
                self.stated = self.problem.understand()
            except LLMError as err:
                return replace(state, failed=f"the language model failed: {err}")
        if self.problem.baseline and not self.baseline_taken and not state.steps and action == "sql_generation":
            # First, before any call computes the search's prefix (the backend caches one).
            self.baseline_taken = True
            state = replace(state, baseline=True)
        if state.baseline and not state.steps:
            prompt = ""  # the zero-shot question turn asks for the query itself
        else:
            prompt = load_prompt(f"search_{action}").render(
                note=self._pending_note(state), dialect=self.problem.dialect)[-1].content
        with self.trace.step(action) as step:
            try:
                reply = self._ask(state, action, prompt, output=self._output(action), step=step)
            except LLMError as err:
                step["error"] = str(err)
                return replace(state, failed=f"the language model failed: {err}")
            handler = getattr(self, f"_after_{action}")
            new = handler(state, Step(action, prompt, reply), step)
        return new

    def _pending_note(self, state: Trajectory) -> str:
        if not state.steps:
            return ""
        last = state.steps[-1]
        return f"{last.note}\n" if last.note else ""

    def messages(self, state: Trajectory, action: str, prompt: str) -> tuple[Message, ...]:
        # A trajectory that starts by writing SQL is asked without the semantic state: the state
        # is one greedy answer, and every trajectory that reads it shares its mistakes (Spider,
        # 1.5B: a state naming singer_in_concert.Singer_ID for "How many singers do we have?"
        # made 3 of 5 trajectories count that table), so the vote could not outvote them. The
        # direct samples stay independent, as self-consistency's are; the reasoning actions'
        # trajectories build on the state.
        if state.baseline and self.problem.baseline:
            start = self.problem.baseline
        elif self._direct(state, action):
            start = self.problem.prefix
        else:
            start = self.stated or self.problem.informed or self.problem.prefix
        turns: list[Message] = list(start)
        for s in state.steps:
            if s.prompt:
                turns.append(Message(role="user", content=s.prompt))
            turns.append(Message(role="assistant", content=s.reply))
        if prompt:
            turns.append(Message(role="user", content=prompt))
        return _merged(turns)

    def _output(self, action: str) -> dict | None:
        """The JSON schema a reasoning action's answer must follow (a grammar for local
        backends): real table and column names, bounded lists. None for SQL actions."""
        schema = self.problem.schema
        column = {"type": "string",
                  "enum": sorted({f"{t.name}.{c.name}" for t in schema.tables for c in t.columns})}
        text = {"type": "string", "maxLength": 200}
        if action == "schema_selection":
            return _object(tables=name_list([t.name for t in schema.tables], 8))
        if action == "identify_columns":
            item = _object(column=column, role=text)
            return _object(columns={"type": "array", "items": item, "maxItems": 16})
        if action == "entity_extraction":
            item = _object(column=column, value={"type": ["string", "number"]})
            return _object(filters={"type": "array", "items": item, "maxItems": 8})
        if action == "equation_analysis":
            item = _object(name={"type": "string", "maxLength": 40}, expression=text,
                           unit={"type": "string", "maxLength": 20})
            return _object(constants={"type": "array", "items": item, "maxItems": 8},
                           formulas={"type": "array", "items": text, "maxItems": 6})
        return None

    @staticmethod
    def _direct(state: Trajectory, action: str) -> bool:
        """Whether the trajectory starts by writing SQL (it does without the semantic state)."""
        return state.direct if state.steps else action == "sql_generation"

    def _ask(self, state: Trajectory, action: str, prompt: str, *, output: dict | None, step: dict) -> str:
        llm = self.ctx.settings.llm
        self.calls += 1
        messages = self.messages(state, action, prompt)
        again = messages in self.asked
        self.asked.add(messages)
        request = ChatRequest(
            messages=messages,
            temperature=self.config.temperature if again else 0.0,
            max_tokens=384 if output else llm.max_tokens,
            # A greedy answer does not depend on the seed: one seed lets the same greedy
            # request share its cached answer (the baseline's, the zero-shot strategy's).
            seed=llm.seed + self.calls if again else llm.seed,
            json_schema=output,
        )
        if output is None:
            request, _ = self.constrained(request, whole=bool(state.baseline and self.problem.baseline))
        completion = self.ctx.llm.complete(request)
        step["calls"].append(completion)
        return completion.text

    def constrained(self, request: ChatRequest, *, whole: bool = False) -> tuple[ChatRequest, dict[str, Any]]:
        """`request` under the grammar of the schema its prompt shows, and what the grounds say."""
        if whole not in self.grammars:
            built, constraint = constrained(self.ctx, request, None if whole else self.problem.schema)
            self.grammars[whole] = (built.grammar, constraint)
        grammar, constraint = self.grammars[whole]
        return request.model_copy(update={"grammar": grammar}), constraint

    # -- what the tools make of each reply -------------------------------------------------

    def _after_equation_analysis(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        answer = parse_json(step.reply) or {}
        known: dict[str, Any] = dict(self.problem.constants)
        known.update({name: value for name, value in state.computed})
        computed: list[tuple[str, str]] = []
        lines: list[str] = []
        for item in (answer.get("constants") or [])[:8] if isinstance(answer, dict) else []:
            if not isinstance(item, dict):
                continue
            name, expression = str(item.get("name", "")).strip(), str(item.get("expression", ""))
            if not name.isidentifier() or not expression:
                continue
            try:
                result = evaluate(expression, known)
                if item.get("unit"):
                    try:
                        result = result.to(str(item["unit"]))
                    except CalculatorError:
                        pass  # keep the computed unit: the model's was not a unit we know
            except CalculatorError as err:
                lines.append(f"- {name} = {expression}: not computed ({err})")
                continue
            known[name] = result
            computed.append((name, str(result)))
            lines.append(f"- {name} = {expression} = {result}")
        formulas = [str(f) for f in (answer.get("formulas") or [])[:6]] if isinstance(answer, dict) else []
        note = ""
        if lines:
            note += "Calculator results (use these numbers as written):\n" + "\n".join(lines) + "\n"
        if formulas:
            note += "Formulas over columns:\n" + "\n".join(f"- {f}" for f in formulas) + "\n"
        record.update(computed=[f"{n} = {v}" for n, v in computed], formulas=formulas)
        return replace(state, steps=(*state.steps, replace(step, note=note.strip())),
                       computed=(*state.computed, *computed))

    def _after_schema_selection(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        answer = parse_json(step.reply) or {}
        names = [str(t) for t in answer.get("tables", []) if isinstance(t, str)] \
            if isinstance(answer, dict) else []
        linked = connect(self.problem.schema, names, self.graph)
        note = ""
        if linked.tables:
            note = f"Tables to use: {', '.join(linked.tables)}."
            if linked.bridges:
                note += f" ({', '.join(linked.bridges)} added: it joins the others.)"
            if linked.joins:
                note += " Join on: " + "; ".join(str(j) for j in linked.joins) + "."
        record.update(tables=list(linked.tables), bridges=list(linked.bridges))
        return replace(state, steps=(*state.steps, replace(step, note=note)))

    def _after_identify_columns(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        answer = parse_json(step.reply) or {}
        items = answer.get("columns", []) if isinstance(answer, dict) else []
        unknown = []
        for item in items[:20]:
            ref = str(item.get("column", "")) if isinstance(item, dict) else str(item)
            if self._column(ref) is None:
                unknown.append(ref)
        note = (f"These columns do not exist: {', '.join(unknown)}. Use the schema's columns."
                if unknown else "")
        record.update(unknown=unknown)
        return replace(state, steps=(*state.steps, replace(step, note=note)))

    def _after_entity_extraction(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        answer = parse_json(step.reply) or {}
        filters = answer.get("filters", []) if isinstance(answer, dict) else []
        lines = []
        for item in filters[:8]:
            if not isinstance(item, dict):
                continue
            found, value = self._column(str(item.get("column", ""))), item.get("value")
            if found is None or value is None:
                continue
            real, column = found
            shown = repr(value) if isinstance(value, str) else str(value)
            if not has_values(self.ctx.db, self.ctx.settings.safety, real.name, column):
                lines.append(f"- {real.name}.{column} holds no values: {shown} cannot be checked.")
                continue
            missing = check_value(self.ctx.db, self.ctx.settings.safety, real.name, column, value)
            if missing is None:
                lines.append(f"- {real.name}.{column} = {shown} occurs in the data.")
            else:
                lines.append(f"- {missing.text()}.")
        note = "Checked against the data:\n" + "\n".join(lines) if lines else ""
        record.update(checked=lines)
        return replace(state, steps=(*state.steps, replace(step, note=note)))

    def _column(self, ref: str) -> tuple[Any, str] | None:
        """(table, column name as written) for a "table.column" of the compressed schema."""
        table, _, column = ref.rpartition(".")
        real = self.problem.schema.table(table) if table else None
        return (real, column) if real is not None and real.column(column) is not None else None

    def _after_sql_generation(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        return self._run(state, step, record, revised=False)

    def _after_sql_revision(self, state: Trajectory, step: Step, record: dict) -> Trajectory:
        return self._run(state, step, record, revised=True)

    def _constant_values(self, state: Trajectory) -> dict[str, float]:
        """The question's numbers and the calculator's results, by their formula names."""
        values = {name: sql_value(q) for name, q in self.problem.constants.items()}
        values.update({name: _leading_number(text) for name, text in state.computed})
        return values

    def _run(self, state: Trajectory, step: Step, record: dict, *, revised: bool) -> Trajectory:
        sql = extract_sql(step.reply)
        record["sql"] = sql
        if sql is None:
            error = "the answer contained no SQL query"
            return replace(state, steps=(*state.steps, replace(step, note=f"That failed: {error}.")),
                           sql="", error=error, ran=False, revised=revised)
        # Question constants the query names like columns become their numbers, or the columns
        # that store them (binding.py).
        constants = self._constant_values(state)
        sql, bound = bind_constants(sql, constants, self.ctx.schema, self.ctx.db.dialect,
                                    stored=self.problem.stored)
        if bound:
            record.update(sql=sql, bound=bound)
        # And the question's copies of a row's stored values are read from the row.
        homes = [(q, self.problem.stored[name]) for name, q in self.problem.constants.items()
                 if name in self.problem.stored]
        stated = {q.value: columns for q, columns in homes}
        sql, read = read_stored(sql, stated, self.ctx.schema, self.ctx.db.dialect)
        if read:
            record.update(sql=sql, read=read)
        # A row the query finds by its name is not also required to hold the measurements
        # the question restates of it (binding.py); counts and amounts of money can select rows.
        measured = {q.value: columns for q, columns in homes if q.physical}
        sql, unfiltered = drop_restated_filters(sql, measured, self.ctx.schema, self.ctx.db.dialect)
        if unfiltered:
            record.update(sql=sql, unfiltered=unfiltered)
        try:
            checked, result = self.ctx.run_sql(sql, record=record)
        except (UnsafeSQLError, DatabaseError) as err:
            feedback = error_feedback(sql, str(err), self.problem.schema)
            record["error"] = str(err)
            return replace(state, steps=(*state.steps, replace(step, note=f"That query failed: {feedback}")),
                           sql=sql, error=feedback, ran=False, revised=revised)
        record["rows"] = len(result.rows)
        error = None
        if looks_empty(result.rows):
            missing = missing_filter_values(checked.sql, self.ctx.db, self.problem.schema,
                                            self.ctx.settings.safety)
            if missing:
                error = ("It found nothing, because these filter values are not in the data:\n"
                         + missing_values_text(missing))
                record["missing"] = [m.text() for m in missing]
        if error is None:
            guessed = unstated_numbers(checked.sql, self.problem.question, self.ctx.db.dialect,
                                       known=constants.values())
            if guessed:
                error = (f"It compares with {', '.join(guessed)}, which the question does not state: "
                         "compute such a value in SQL (a subquery), or use the question's numbers.")
                record["unstated"] = guessed
        if error is None:
            invented = unmentioned_filter_values(checked.sql, self.problem.question, self.ctx.db,
                                                 self.problem.schema, self.ctx.settings.safety)
            if invented:
                shown = ", ".join(f"'{v}'" for v in invented)
                error = (f"It filters on {shown}, which the question does not mention and no row holds: "
                         "drop that filter, or filter on a value the question names.")
                record["invented"] = invented
        if error is None:
            mismatched = mismatched_keys(checked.sql, self.ctx.schema)
            if mismatched:
                error = "\n".join(mismatched)
                record["mismatched_keys"] = mismatched
        # Told apart from the other problems: an empty result from a value not in the data
        # often comes with it, and the revision should mend both.
        doubled = doubled_filter_values(checked.sql, self.problem.question, self.problem.schema,
                                        self.ctx.db.dialect)
        if doubled:
            shown = ", ".join(f"'{v}'" for v in doubled)
            also = (f"It requires {shown} of more than one column, but the question names it once: "
                    "keep only the filter the question asks for.")
            error = f"{error}\n{also}" if error else also
            record["doubled"] = doubled
        note = error or ""
        return replace(state, steps=(*state.steps, replace(step, note=note)), sql=checked.sql,
                       error=error, ran=True, revised=revised)


def _leading_number(text: str) -> float:
    """The value of a calculator result's text ("1047.2 rad/s" -> 1047.2); NaN if none."""
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return math.nan


def _object(**properties: dict) -> dict:
    return {"type": "object", "required": list(properties), "properties": properties}


def _merged(turns: list[Message]) -> tuple[Message, ...]:
    """Consecutive turns of one role joined (a switched-off stage leaves two user turns)."""
    out: list[Message] = []
    for turn in turns:
        if out and out[-1].role == turn.role:
            out[-1] = Message(role=turn.role, content=f"{out[-1].content}\n\n{turn.content}")
        else:
            out.append(turn)
    return tuple(out)
