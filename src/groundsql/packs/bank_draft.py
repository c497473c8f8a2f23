"""Drafting solved examples for a new pack's bank.jsonl (`groundsql init`).

Retrieval of solved examples carries the most weight in the grounded strategy, yet a new
database starts with an empty bank. This drafts a few for a person to review, built from
the structure the drafter detected (joins, reference labels, entity names, measures) and
from real values sampled from the database, so that every example is concrete.

Each template is a small function that yields examples; `TEMPLATES` composes them. They are
taken in turn (one from each template, then a second from each, ...) for diversity, at most
PER_TEMPLATE each and MAX_EXAMPLES in all, within TIME_BUDGET_S. Every SQL, drafted or
sampling, is checked by the validator and runs read-only with a small timeout; a drafted
example is kept only when its result is informative. A reference table is always filtered
by its label, never by its opaque key. Values are chosen by a fixed seed: the same database
gives the same bank.

SQL is written with the database's own identifier quoting, standard SQL otherwise (JOIN,
GROUP BY, ORDER BY, LIMIT, comparisons with literals), which SQLite, PostgreSQL and DuckDB
all read.
"""

from __future__ import annotations

import math
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from groundsql.config import SafetyConfig
from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.packs.detect import (_LOOKUP_FIRST, Draft, Join, _plural, _singular, _words,
                                    measures, name_rank, periods)
from groundsql.packs.model import EntityTable, ReferenceTable
from groundsql.safety import validate_sql
from groundsql.schema.model import Column, Table
from groundsql.semantic.verified import Param, infer_params
from groundsql.testsuite.suite import informative

MAX_EXAMPLES = 20
PER_TEMPLATE = 4
TIME_BUDGET_S = 30.0
QUERY_TIMEOUT_S = 3.0
SAMPLE_ROWS = 50  # values read to choose one from
SEED = 27
TOP_N = 3

_TOTAL_WORDS = {"amount", "value", "volume", "revenue", "sales", "quantity", "count", "total",
                "employees", "capacity", "population", "cost"}


@dataclass(frozen=True)
class DraftedExample:
    template: str
    question: str
    reasoning: str
    sql: str
    params: tuple[Param, ...] = ()  # the values it may be reused with (semantic/verified.py)
    request: dict[str, Any] | None = None  # the same, as a semantic request (semantic/decompile.py)

    def to_json(self) -> dict[str, Any]:
        drafted: dict[str, Any] = {"question": self.question, "reasoning": self.reasoning, "sql": self.sql,
                                   "drafted": True, "template": self.template}
        if self.request is not None:
            drafted["request"] = self.request
        if self.params:
            drafted["params"] = [{"name": p.name, "kind": p.kind, "value": p.value} for p in self.params]
        return drafted


class _Context:
    """The database, what was detected, the seeded chooser and the deadline."""

    def __init__(self, db: Database, draft: Draft, deadline: float) -> None:
        self.db, self.draft, self.deadline = db, draft, deadline
        self.rng = random.Random(SEED)
        self.policy = SafetyConfig()
        self.references = {r.table.lower(): r for r in draft.references}
        self.entities = {e.table.lower(): e for e in draft.entities}

    def q(self, name: str) -> str:
        return self.db.quote(name)

    def rows(self, sql: str) -> tuple[tuple[Any, ...], ...] | None:
        """The rows of `sql`, validated and run read-only; None on any error or past the deadline."""
        if time.monotonic() > self.deadline:
            return None
        try:
            checked = validate_sql(sql, self.db.dialect, self.policy, self.db.catalog())
            result = self.db.execute(checked.fetch_sql, timeout_s=QUERY_TIMEOUT_S, max_rows=SAMPLE_ROWS)
        except GroundsqlError:
            return None
        return tuple(tuple(row) for row in result.rows)

    def choose(self, rows: Sequence[Any]) -> Any:
        return self.rng.choice(list(rows)) if rows else None

    def example(self, template: str, question: str, reasoning: str, sql: str,
                varied: int | None = None) -> DraftedExample | None:
        """The example, if its SQL passes the validator and gives an informative result.
        `varied`: a column of the result that must take two values or more (a ranking of
        ties, or a grouping with one group, says little)."""
        rows = self.rows(sql)
        if rows is None or not informative(list(rows)):
            return None
        if varied is not None and len({row[varied] for row in rows}) < 2:
            return None
        labels = frozenset(r.label.lower() for r in self.draft.references)
        return DraftedExample(template, question, reasoning, sql,
                              infer_params(question, sql, self.db.dialect, labels))


# -- names -------------------------------------------------------------------------------


def words(name: str) -> str:
    """'company_type_name' -> 'company type name'; 'Song_release_year' -> 'song release year'."""
    return " ".join(_words(name)) or name


def noun(table: str, entity: EntityTable | None) -> str:
    """What to call the rows of a table, in the plural: 'companies', 'financial data rows'."""
    if entity is not None:
        return _plural(entity.kind)
    parts = _words(table)
    if len(parts) > 1 and parts[0] in _LOOKUP_FIRST:  # ref_country: countries
        parts = parts[1:]
    if not parts:
        return f"rows of {table}"
    if parts[-1] in ("data", "info", "information"):
        return " ".join(parts) + " rows"
    return " ".join(parts[:-1] + [_plural(_singular(parts[-1]))])


def literal(value: Any) -> str | None:
    """A SQL literal every dialect reads; None for a value not worth filtering on."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return repr(value) if math.isfinite(value) else None
    text = str(value)
    if not text.strip() or not text.isprintable() or len(text) > 80:
        return None
    return "'" + text.replace("'", "''") + "'"


def entity_names(entity: EntityTable) -> tuple[str, ...]:
    """The columns that together name one entity: its own name, or first and last name."""
    table = entity.table
    if name_rank(entity.names[0], table) == 4:
        return entity.names[:1]
    together = [n for n in entity.names if name_rank(n, table) >= 3][:2]
    return tuple(together) or entity.names[:1]


# -- what the structure offers -----------------------------------------------------------


def _reference_joins(ctx: _Context) -> list[tuple[Join, ReferenceTable]]:
    found = [(j, ctx.references[j.parent.lower()]) for j in ctx.draft.joins
             if j.parent.lower() in ctx.references and j.composite is None
             and j.child.lower() != j.parent.lower()]
    return _spread(found, lambda pair: pair[0].child.lower())


def _entity_joins(ctx: _Context) -> list[tuple[Join, EntityTable]]:
    found = [(j, ctx.entities[j.parent.lower()]) for j in ctx.draft.joins
             if j.parent.lower() in ctx.entities and j.composite is None
             and j.child.lower() != j.parent.lower()]
    return _spread(found, lambda pair: pair[0].child.lower())


def _spread(items: list[Any], key: Callable[[Any], str]) -> list[Any]:
    """`items` reordered so that each group (table) comes once before any comes twice."""
    seen: dict[str, int] = {}
    ranked = []
    for index, item in enumerate(items):
        group = key(item)
        ranked.append((seen.get(group, 0), index, item))
        seen[group] = seen.get(group, 0) + 1
    return [item for _, _, item in sorted(ranked, key=lambda r: (r[0], r[1]))]


def _name_filter(ctx: _Context, alias: str, columns: Sequence[str], values: Sequence[Any]) -> str | None:
    parts = []
    for column, value in zip(columns, values):
        text = literal(value)
        if text is None:
            return None
        parts.append(f"{alias}.{ctx.q(column)} = {text}")
    return " AND ".join(parts)


def _on(ctx: _Context, join: Join, child: str, parent: str) -> str:
    return f"{child}.{ctx.q(join.child_column)} = {parent}.{ctx.q(join.parent_column)}"


def _pick_entity(ctx: _Context, entity: EntityTable, source: str) -> tuple[Any, ...] | None:
    """Real name values of one entity, chosen among the first SAMPLE_ROWS by name from `source`."""
    names = entity_names(entity)
    listed = ", ".join(f"e.{ctx.q(n)}" for n in names)
    not_null = " AND ".join(f"e.{ctx.q(n)} IS NOT NULL" for n in names)
    rows = ctx.rows(f"SELECT DISTINCT {listed} FROM {source} WHERE {not_null} ORDER BY {listed} "
                    f"LIMIT {SAMPLE_ROWS}")
    return ctx.choose(rows or ())


# -- templates: each yields drafted examples ---------------------------------------------


def count_by_label(ctx: _Context) -> Iterator[DraftedExample]:
    """How many companies have country name Germany? (join to the lookup, filter its label)"""
    for join, ref in _reference_joins(ctx):
        child, r = ctx.q(join.child), ctx.q(ref.table)
        label = ctx.q(ref.label)
        source = f"{child} AS c JOIN {r} AS r ON {_on(ctx, join, 'c', 'r')}"
        counts = ctx.rows(f"SELECT r.{label}, COUNT(*) FROM {source} WHERE r.{label} IS NOT NULL "
                          f"GROUP BY r.{label} ORDER BY COUNT(*) DESC, r.{label} LIMIT {SAMPLE_ROWS}")
        total = ctx.rows(f"SELECT COUNT(*) FROM {source}")
        if not counts or not total:
            continue
        # A label every row has would make the filter meaningless.
        value = ctx.choose([v for v, n in counts if n < total[0][0] and literal(v) is not None])
        if value is None:
            continue
        what = noun(join.child, ctx.entities.get(join.child.lower()))
        yield from _some(ctx.example(
            "count_by_label",
            f"How many {what} have {words(ref.label)} {value}?",
            f"{join.left} references the lookup {ref.table}; filter by its label {ref.label}, "
            f"not by the key {ref.key}.",
            f"SELECT COUNT(*) FROM {source} WHERE r.{label} = {literal(value)}",
        ))


def count_in_period(ctx: _Context) -> Iterator[DraftedExample]:
    """How many shipments with mode name Sea have booked date in 2023? (a label and a year)"""
    for join, ref in _reference_joins(ctx):
        table = ctx.draft.schema.table(join.child)
        dates = [column for column, is_date in periods(table)] if table is not None else []
        if not dates:
            continue
        child, r, label, p = ctx.q(join.child), ctx.q(ref.table), ctx.q(ref.label), ctx.q(dates[0].name)
        source = f"{child} AS c JOIN {r} AS r ON {_on(ctx, join, 'c', 'r')}"
        values = ctx.rows(f"SELECT DISTINCT c.{p} FROM {child} AS c WHERE c.{p} IS NOT NULL ORDER BY c.{p} "
                          f"LIMIT {SAMPLE_ROWS}") or ()
        is_date = dict(periods(table))[dates[0]]
        years = sorted({str(v)[:4] for (v,) in values if re.fullmatch(r"\d{4}", str(v)[:4])})
        year = ctx.choose(years)
        if year is None:
            continue
        where = (f"c.{p} >= '{year}-01-01' AND c.{p} < '{int(year) + 1:04d}-01-01'" if is_date
                 else f"c.{p} = {int(year)}")
        counts = ctx.rows(f"SELECT r.{label}, COUNT(*) FROM {source} WHERE {where} AND r.{label} IS NOT NULL "
                          f"GROUP BY r.{label} ORDER BY COUNT(*) DESC, r.{label} LIMIT {SAMPLE_ROWS}")
        value = ctx.choose([v for v, n in counts or () if literal(v) is not None])
        if value is None:
            continue
        what = noun(join.child, ctx.entities.get(join.child.lower()))
        yield from _some(ctx.example(
            "count_in_period",
            f"How many {what} with {words(ref.label)} {value} have {words(dates[0].name)} in {year}?",
            f"Filter by the label {ref.label} of the lookup {ref.table} and by the year of {dates[0].name}.",
            f"SELECT COUNT(*) FROM {source} WHERE r.{label} = {literal(value)} AND {where}",
        ))


def count_per_label(ctx: _Context) -> Iterator[DraftedExample]:
    """How many companies are there per industry name?"""
    for join, ref in _reference_joins(ctx):
        child, r, label = ctx.q(join.child), ctx.q(ref.table), ctx.q(ref.label)
        what = noun(join.child, ctx.entities.get(join.child.lower()))
        yield from _some(ctx.example(
            "count_per_label",
            f"How many {what} are there per {words(ref.label)}?",
            f"{join.left} references the lookup {ref.table}; group by its label {ref.label}.",
            f"SELECT r.{label}, COUNT(*) AS {ctx.q('count')} FROM {child} AS c JOIN {r} AS r ON "
            f"{_on(ctx, join, 'c', 'r')} GROUP BY r.{label} ORDER BY COUNT(*) DESC, r.{label}", varied=1))


def top_by_measure(ctx: _Context) -> Iterator[DraftedExample]:
    """Which 3 stadiums have the highest capacity?"""
    for entity in ctx.draft.entities:
        table = ctx.draft.schema.table(entity.table)
        if table is None:
            continue
        names = entity_names(entity)
        for measure in measures(ctx.draft, table)[:2]:
            m = ctx.q(measure.name)
            listed = ", ".join(ctx.q(n) for n in names)
            yield from _some(ctx.example(
                "top_by_measure",
                _top_question(entity, measure),
                f"Each row of {entity.table} is one {entity.kind}; order by {measure.name}, "
                f"leaving out rows without one.",
                f"SELECT {listed}, {m} FROM {ctx.q(entity.table)} WHERE {m} IS NOT NULL "
                f"ORDER BY {m} DESC, {listed} LIMIT {TOP_N}", varied=-1))


def _top_question(entity: EntityTable, measure: Column) -> str:
    said = words(measure.name)
    if set(_words(measure.name)) & {"highest", "lowest", "max", "min", "maximum", "minimum", "top"}:
        return f"Which {TOP_N} {_plural(entity.kind)} have the largest {said} value?"
    return f"Which {TOP_N} {_plural(entity.kind)} have the highest {said}?"


def top_by_count(ctx: _Context) -> Iterator[DraftedExample]:
    """Which 3 companies have the most securities? Through a bridge table, the things on its
    other side: which 3 concerts have the most singers?"""
    for join, entity in _entity_joins(ctx):
        names = entity_names(entity)
        listed = ", ".join(f"e.{ctx.q(n)}" for n in names)
        what = noun(join.child, ctx.entities.get(join.child.lower()))
        counted, through = "COUNT(*)", ""
        other = _other_side(ctx, join)
        if other is not None:
            what = noun(other.parent, ctx.entities.get(other.parent.lower()))
            counted = f"COUNT(DISTINCT c.{ctx.q(other.child_column)})"
            through = f" ({join.child} links them to {other.parent}: count distinct {other.child_column})"
        yield from _some(ctx.example(
            "top_by_count",
            f"Which {TOP_N} {_plural(entity.kind)} have the most {what}?",
            f"Each {join.child} row points to one {entity.table} row through {join.left}{through}; "
            f"count per {entity.kind}, grouped by its key, shown by name.",
            f"SELECT {listed}, {counted} AS {ctx.q('count')} FROM {ctx.q(join.child)} AS c JOIN "
            f"{ctx.q(entity.table)} AS e ON {_on(ctx, join, 'c', 'e')} GROUP BY e.{ctx.q(entity.key)}, "
            f"{listed} ORDER BY {counted} DESC, {listed} LIMIT {TOP_N}", varied=-1))


def _other_side(ctx: _Context, join: Join) -> Join | None:
    """When join.child is a bridge (no entity itself, pointing to another table that is not
    a lookup), its join to that other table."""
    if join.child.lower() in ctx.entities:
        return None
    return next((j for j in ctx.draft.joins if j.child.lower() == join.child.lower()
                 and j.parent.lower() not in (join.parent.lower(), join.child.lower())
                 and j.parent.lower() not in ctx.references and j.composite is None), None)


def names_via_bridge(ctx: _Context) -> Iterator[DraftedExample]:
    """Which singers are linked to concert 'Week 1'? (through a bridge table)"""
    by_child: dict[str, list[tuple[Join, EntityTable]]] = {}
    for join, entity in _entity_joins(ctx):
        by_child.setdefault(join.child.lower(), []).append((join, entity))
    for pairs in by_child.values():
        if len(pairs) < 2 or pairs[0][0].child.lower() in ctx.entities:
            continue
        for (j1, named), (j2, listed_entity) in ((pairs[0], pairs[1]), (pairs[1], pairs[0])):
            if named.table.lower() == listed_entity.table.lower():
                continue
            b = ctx.q(j1.child)
            source = (f"{b} AS b JOIN {ctx.q(named.table)} AS e ON {_on(ctx, j1, 'b', 'e')} "
                      f"JOIN {ctx.q(listed_entity.table)} AS o ON {_on(ctx, j2, 'b', 'o')}")
            values = _pick_entity(ctx, named, source)
            where = _name_filter(ctx, "e", entity_names(named), values or ())
            if not values or where is None:
                continue
            shown = ", ".join(f"o.{ctx.q(n)}" for n in entity_names(listed_entity))
            yield from _some(ctx.example(
                "names_via_bridge",
                f"Which {_plural(listed_entity.kind)} are linked to {named.kind} "
                f"{' '.join(str(v) for v in values)}?",
                f"{j1.child} links {named.table} and {listed_entity.table} ({j1.left} and {j2.left}); "
                f"filter {named.table} by name.",
                f"SELECT DISTINCT {shown} FROM {source} WHERE {where} ORDER BY {shown}",
            ))


def aggregate_in_period(ctx: _Context) -> Iterator[DraftedExample]:
    """What is the total volume of price daily rows in 2023? (a measure over a year)"""
    for table in ctx.draft.schema.tables:
        found = measures(ctx.draft, table)
        spans = periods(table)
        if not found or not spans:
            continue
        measure, (period, is_date) = found[0], spans[0]
        m, p, t = ctx.q(measure.name), ctx.q(period.name), ctx.q(table.name)
        total = ctx.rows(f"SELECT COUNT(*) FROM {t} WHERE {m} IS NOT NULL")
        if is_date:
            years = ctx.rows(f"SELECT DISTINCT {p} FROM {t} WHERE {p} IS NOT NULL ORDER BY {p} "
                             f"LIMIT {SAMPLE_ROWS}") or ()
            year = ctx.choose(sorted({str(v)[:4] for (v,) in years if re.fullmatch(r"\d{4}", str(v)[:4])}))
            if year is None:
                continue
            where = f"{p} >= '{year}-01-01' AND {p} < '{int(year) + 1:04d}-01-01'"
            when = f"in {year} (by {words(period.name)})"
        else:
            counts = ctx.rows(f"SELECT {p}, COUNT(*) FROM {t} WHERE {p} IS NOT NULL AND {m} IS NOT NULL "
                              f"GROUP BY {p} ORDER BY {p} LIMIT {SAMPLE_ROWS}") or ()
            year = ctx.choose([v for v, n in counts if total and n < total[0][0] and literal(v) is not None])
            if year is None:
                continue
            where = f"{p} = {literal(year)}"
            when = f"with {words(period.name)} {year}"
        total_like = bool(set(_words(measure.name)) & _TOTAL_WORDS) and table.name.lower() not in ctx.entities
        function, adjective = ("SUM", "total") if total_like else ("AVG", "average")
        yield from _some(ctx.example(
            "aggregate_in_period",
            f"What is the {adjective} {words(measure.name)} of {noun(table.name, ctx.entities.get(table.name.lower()))} {when}?",
            f"{function} of {table.name}.{measure.name} over the rows of that period ({period.name}).",
            f"SELECT {function}({m}) FROM {t} WHERE {where}",
        ))


def value_for_entity_and_period(ctx: _Context) -> Iterator[DraftedExample]:
    """What was the data value of company X for fiscal year 2022 with data item name Revenue?
    A measure of a fact table, for an entity (joined directly or through one table) and a
    period, with the fact's lookups filtered by their labels, all from one real row."""
    for path in _fact_paths(ctx):
        fact, hops, entity, measure, (alias, period) = path
        names = entity_names(entity)
        source = f"{ctx.q(fact.name)} AS f"
        for i, (join, parent_alias) in enumerate(hops):
            child_alias = "f" if i == 0 else hops[i - 1][1]
            source += f" JOIN {ctx.q(join.parent)} AS {parent_alias} ON {_on(ctx, join, child_alias, parent_alias)}"
        lookups = _lookups(ctx, [("f", fact.name)] + [(a, j.parent) for j, a in hops[:-1]])
        for join, ref, ref_alias, child_alias in lookups:
            source += f" JOIN {ctx.q(ref.table)} AS {ref_alias} ON {_on(ctx, join, child_alias, ref_alias)}"
        columns = ([f"e.{ctx.q(n)}" for n in names] + [f"{alias}.{ctx.q(period.name)}"]
                   + [f"{a}.{ctx.q(ref.label)}" for _, ref, a, _ in lookups])
        listed = ", ".join(columns)
        m = f"f.{ctx.q(measure.name)}"
        rows = ctx.rows(f"SELECT DISTINCT {listed} FROM {source} WHERE {m} IS NOT NULL AND "
                        + " AND ".join(f"{c} IS NOT NULL" for c in columns)
                        + f" ORDER BY {listed} LIMIT {SAMPLE_ROWS}")
        row = ctx.choose(rows or ())
        if row is None or any(literal(v) is None for v in row):
            continue
        where = " AND ".join(f"{c} = {literal(v)}" for c, v in zip(columns, row))
        shown = [f"{words(ref.label)} {v}" for (_, ref, _, _), v in zip(lookups, row[len(names) + 1:])]
        label_words = f" with {_listed(shown)}" if shown else ""
        via = f" through {', '.join(j.child for j, _ in hops[1:])}" if len(hops) > 1 else ""
        yield from _some(ctx.example(
            "value_for_entity_and_period",
            f"What was the {words(measure.name)} of {entity.kind} {' '.join(str(v) for v in row[:len(names)])} "
            f"for {words(period.name)} {row[len(names)]}{label_words}?",
            f"{fact.name}.{measure.name} for one {entity.kind}{via}, filtered by name, by "
            f"{period.name} and by the labels of its lookups (never by their keys).",
            f"SELECT {m} FROM {source} WHERE {where}",
        ))


def _fact_paths(ctx: _Context) -> Iterator[tuple[Table, list[tuple[Join, str]], EntityTable, Column,
                                                 tuple[str, Column]]]:
    """(fact table, joins to the entity with their aliases, entity, measure, (alias, period
    column)): a fact with a measure that reaches an entity directly or through one table
    that is neither a lookup nor an entity, with a year or date on the way."""
    for table in ctx.draft.schema.tables:
        found = measures(ctx.draft, table)
        if not found or table.name.lower() in ctx.entities or table.name.lower() in ctx.references:
            continue
        for join in ctx.draft.joins:
            if join.child.lower() != table.name.lower() or join.composite is not None:
                continue
            parent = join.parent.lower()
            if parent in ctx.entities:
                hops = [(join, "e")]
            elif parent not in ctx.references and parent != table.name.lower():
                onward = next((j for j in ctx.draft.joins if j.child.lower() == parent
                               and j.parent.lower() in ctx.entities and j.composite is None), None)
                if onward is None:
                    continue
                hops = [(join, "p"), (onward, "e")]
            else:
                continue
            entity = ctx.entities[hops[-1][0].parent.lower()]
            spans = [("f", c) for c, _ in periods(table)]
            if len(hops) > 1 and (middle := ctx.draft.schema.table(join.parent)) is not None:
                spans += [("p", c) for c, _ in periods(middle)]
            if spans:
                yield table, hops, entity, found[0], spans[0]


def _lookups(ctx: _Context, tables: Sequence[tuple[str, str]]) -> list[tuple[Join, ReferenceTable, str, str]]:
    """(join, reference, its alias, the alias it hangs from) for the lookups of `tables`."""
    found = []
    for child_alias, name in tables:
        for join in ctx.draft.joins:
            if (join.child.lower() == name.lower() and join.parent.lower() in ctx.references
                    and join.composite is None):
                found.append((join, ctx.references[join.parent.lower()], f"r{len(found)}", child_alias))
    return found[:4]


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _some(example: DraftedExample | None) -> Iterator[DraftedExample]:
    if example is not None:
        yield example


TEMPLATES: tuple[Callable[[_Context], Iterator[DraftedExample]], ...] = (
    count_by_label,
    count_in_period,
    top_by_count,
    names_via_bridge,
    aggregate_in_period,
    top_by_measure,
    value_for_entity_and_period,
    count_per_label,
)


def draft_bank(db: Database, draft: Draft, *, limit: int = MAX_EXAMPLES, per_template: int = PER_TEMPLATE,
               budget_s: float = TIME_BUDGET_S) -> tuple[DraftedExample, ...]:
    """Drafted solved examples for `db`, in turn from each template, within the bounds."""
    ctx = _Context(db, draft, time.monotonic() + budget_s)
    running = [(template, template(ctx)) for template in TEMPLATES]
    taken: dict[str, int] = {}
    found: list[DraftedExample] = []
    seen: set[str] = set()
    while running and len(found) < limit and time.monotonic() <= ctx.deadline:
        still = []
        for template, examples in running:
            if len(found) >= limit:
                break
            example = next(examples, None)
            if example is None:
                continue
            if example.sql not in seen:
                seen.add(example.sql)
                found.append(example)
                taken[template.__name__] = taken.get(template.__name__, 0) + 1
            if taken.get(template.__name__, 0) < per_template:
                still.append((template, examples))
        running = still
    return tuple(found)
