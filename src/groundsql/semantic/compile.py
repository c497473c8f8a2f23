"""Compiling a semantic request into SQL for the database's dialect, through an explicit plan.

    request -> fields (catalog) -> base table -> join paths -> SELECT / WHERE / GROUP BY /
    HAVING / ORDER BY / LIMIT -> sqlglot -> SQL text

The compiler writes only joins the model declares, and never one that would count a measure
twice:

- The base is the table of the request's measures. Measures of several tables (a derived
  measure of two: price times shares) are each aggregated on their own table, by the same
  dimensions, and the results joined on them (drill-across). Without measures, it is the
  table from which every named field is reached with the fewest row-repeating (one-to-many)
  steps: a listing of a person's roles starts at the roles, not at the people.
- Every other table is reached along the shortest path of automatic relationships, then along
  the field's own `via` relationships (a deal's target, a company's parent). Of two equally
  short paths, the one through a table the request's other fields are on is taken (a
  customer's country when the request shows customers), and said in the notes; else the tie
  is an error: the model must say which, with `via`.
- A filter on a table that is reached through a one-to-many step is an EXISTS subquery, so it
  narrows rows without repeating them; a dimension reached that way next to a measure is
  refused (the fan-out trap), never joined.
- Amounts convert at the latest rate on or before their date, and stay as they are when
  already in the currency asked; a measure's own rows (its `filter`) become a WHERE when all
  measures share them, else a conditional aggregate; scaling ("in millions") divides after
  aggregating.

Many-to-one joins are LEFT joins (they never drop a row of the base); one-to-many ones are
inner joins. Everything returned still goes through the validator and the read-only executor.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import networkx as nx
from sqlglot import exp

from groundsql.errors import GroundsqlError
from groundsql.semantic.catalog import Catalog, FieldRef
from groundsql.semantic.model import SCALES, Measure, Relationship
from groundsql.semantic.request import Filter, Request

__all__ = ["AmbiguousJoin", "CompileError", "Compiled", "compile_request", "joined_tables", "measure_tables"]

_MAX_PATH = 5  # relationships between the base and any table a request reaches
_TIES = 4  # equally short paths kept to one table: a tie is broken by the tables a request names
_FIRST = "m1"  # the first table's subquery, when measures of several are joined


class CompileError(GroundsqlError):
    """The request cannot be written as SQL over this model; the message says why."""


class AmbiguousJoin(CompileError):
    """A table is reached in two equally short ways and nothing in the request says which."""


@dataclass(frozen=True)
class Compiled:
    sql: str
    base: str  # the logical table the query starts from
    notes: tuple[str, ...] = ()  # defaults applied, requests set aside: shown in the grounds


@dataclass(frozen=True)
class _Step:
    rel: Relationship
    forward: bool  # from the relationship's `from` table to its `to` table

    @property
    def fans_out(self) -> bool:
        if self.forward:
            return self.rel.type == "one_to_many"
        return self.rel.type != "one_to_one"

    def leads_to(self) -> str:
        return self.rel.to if self.forward else self.rel.from_


Path = tuple[_Step, ...]


def compile_request(catalog: Catalog, request: Request) -> Compiled:
    if isinstance(request.currency, tuple):
        return _in_currencies(catalog, request)
    if request.change is not None:
        return _change(catalog, request)
    if request.per is not None or len(_measure_tables(catalog, request)) > 1:
        plan = _plan(catalog, request)
        columns = {name: names[0] for name, names in plan.outputs.items() if len(names) == 1}
        query = _outer_order(plan.query, request, columns, plan.shown, plan.alias, catalog.dialect)
        return Compiled(query.sql(dialect=catalog.dialect), plan.base, plan.notes)
    return _Compiler(catalog, request).compile()


def _in_currencies(catalog: Catalog, request: Request) -> Compiled:
    """Each amount in two currencies, side by side: the request compiled once in each (its
    own conversion, scale and defaults) and the two joined on its dimensions."""
    assert isinstance(request.currency, tuple)
    codes = list(dict.fromkeys(request.currency))
    if len(codes) == 1:
        return compile_request(catalog, request.model_copy(update={"currency": codes[0]}))
    plans = [_plan(catalog, request.model_copy(update={"currency": code, "order_by": (), "limit": None}))
             for code in codes]
    first = plans[0]
    shown = first.shown
    aliases = [f"c{k + 1}" for k in range(len(plans))]
    select: list[exp.Expression] = [exp.column(name, table=aliases[0]) for name in shown]
    columns = {name: name for name in shown}
    converted = [m for m in first.measures if m.kind != "aggregate" and m.source.amount]  # type: ignore[union-attr]
    if not converted:
        raise CompileError("two currencies are asked for, and the request selects no amount to convert")
    for m in first.measures:
        for k, (code, alias) in enumerate(zip(codes, aliases)):
            if m not in converted and k:
                continue
            name = f"{m.name}_{code.lower()}" if m in converted else m.name
            select.append(exp.alias_(exp.column(m.name, table=alias), name, quoted=False))
            columns.setdefault(m.name, name)
    query = _side_by_side(select, [(plan.query, alias) for plan, alias in zip(plans, aliases)], shown)
    query = _outer_order(query, request, columns, shown, aliases[0], catalog.dialect)
    notes = (*[n for plan in plans for n in plan.notes], f"each amount in {' and in '.join(codes)}")
    return Compiled(query.sql(dialect=catalog.dialect), first.base, tuple(dict.fromkeys(notes)))


@dataclass(frozen=True)
class _Plan:
    """A request's query without its order and limit, and what it shows."""

    query: exp.Select
    outputs: dict[str, list[str]]  # each field's columns
    dims: list[FieldRef]
    measures: list[FieldRef]
    notes: tuple[str, ...]
    base: str
    alias: str = ""  # the subquery the dimensions are read from, when the query is over subqueries

    @property
    def shown(self) -> list[str]:
        return [name for d in self.dims for name in self.outputs[d.name]]


def _plan(catalog: Catalog, request: Request) -> _Plan:
    if request.per is not None:
        return _averaged(catalog, request)
    if len(_measure_tables(catalog, request)) > 1:
        return _across(catalog, request)
    compiler = _Compiler(catalog, request)
    query, outputs, dims, measures = compiler.select()
    return _Plan(query, outputs, dims, measures, tuple(compiler.notes), compiler.base)


Side = tuple[str, "tuple[str, str] | None"]  # a table, and the edge of its series a measure reads


def _averaged(catalog: Catalog, request: Request) -> _Plan:
    """The measures' average over the values of `per` ("average quarterly revenue"): the
    request grouped by `per` too, then averaged by its own dimensions."""
    per = catalog.field(request.per or "")
    if per is None or per.kind not in ("dimension", "time"):
        raise CompileError(f"an average is taken over a dimension's values, and {request.per!r} is none")
    select = request.select if per.name in request.select else (*request.select, per.name)
    inner = _plan(catalog, request.model_copy(update={"select": select, "per": None, "order_by": (), "limit": None,
                                                      "scale": None}))
    if not inner.measures:
        raise CompileError(f"an average over {per.name} is of a measure: the request selects none")
    alias = "per_value"
    dims = [d for d in inner.dims if d.name != per.name]
    shown = [name for d in dims for name in inner.outputs[d.name]]
    outer: list[exp.Expression] = [exp.column(name, table=alias) for name in shown]
    for m in inner.measures:
        value: exp.Expression = exp.Avg(this=exp.column(m.name, table=alias))
        if request.scale and m.kind != "aggregate" and m.source.amount:  # type: ignore[union-attr]
            value = _scaled(value, request.scale)
        outer.append(exp.alias_(value, m.name, quoted=False))
    query = exp.select(*outer).from_(exp.Subquery(this=inner.query, alias=exp.TableAlias(
        this=exp.to_identifier(alias))))
    if shown:
        query = query.group_by(*[exp.column(name, table=alias) for name in shown])
    outputs = {d.name: inner.outputs[d.name] for d in dims} | {m.name: [m.name] for m in inner.measures}
    notes = (*inner.notes, f"the average of each {per.name}'s value")
    return _Plan(query, outputs, dims, inner.measures, notes, inner.base, alias)


def _measure_tables(catalog: Catalog, request: Request) -> list[Side]:
    """The rows the request's measures aggregate (a derived measure's parts'): their tables,
    and apart within one, the last or first rows of its series (a year's return: the last
    close over the first)."""
    sides: list[Side] = []
    for name in request.select:
        ref = catalog.field(name)
        if ref is None or ref.kind not in ("measure", "derived", "aggregate"):
            continue
        for part in (catalog.fields[p] for p in ref.parts) if ref.kind == "derived" else (ref,):
            if (part.table, _edge(part)) not in sides:
                sides.append((part.table, _edge(part)))
    return sides


def measure_tables(catalog: Catalog, request: Request) -> list[str]:
    """The tables whose rows the request's measures aggregate."""
    return list(dict.fromkeys(table for table, _ in _measure_tables(catalog, request)))


def _edge(ref: FieldRef) -> tuple[str, str] | None:
    return getattr(ref.source, "edge", None) if ref.kind == "measure" else None


def _across(catalog: Catalog, request: Request) -> _Plan:
    """Measures of several tables (market capitalisation: a last close times the shares
    outstanding): each table's measures aggregated on their own rows, by the request's
    dimensions and the filters that reach that table, and the results joined on the
    dimensions (drill-across), so no join repeats another table's rows."""
    chosen = [catalog.field(name) for name in _unique(request.select)]
    if any(ref is None for ref in chosen):
        missing = next(name for name, ref in zip(_unique(request.select), chosen) if ref is None)
        raise CompileError(f"no field to select named {missing!r} in the semantic model")
    for flt in request.where:
        ref = catalog.field(flt.field)
        if ref is not None and ref.kind in ("measure", "derived", "aggregate"):
            raise CompileError(f"a filter on {flt.field} next to measures of several tables is not supported")
    dims = [ref.name for ref in chosen if ref.kind in ("dimension", "time", "fact")]  # type: ignore[union-attr]
    measures = [ref for ref in chosen if ref.kind in ("measure", "derived", "aggregate")]  # type: ignore[union-attr]
    sides: list[tuple[str, _Plan]] = []
    side_of: dict[str, str] = {}
    used: Counter[int] = Counter()
    tables = _measure_tables(catalog, request)
    for k, (table, edge) in enumerate(tables):
        parts = [p.name for m in measures for p in ((catalog.fields[n] for n in m.parts) if m.kind == "derived" else (m,))
                 if (p.table, _edge(p)) == (table, edge)]
        where = [(i, f) for i, f in enumerate(request.where) if _reaches(catalog, table, f.field)]
        used.update(i for i, _ in where)
        sub = request.model_copy(update={"select": tuple(_unique([*dims, *parts])), "where": tuple(f for _, f in where),
                                         "order_by": (), "limit": None, "scale": None, "change": None})
        plan = _plan(catalog, sub)
        alias = _FIRST if k == 0 else f"m{k + 1}"
        sides.append((alias, plan))
        side_of.update({name: alias for name in parts})
    left_out = [f.field for i, f in enumerate(request.where) if i not in used]
    if left_out:
        raise CompileError(f"the filter on {left_out[0]} reaches none of the tables of "
                           + ", ".join(m.name for m in measures))
    shown = sides[0][1].shown
    if not shown and not any(n > 1 for n in used.values()):
        # Total revenue beside the number of deals relates nothing: two numbers side by side.
        raise CompileError(f"measures of different tables ({', '.join(t for t, _ in tables)}) are combined only by a dimension "
                           "or a filter they share, and the request has neither")
    if any(plan.shown != shown for _, plan in sides[1:]):
        raise CompileError("the measures of " + " and ".join(p.base for _, p in sides) + " are not shown by the same "
                           "dimensions (a filter that reaches one table only leaves a column in the other)")
    first = sides[0][0]
    select: list[exp.Expression] = [exp.column(name, table=first) for name in shown]
    for m in measures:
        if m.kind == "derived":
            value = m.exprs[0].copy()
            for column in list(value.find_all(exp.Column)):
                column.replace(exp.Paren(this=exp.column(column.name, table=side_of[column.name])))
        else:
            value = exp.column(m.name, table=side_of[m.name])
        if request.scale and m.kind != "aggregate" and m.source.amount:  # type: ignore[union-attr]
            value = _scaled(value, request.scale)
        select.append(exp.alias_(value, m.name, quoted=False))
    query = _side_by_side(select, [(plan.query, alias) for alias, plan in sides], shown)
    outputs = {**sides[0][1].outputs, **{m.name: [m.name] for m in measures}}
    notes = [n for _, plan in sides for n in plan.notes]
    notes.append("measures of " + " and ".join(dict.fromkeys(plan.base for _, plan in sides)) + " each aggregated "
                 "on their own rows, then joined" + (f" on {', '.join(shown)}" if shown else ""))
    return _Plan(query, outputs, sides[0][1].dims, measures, tuple(dict.fromkeys(notes)), sides[0][1].base, _FIRST)


def _side_by_side(select: list[exp.Expression], parts: list[tuple[exp.Select, str]], shown: list[str]) -> exp.Select:
    """`select` over subqueries (each with its alias) joined on the dimensions they all show,
    or side by side (one row each) when they show none."""
    (first, first_alias), *rest = parts
    query = exp.select(*select).from_(exp.Subquery(this=first, alias=exp.TableAlias(
        this=exp.to_identifier(first_alias))))
    for sub, alias in rest:
        other = exp.Subquery(this=sub, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        if shown:
            query = query.join(other, on=_and([exp.EQ(this=exp.column(name, table=first_alias),
                                                      expression=exp.column(name, table=alias)) for name in shown]))
        else:
            query = query.join(other, join_type="cross")
    return query


def _reaches(catalog: Catalog, table: str, name: str) -> bool:
    """Whether a filter on the field `name` applies to the rows of `table`: they reach its
    table without a one-to-many step (a company's fiscal year is a period's, not a company's)."""
    ref = catalog.field(name)
    if ref is None:
        return False
    path = _Compiler(catalog, Request())._shortest(table, ref.table, strict=False)
    return path is not None and not any(step.fans_out for step in path)


def joined_tables(catalog: Catalog, starts: Iterable[str], goals: Iterable[str]) -> set[str]:
    """Those of `goals` that a request on the rows of one of `starts` can filter by: the
    model's relationships lead there (as the compiler would join them, an EXISTS for a
    one-to-many step)."""
    compiler = _Compiler(catalog, Request())
    starts = list(dict.fromkeys(starts))
    return {goal for goal in dict.fromkeys(goals)
            if any(compiler._shortest(start, goal, strict=False) is not None for start in starts)}


def _outer_order(query: exp.Select, request: Request, columns: dict[str, str], shown: list[str],
                 first: str, dialect: str) -> exp.Select:
    """The order the request asks for, then its dimensions (a stable order), and its limit,
    on a query over subqueries; `columns`: each field's column. A dimension is in every
    subquery: it is read from the `first`."""

    def column(name: str) -> exp.Column:
        return exp.column(name, table=first) if name in shown else exp.column(name)

    asked = [o for o in request.order_by if o.field in columns]
    order = [_ordered(column(columns[o.field]), o.desc, dialect) for o in asked]
    order += [_ordered(column(name), False, dialect) for name in shown if name not in {columns[o.field] for o in asked}]
    if order:
        query = query.order_by(*order)
    if request.limit is not None:
        query = query.limit(request.limit)
    return query


def _change(catalog: Catalog, request: Request) -> Compiled:
    """The selected measures at the change's `to` less at its `from`, by the other dimensions:
    the request compiled once for each period (each a subquery, so every measure, default
    and conversion is what it is alone), joined on the dimensions they share."""
    change = request.change
    assert change is not None
    ref = catalog.field(change.field)
    if ref is None or ref.kind != "time":
        raise CompileError(f"a change is between two values of a time dimension, and {change.field!r} is none")
    if change.from_ == change.to:
        raise CompileError(f"a change from {change.from_} to the same {change.field}")
    where = tuple(f for f in request.where if f.field != change.field)
    plans = []
    for value in (change.to, change.from_):
        # Scaled once, the difference ("by how many millions"), not each side.
        period = request.model_copy(update={"change": None, "order_by": (), "limit": None, "scale": None,
                                            "where": (*where, Filter(field=change.field, value=value))})
        plans.append(_plan(catalog, period))
    now, previous = plans
    query, before, measures = now.query, previous.query, now.measures
    if not measures:
        raise CompileError("a change is of a measure: the request selects none")
    dialect = catalog.dialect
    shown = now.shown
    select: list[exp.Expression] = [exp.column(name, table="cur") for name in shown]
    columns: dict[str, str] = {name: name for name in shown}
    for m in measures:
        new, old = exp.column(m.name, table="cur"), exp.column(m.name, table="prev")
        difference: exp.Expression = exp.Sub(this=new, expression=old)
        name = f"{m.name}_change"
        if change.percent:
            name += "_pct"
            nonzero = exp.Nullif(this=old.copy(), expression=exp.Literal.number(0))
            difference = exp.Div(this=exp.Mul(this=_paren(difference), expression=exp.Literal.number("100.0")),
                                 expression=nonzero)
        elif request.scale and m.source.amount:  # type: ignore[union-attr]
            difference = _scaled(difference, request.scale)
        select.append(exp.alias_(difference, name, quoted=False))
        columns[m.name] = name
    joined = _side_by_side(select, [(query, "cur"), (before, "prev")], shown)
    joined = _outer_order(joined, request, columns, shown, "cur", dialect)
    notes = (*now.notes, f"the change of {', '.join(m.name for m in measures)} from {change.field} {change.from_} "
             f"to {change.to}" + (" in percent of the first" if change.percent else ""))
    return Compiled(joined.sql(dialect=dialect), now.base, tuple(dict.fromkeys(notes)))


class _Compiler:
    def __init__(self, catalog: Catalog, request: Request) -> None:
        self.catalog = catalog
        self.model = catalog.model
        self.request = request
        # table -> the steps out of it along automatic relationships, both ways
        self.steps: dict[str, list[tuple[_Step, str]]] = {}
        for rel in self.model.relationships:
            if rel.automatic:
                self.steps.setdefault(rel.from_, []).append((_Step(rel, True), rel.to))
                self.steps.setdefault(rel.to, []).append((_Step(rel, False), rel.from_))
        self.dialect = catalog.dialect
        self.notes: list[str] = []
        self.aliases: dict[Path, str] = {}
        self.joins: list[exp.Join] = []
        self.used_aliases: set[str] = set()
        self.rate_joins: dict[tuple[str, str], tuple[str, str | None]] = {}
        self._paths: dict[str, Path] = {}
        self.used_tables: set[str] = set()  # the logical tables of the request's fields

    # -- the plan ------------------------------------------------------------------------------

    def _labels(self, dims: list[FieldRef], filters: list[tuple[Filter, FieldRef]], pinned: set[str]) -> list[FieldRef]:
        """The name of the entity whose rows a listing's fields describe: the nearest entity
        table from which every table they are declared on is reached."""
        tables = {ref.table for ref in dims} | {ref.table for _, ref in filters}
        graph = self.catalog.graph
        best: tuple[int, FieldRef] | None = None
        for ref in self.catalog.of_kind("dimension"):
            if ref.via or not ref.source.entity or ref.name in pinned:  # type: ignore[union-attr]
                continue
            reach = nx.single_source_shortest_path_length(graph, ref.table)
            if tables <= reach.keys():
                distance = sum(reach[t] for t in tables)
                if best is None or distance < best[0]:
                    best = (distance, ref)
        return [best[1]] if best else []

    def compile(self) -> Compiled:
        query, outputs, dims, measures = self.select()
        order = self._order(outputs, dims, measures)
        if order:
            query = query.order_by(*order)
        if self.request.limit is not None:
            query = query.limit(self.request.limit)
        return Compiled(query.sql(dialect=self.dialect), self.base, tuple(self.notes))

    def select(self) -> tuple[exp.Select, dict[str, list[str]], list[FieldRef], list[FieldRef]]:
        """The query without its order and limit; the columns of each field; the dimensions
        and measures shown."""
        req = self.request
        chosen = [self._ref(name, ("measure", "derived", "aggregate", "dimension", "time", "fact"), "field to select")
                  for name in _unique(req.select)]
        measures = [ref for ref in chosen if ref.kind in ("measure", "derived", "aggregate")]
        dims = [ref for ref in chosen if ref.kind in ("dimension", "time", "fact")]
        unique = {f.model_dump_json(): f for f in req.where}  # a filter the model repeated counts once
        filters = [(f, self._ref(f.field, None, "filter")) for f in unique.values()]
        filters = self._without_repeats(filters)
        self.used_tables = {ref.table for ref in chosen} | {ref.table for _, ref in filters}
        if not measures and not dims:
            raise CompileError("the request selects nothing")
        filters = self._defaults(measures, dims, filters)
        # A dimension filtered to one value is the same on every row: it answers nothing; next
        # to a measure, one filtered to a year or a month would only split the measure by day.
        single = {f.field for f, ref in filters if f.op == "=" and (_one_value(f.value, ref) or measures)}
        single -= {name for name, n in Counter(f.field for f, _ in filters if f.op == "=").items() if n > 1}
        kept = [d for d in dims if d.name not in single]
        if not measures and not kept:
            # A listing whose every column is pinned ("Which chemicals makers are British?"
            # showing country = United Kingdom) lists the rows those columns describe.
            kept = self._labels(dims, filters, single) or dims[:1]
        if kept != dims:
            self.notes.append("left out of the columns, filtered to one value: "
                              + ", ".join(d.name for d in dims if d not in kept))
            dims = kept
        parts = self._measure_parts(measures + [ref for f, ref in filters if ref.kind in ("measure", "derived", "aggregate")])
        self.base = self._base(measures, dims, filters)
        self.base_table = self.catalog.table(self.base)
        self.aliases[()] = self._new_alias(self.base_table.name)
        filters = self._either(filters)
        if not measures:
            # A listing filtered to several values of a dimension shows which row has which
            # ("reorganizing or out of business": each company's status).
            shown = {d.name for d in dims}
            for flt, ref in filters:
                if ref.kind == "dimension" and flt.op == "in" and ref.name not in shown and len(ref.exprs) == 1 \
                        and not self._many(ref):
                    dims.append(ref)
                    shown.add(ref.name)

        select: list[exp.Expression] = []
        group: list[exp.Expression] = []
        outputs: dict[str, list[str]] = {}
        dim_paths: list[Path] = []
        for ref in dims:
            path = self._field_path(ref)
            if measures and any(step.fans_out for step in path):
                raise CompileError(f"{ref.name} is reached from {self.base} through a one-to-many relationship: "
                                   f"grouping {', '.join(m.name for m in measures)} by it would count rows twice")
            dim_paths.append(path)
            alias = self._join(path)
            names = []
            for k, expression in enumerate(self._dimension_exprs(ref, alias)):
                name = ref.name if len(ref.exprs) == 1 else _column_name(ref.exprs[k], ref.name, k)
                select.append(exp.alias_(expression, name, quoted=False))
                group.append(expression.copy())
                names.append(name)
            outputs[ref.name] = names

        where, having = self._filters(filters, dim_paths)
        edges = {_edge(p) for p in parts}
        if len(edges) > 1:  # never: _plan gives each its own query
            raise CompileError("measures that read the last or first rows of a series are not combined with others")
        if parts and _edge(parts[0]) is not None:
            where.append(self._edge_rows(parts[0], filters, dims))
        hoisted = self._hoisted_filter(parts)
        if hoisted is not None:
            where.append(hoisted)
        elif parts and all(getattr(p.source, "filter", None) for p in parts):
            where.append(_or([self._qualify(p.exprs[1], p) for p in parts]))
        for ref in measures:
            select.append(exp.alias_(self._measure(ref, hoisted is not None, scaled=True), ref.name, quoted=False))
            outputs[ref.name] = [ref.name]

        query = exp.select(*select).from_(_table(self.base_table.table, self.aliases[()]))
        for join in self.joins:
            query = query.join(join)
        if where:
            query = query.where(_and(where))
        aggregated = bool(measures or having)
        if aggregated and group:
            query = query.group_by(*group)
        if having:
            query = query.having(_and(having))
        if not aggregated and not any(d.kind == "fact" for d in dims):
            query = query.distinct()
        return query, outputs, dims, measures

    def _ref(self, name: str, kinds: tuple[str, ...] | None, role: str) -> FieldRef:
        ref = self.catalog.field(name)
        if ref is None:
            raise CompileError(f"no {role} named {name!r} in the semantic model")
        if kinds is not None and ref.kind not in kinds:
            raise CompileError(f"{name!r} is a {ref.kind}, not a {role}")
        return ref

    def _without_repeats(self, filters: list[tuple[Filter, FieldRef]]) -> list[tuple[Filter, FieldRef]]:
        """One value filtered by two fields of the same entity (company and financial_advisor
        both 'X'): the role the model named beside the plain one is what it meant."""
        kept = []
        for flt, ref in filters:
            twins = [r for f, r in filters if r is not ref and f.value == flt.value and f.op == flt.op
                     and r.kind == "dimension" and ref.kind == "dimension"
                     and r.source.entity and r.source.entity == ref.source.entity]  # type: ignore[union-attr]
            if twins and not ref.via and all(t.via for t in twins):
                self.notes.append(f"{ref.name} = {flt.value!r} left out: {twins[0].name} names the same")
                continue
            kept.append((flt, ref))
        return kept

    def _either(self, filters: list[tuple[Filter, FieldRef]]) -> list[tuple[Filter, FieldRef]]:
        """Equalities on one field of a row that holds one value of it (a company's country,
        a period's year) cannot all hold: the model meant either value, an IN. A field reached
        through a one-to-many step keeps them apart (a company with both roles)."""
        merged: dict[str, list[Any]] = {}
        for flt, ref in filters:
            if flt.op in ("=", "in") and ref.kind in ("dimension", "time") and not self._many(ref) \
                    and (ref.kind == "dimension" or _one_value(flt.value, ref)):
                merged.setdefault(ref.name, []).extend(flt.value if isinstance(flt.value, list) else [flt.value])
        kept: list[tuple[Filter, FieldRef]] = []
        done: set[str] = set()
        for flt, ref in filters:
            values = merged.get(ref.name)
            if values is None or len(values) == 1:
                kept.append((flt, ref))
            elif ref.name not in done:
                done.add(ref.name)
                values = list(dict.fromkeys(values))
                one = values[0] if len(values) == 1 else values
                kept.append((Filter(field=ref.name, op="=" if len(values) == 1 else "in", value=one), ref))
        return kept

    def _many(self, ref: FieldRef) -> bool:
        """Whether `ref` can hold several values for one row of the base (it is read through
        a one-to-many relationship)."""
        try:
            return ref.kind == "filter" or any(step.fans_out for step in self._field_path(ref))
        except CompileError:
            return True

    def _measure_parts(self, refs: list[FieldRef]) -> list[FieldRef]:
        parts: list[FieldRef] = []
        for ref in refs:
            for part in (self.catalog.fields[p] for p in ref.parts) if ref.kind == "derived" else (ref,):
                if part.kind in ("measure", "aggregate") and part not in parts:
                    parts.append(part)
        return parts

    def _defaults(self, measures: list[FieldRef], dims: list[FieldRef],
                  filters: list[tuple[Filter, FieldRef]]) -> list[tuple[Filter, FieldRef]]:
        """A measure's default filters, for the fields the request neither filters nor groups by."""
        used = {ref.name for _, ref in filters} | {d.name for d in dims}
        used |= {self._time_root(ref) for ref in [*dims, *(r for _, r in filters)] if ref.kind == "time"}
        added = list(filters)
        for ref in self._measure_parts(measures):
            for default in getattr(ref.source, "defaults", ()):
                if default.field in used:
                    continue
                aside = [name for name in default.unless if name in used]
                if aside:
                    # Grouped by a field that sets the default aside ("each quarter"): the rows
                    # that have it (not the annual row, whose quarter is empty).
                    for name in aside:
                        if name in {d.name for d in dims} and name not in {r.name for _, r in added}:
                            added.append((Filter(field=name, op="is not null"), self.catalog.fields[name]))
                    continue
                used.add(default.field)
                added.append((Filter(field=default.field, value=default.value), self.catalog.fields[default.field]))
                said = default.field if default.value is None else f"{default.field} = {default.value!r}"
                self.notes.append(f"{ref.name}: {said} (the measure's default)")
        return added

    @staticmethod
    def _time_root(ref: FieldRef) -> str:
        return ref.source.name

    # -- the base table and the paths to every other table ------------------------------------

    def _base(self, measures: list[FieldRef], dims: list[FieldRef], filters: list[tuple[Filter, FieldRef]]) -> str:
        if measures:
            tables = {p.table for p in self._measure_parts(measures)} | {m.table for m in measures if m.kind == "aggregate"}
            if len(tables) > 1:
                listed = ", ".join(f"{m.name} ({m.table})" for m in measures)
                raise CompileError(f"measures of different tables are not combined in one request: {listed}")
            return tables.pop()
        anchors = list(dict.fromkeys([d.table for d in dims] + [ref.table for _, ref in filters]))
        best: tuple[tuple[int, int, int], str] | None = None
        for position, table in enumerate([*anchors, *(t.name for t in self.model.tables if t.name not in anchors)]):
            cost = [0, 0, position]
            for anchor in anchors:
                path = self._shortest(table, anchor, strict=False)
                if path is None:
                    break
                cost[0] += sum(step.fans_out for step in path)
                cost[1] += len(path)
            else:
                if best is None or tuple(cost) < best[0]:
                    best = (tuple(cost), table)  # type: ignore[assignment]
        if best is None:
            raise CompileError("no table of the semantic model reaches all of " + ", ".join(anchors)
                               + " through its relationships")
        return best[1]

    def _shortest(self, start: str, goal: str, strict: bool = True) -> Path | None:
        """The path of automatic relationships from `start` to `goal` with the fewest
        one-to-many steps, then the fewest steps; a tie between two is ambiguous. A path goes
        down (to rows that refer to it) before it goes up, never up and then down."""
        if start == goal:
            return ()
        # Breadth first by length, keeping for each (table, gone up yet) the cheapest paths
        # there (a few at most: enough to see a tie and break it). A costlier way to a table
        # cannot become the cheaper with the same steps after it, so nothing else is needed: on
        # a warehouse of 500 tables, listing every path instead took minutes.
        State = tuple[str, bool]
        best: dict[State, tuple[tuple[int, int], list[Path]]] = {(start, False): ((0, 0), [()])}
        frontier = dict(best)
        for _ in range(_MAX_PATH):
            reached: dict[State, tuple[tuple[int, int], list[Path]]] = {}
            for (at, went_up), (cost, paths) in frontier.items():
                if at == goal:
                    continue
                for step, there in self.steps.get(at, ()):
                    if went_up and not step.forward:
                        # Up to a shared table and down to another (a deal's unit, then the
                        # figures in that unit) relates nothing: the chasm trap.
                        continue
                    state = (there, went_up or step.forward)
                    new_cost = (cost[0] + step.fans_out, cost[1] + 1)
                    for path in paths:
                        if there == start or any(s.leads_to() == there for s in path):
                            continue
                        new = path + (step,)
                        for table in (best, reached):
                            held = table.get(state)
                            if held is None or new_cost < held[0]:
                                table[state] = (new_cost, [new])
                            elif new_cost == held[0] and len(held[1]) < _TIES and new not in held[1]:
                                held[1].append(new)
            frontier = {state: best[state] for state in reached if best[state][0] == reached[state][0]}
        found = [(cost, path) for (table, _), (cost, paths) in best.items() if table == goal for path in paths]
        if not found:
            return None
        found.sort(key=lambda item: item[0])
        best_cost, best = found[0]
        ties = [p for cost, p in found[1:] if cost == best_cost and p != best]
        if ties and strict:
            chosen, by = self._through_used([best, *ties], self.used_tables), "request"
            if chosen is None and self.request.through:
                chosen, by = self._through_used([best, *ties], set(self.request.through)), "question"
            if chosen is None:
                raise AmbiguousJoin(f"{goal} is reached from {start} in two ways ({_describe(best)}; "
                                   f"{_describe(ties[0])}): the semantic model must name one with via")
            others = "; ".join(_describe(p) for p in (best, *ties) if p != chosen)
            self.notes.append(f"{goal} reached through {_describe(chosen)}, a table the {by} names, "
                              f"not {others}")
            return chosen
        return best

    def _through_used(self, paths: list[Path], tables: set[str]) -> Path | None:
        """Of equally short paths, the one through the most of `tables` (those the request's
        other fields are on: "customers in Germany" showing the customer, the customer's
        country, not the site's); None when none or several pass through as many."""
        def used(path: Path) -> int:
            return sum(step.leads_to() in tables for step in path[:-1])

        counts = sorted(((used(p), p) for p in paths), key=lambda item: -item[0])
        if counts[0][0] == 0 or len(counts) > 1 and counts[1][0] == counts[0][0]:
            return None
        return counts[0][1]

    def _field_path(self, ref: FieldRef) -> Path:
        to_table = self._path_to(ref.table)
        steps = []
        for name in ref.via:
            rel = self.model.relationship(name)
            assert rel is not None
            steps.append(_Step(rel, True))
        return to_table + tuple(steps)

    def _path_to(self, table: str) -> Path:
        if table not in self._paths:
            path = self._shortest(self.base, table)
            if path is None:
                raise CompileError(f"{table} cannot be reached from {self.base} through the model's relationships")
            self._paths[table] = path
        return self._paths[table]

    # -- joins -----------------------------------------------------------------------------

    def _new_alias(self, name: str) -> str:
        stem = re.sub(r"\W+", "_", name.lower()).strip("_") or "t"
        alias, n = stem, 2
        while alias in self.used_aliases:
            alias, n = f"{stem}_{n}", n + 1
        self.used_aliases.add(alias)
        return alias

    def _join(self, path: Path) -> str:
        """The alias of the table at the end of `path`, joining what is missing."""
        for end in range(1, len(path) + 1):
            prefix = path[:end]
            if prefix in self.aliases:
                continue
            step = prefix[-1]
            self.joins.extend(self._step_joins(step, self.aliases[prefix[:-1]], prefix, inner=step.fans_out))
        return self.aliases[path]

    def _step_joins(self, step: _Step, at: str, prefix: Path, inner: bool) -> list[exp.Join]:
        rel = step.rel
        target = self.catalog.table(step.leads_to())
        name = rel.name if not rel.automatic else target.name
        alias = self._new_alias(name)
        self.aliases[prefix] = alias
        kind = "" if inner else "LEFT"
        if rel.through is None:
            conditions = [exp.EQ(this=exp.column(a if step.forward else b, at),
                                 expression=exp.column(b if step.forward else a, alias)) for a, b in rel.columns]
            return [_join_on(target.table, alias, conditions, kind)]
        bridge = rel.through
        bridge_alias = self._new_alias(bridge.table)
        here_key, here_col = (self.catalog.table(rel.from_).key[0], bridge.from_column) if step.forward else \
            (self.catalog.table(rel.to).key[0], bridge.to_column)
        there_key, there_col = (target.key[0], bridge.to_column) if step.forward else (target.key[0], bridge.from_column)
        first = [exp.EQ(this=exp.column(here_col, bridge_alias), expression=exp.column(here_key, at))]
        if bridge.where:
            first.append(_qualified(self._parse(bridge.where), bridge_alias))
        second = [exp.EQ(this=exp.column(there_key, alias), expression=exp.column(there_col, bridge_alias))]
        return [_join_on(bridge.table, bridge_alias, first, kind), _join_on(target.table, alias, second, kind)]

    def _parse(self, sql: str) -> exp.Expression:
        from groundsql.semantic.catalog import parse

        return parse(sql, self.dialect)

    # -- expressions -----------------------------------------------------------------------------

    def _qualify(self, expression: exp.Expression, ref: FieldRef, alias: str | None = None) -> exp.Expression:
        """`expression` of `ref` with every column under the alias of the table it reads:
        its own (at the end of its via) or another logical table named before a dot."""
        own = alias if alias is not None else self._join(self._field_path(ref))
        return self._qualify_at(expression, own)

    def _qualify_at(self, expression: exp.Expression, own: str) -> exp.Expression:
        copy = expression.copy()
        for column in list(copy.find_all(exp.Column)):
            if isinstance(column.this, exp.Star):
                continue
            if column.table:
                other = self._join(self._path_to(column.table))
                column.set("table", exp.to_identifier(other))
            else:
                column.set("table", exp.to_identifier(own))
        return copy

    def _dimension_exprs(self, ref: FieldRef, alias: str) -> list[exp.Expression]:
        if ref.kind == "time" and ref.grain is not None:
            return [self._grain(self._qualify(ref.exprs[0], ref, alias), ref.grain)]
        return [self._qualify(e, ref, alias) for e in ref.exprs]

    def _grain(self, column: exp.Expression, grain: str) -> exp.Expression:
        if self.dialect == "sqlite":
            text = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}
            if grain == "year":
                return exp.cast(exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string("%Y"), column]), "INTEGER")
            if grain == "quarter":
                month = exp.cast(exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string("%m"), column]), "INTEGER")
                return exp.Div(this=exp.Paren(this=exp.Add(this=month, expression=exp.Literal.number(2))),
                               expression=exp.Literal.number(3), typed=True)
            return exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(text[grain]), column])
        # Cast first: a date kept as ISO text (as SQLite keeps them) has no year of its own.
        day = exp.cast(column, "DATE")
        if grain in ("year", "quarter"):
            return exp.Extract(this=exp.var(grain.upper()), expression=day)
        if grain == "month":
            return exp.TimeToStr(this=day, format=exp.Literal.string("%Y-%m"))
        return day

    def _measure(self, ref: FieldRef, hoisted: bool, scaled: bool, convert: bool = True) -> exp.Expression:
        """The aggregate of a measure (converted into the request's currency), or a derived
        measure with its parts in place; divided by the scale when asked and it is an amount."""
        if ref.kind == "aggregate":
            fact = self._qualify(ref.exprs[0], ref)
            func = {"sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}[ref.aggregation or "sum"]
            return func(this=fact)
        if ref.kind == "derived":
            combined = ref.exprs[0].copy()
            for column in list(combined.find_all(exp.Column)):
                part = self.catalog.fields[column.name]
                column.replace(exp.Paren(this=self._measure(part, hoisted, scaled=False)))
            value: exp.Expression = combined
        else:
            value = self._aggregate(ref, hoisted, convert)
        measure: Measure = ref.source  # type: ignore[assignment]
        if scaled and self.request.scale and measure.amount:
            value = _scaled(value, self.request.scale)
        return value

    def _aggregate(self, ref: FieldRef, hoisted: bool, convert: bool) -> exp.Expression:
        measure: Measure = ref.source  # type: ignore[assignment]
        value = self._qualify(ref.exprs[0], ref)
        condition = None if hoisted or measure.filter is None else self._qualify(ref.exprs[1], ref)
        rate = self._rate(ref) if convert and measure.currency is not None and self.request.currency else None
        for agg in list(value.find_all(exp.AggFunc)):
            argument = agg.this
            if isinstance(argument, exp.Star):
                argument = exp.Literal.number(1)
            elif argument is None:
                continue
            unconverted = None
            if rate is not None and not isinstance(agg, exp.Count):
                original, argument = argument, rate(argument)
                # An amount with no rate to convert it is not left out of a total in silence:
                # the total is NULL (the grounds say the rates' dates).
                missing = exp.And(this=exp.Not(this=exp.Is(this=original.copy(), expression=exp.Null())),
                                  expression=exp.Is(this=argument.copy(), expression=exp.Null()))
                if condition is not None:
                    missing = exp.And(this=condition.copy(), expression=missing)
                unconverted = exp.Sum(this=exp.Case(ifs=[exp.If(this=missing, true=exp.Literal.number(1))],
                                                    default=exp.Literal.number(0)))
            if condition is not None:
                argument = exp.Case(ifs=[exp.If(this=condition.copy(), true=argument)])
            agg.set("this", argument)
            if unconverted is not None:
                guarded = exp.Case(ifs=[exp.If(this=exp.GT(this=unconverted, expression=exp.Literal.number(0)),
                                               true=exp.Null())], default=agg.copy())
                agg.replace(guarded)
                if agg is value:
                    value = guarded
        return value

    def _rate(self, ref: FieldRef):
        """A function that converts an amount of `ref`'s rows into the request's currency."""
        conv = self.model.currency
        measure: Measure = ref.source  # type: ignore[assignment]
        assert conv is not None and measure.currency is not None
        code = self.request.currency
        if code not in self.catalog.currency_keys:
            raise CompileError(f"no currency coded {code!r}")
        own = self._join(self._field_path(ref))
        currency_column = self._qualify_at(self._parse(measure.currency.column), own)
        key = (measure.currency.column, measure.currency.date)
        if key not in self.rate_joins:
            date = self._qualify_at(self._parse(measure.currency.date), own)
            rate_alias = self._new_alias("rate")
            latest = exp.select(exp.Max(this=exp.column(conv.date_column, "r_latest"))).from_(
                _table(conv.table, "r_latest")).where(_and([
                    exp.EQ(this=exp.column(conv.currency_column, "r_latest"), expression=currency_column.copy()),
                    exp.LTE(this=exp.column(conv.date_column, "r_latest"), expression=date)]))
            self.joins.append(_join_on(conv.table, rate_alias, [
                exp.EQ(this=exp.column(conv.currency_column, rate_alias), expression=currency_column.copy()),
                exp.EQ(this=exp.column(conv.date_column, rate_alias), expression=exp.Subquery(this=latest))], "LEFT"))
            target_alias = None
            if code != conv.base:
                target_alias = self._new_alias("target_rate")
                self.joins.append(_join_on(conv.table, target_alias, [
                    exp.EQ(this=exp.column(conv.currency_column, target_alias),
                           expression=_literal(self.catalog.currency_keys[code])),
                    exp.EQ(this=exp.column(conv.date_column, target_alias),
                           expression=exp.column(conv.date_column, rate_alias))], "LEFT"))
            self.rate_joins[key] = (rate_alias, target_alias)
            self.notes.append(f"amounts in {code} at the latest rate on or before {measure.currency.date}; "
                              f"amounts already in {code} as they are")
        rate_alias, target_alias = self.rate_joins[key]
        same = exp.EQ(this=currency_column, expression=_literal(self.catalog.currency_keys[code]))

        def convert(amount: exp.Expression) -> exp.Expression:
            converted: exp.Expression = exp.Mul(this=_paren(amount.copy()), expression=exp.column(conv.rate_column, rate_alias))
            if target_alias is not None:
                converted = exp.Div(this=converted, expression=exp.column(conv.rate_column, target_alias), typed=True)
            return exp.Case(ifs=[exp.If(this=same.copy(), true=amount)], default=converted)

        return convert

    def _edge_rows(self, ref: FieldRef, filters: list[tuple[Filter, FieldRef]], dims: list[FieldRef]) -> exp.Expression:
        """The rows of each series (the key's other columns) at its last (first) date among
        those the request's filters on that date admit, in each of the periods it is grouped
        by: a year's last close, each month's last close."""
        which, name = _edge(ref)  # type: ignore[misc]
        time = self.catalog.fields[name]
        table = self.catalog.table(ref.table)
        own = self._join(self._path_to(ref.table))
        inner = self._new_alias(f"{table.name}_{which}")
        date = time.exprs[0].name
        conditions: list[exp.Expression] = [exp.EQ(this=exp.column(key, inner), expression=exp.column(key, own))
                                             for key in table.key if key != date]
        conditions += [self._condition(flt, r, inner) for flt, r in filters
                       if r.kind == "time" and r.source is time.source and r.table == ref.table]
        conditions += [exp.EQ(this=self._grain(exp.column(date, inner), d.grain),
                              expression=self._grain(exp.column(date, own), d.grain))
                       for d in dims if d.kind == "time" and d.source is time.source and d.grain is not None]
        edge = (exp.Max if which == "last" else exp.Min)(this=exp.column(date, inner))
        latest = exp.select(edge).from_(_table(table.table, inner)).where(_and(conditions))
        self.notes.append(f"{ref.name}: the {which} {date} of each series")
        return exp.EQ(this=exp.column(date, own), expression=exp.Subquery(this=latest))

    def _hoisted_filter(self, parts: list[FieldRef]) -> exp.Expression | None:
        """The measures' shared row filter, when every one has the same: a WHERE."""
        filters = {getattr(p.source, "filter", None) for p in parts}
        if len(filters) != 1 or None in filters:
            return None
        return self._qualify(parts[0].exprs[1], parts[0])

    # -- filters -------------------------------------------------------------------------------

    def _filters(self, filters: list[tuple[Filter, FieldRef]],
                 dim_paths: list[Path]) -> tuple[list[exp.Expression], list[exp.Expression]]:
        where: list[exp.Expression] = []
        having: list[exp.Expression] = []
        exists: dict[Path, list[tuple[Filter, FieldRef, Path]]] = {}
        for flt, ref in filters:
            if ref.kind in ("measure", "derived", "aggregate"):
                having.append(self._compare(self._measure(ref, False, scaled=False), flt, ref))
                continue
            path = self._field_path(ref) if ref.kind != "filter" else self._path_to(ref.table)
            fan = next((k for k, step in enumerate(path) if step.fans_out), None)
            shared = fan is not None and any(p[:fan + 1] == path[:fan + 1] for p in dim_paths)
            if fan is None or shared:
                where.append(self._condition(flt, ref, self._join(path)))
            else:
                exists.setdefault(path[:fan + 1], []).append((flt, ref, path))
        for head, group in exists.items():
            where.append(self._exists(head, group))
        return where, having

    def _condition(self, flt: Filter, ref: FieldRef, alias: str) -> exp.Expression:
        if ref.kind == "filter":
            return self._qualify_at(ref.exprs[0], alias)
        if len(ref.exprs) != 1:
            raise CompileError(f"{ref.name} is made of {len(ref.exprs)} columns and cannot be compared with one value")
        column = self._qualify_at(ref.exprs[0], alias)
        if ref.kind == "time":
            return self._time_condition(column, flt, ref)
        return self._compare(column, flt, ref)

    def _compare(self, left: exp.Expression, flt: Filter, ref: FieldRef) -> exp.Expression:
        op, value = flt.op, flt.value
        if op in ("is null", "is not null"):
            test = exp.Is(this=left, expression=exp.Null())
            return exp.Not(this=test) if op == "is not null" else test
        if value is None:
            raise CompileError(f"the filter on {ref.name} has no value")
        if op in ("in", "not in") or isinstance(value, list):
            values = value if isinstance(value, list) else [value]
            if op == "between":
                if len(values) != 2:
                    raise CompileError(f"between on {ref.name} needs two values")
                return exp.Between(this=left, low=_literal(values[0]), high=_literal(values[1]))
            test = exp.In(this=left, expressions=[_literal(v) for v in values])
            return exp.Not(this=test) if op in ("not in", "!=") else test
        if op == "between":
            raise CompileError(f"between on {ref.name} needs two values")
        kinds = {"=": exp.EQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
        return kinds[op](this=left, expression=_literal(value))

    def _time_condition(self, column: exp.Expression, flt: Filter, ref: FieldRef) -> exp.Expression:
        source = ref.source
        if source.type == "year" or ref.grain == "quarter":  # type: ignore[union-attr]
            if ref.grain == "quarter":
                column = self._grain(column, "quarter")
            return self._compare(column, flt, ref)
        if flt.op in ("is null", "is not null"):
            return self._compare(column, flt, ref)
        values = flt.value if isinstance(flt.value, list) else [flt.value]
        try:
            spans = [_span(v) for v in values]
        except ValueError as err:
            raise CompileError(f"{ref.name}: {err}") from None
        if flt.op == "between" or len(spans) == 2 and flt.op == "=":
            if len(spans) != 2:
                raise CompileError(f"between on {ref.name} needs two dates")
            return _and([exp.GTE(this=column.copy(), expression=exp.Literal.string(spans[0][0])),
                         exp.LT(this=column.copy(), expression=exp.Literal.string(spans[1][1]))])
        if len(spans) != 1:
            raise CompileError(f"{ref.name} is compared with one date, or between two")
        start, end = spans[0]
        s, e = exp.Literal.string(start), exp.Literal.string(end)
        day = bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(values[0]).strip()))
        if day and source.type == "date" and flt.op in ("=", "!="):  # a date column's day is one value
            return (exp.EQ if flt.op == "=" else exp.NEQ)(this=column, expression=s)
        if flt.op == "=":
            return _and([exp.GTE(this=column.copy(), expression=s), exp.LT(this=column.copy(), expression=e)])
        if flt.op == "!=":
            return exp.Or(this=exp.LT(this=column.copy(), expression=s), expression=exp.GTE(this=column, expression=e))
        return {"<": exp.LT(this=column, expression=s), "<=": exp.LT(this=column, expression=e),
                ">": exp.GTE(this=column, expression=e), ">=": exp.GTE(this=column, expression=s)}[flt.op]

    def _exists(self, head: Path, group: list[tuple[Filter, FieldRef, Path]]) -> exp.Expression:
        """EXISTS over the one-to-many step at the end of `head` and what lies beyond it, with
        all the filters that go through it on the same row."""
        outer = self._join(head[:-1])
        saved = (dict(self.aliases), list(self.joins))
        self.joins = []
        # Inside, the step's table is the subquery's FROM; the rest is joined to it.
        step = head[-1]
        joins = self._step_joins(step, outer, head, inner=True)
        first = joins[0]
        source = first.this
        correlation = first.args.get("on")
        conditions = [correlation] if correlation is not None else []
        inner_joins = joins[1:]
        for flt, ref, path in group:
            alias = self._join(path)
            conditions.append(self._condition(flt, ref, alias))
        inner_joins += self.joins
        subquery = exp.select(exp.Literal.number(1)).from_(source)
        for join in inner_joins:
            subquery = subquery.join(join)
        subquery = subquery.where(_and(conditions))
        self.aliases, self.joins = saved
        return exp.Exists(this=subquery)

    # -- order ---------------------------------------------------------------------------------

    def _order(self, outputs: dict[str, list[str]], dims: list[FieldRef], measures: list[FieldRef]) -> list[exp.Ordered]:
        order: list[exp.Ordered] = []
        taken: set[str] = set()
        for item in self.request.order_by:
            names = outputs.get(item.field)
            if names is None:
                self.notes.append(f"not ordered by {item.field}: it is not one of the columns")
                continue
            for name in names:
                if name not in taken:
                    taken.add(name)
                    order.append(self._ordered(name, item.desc))
        if not order and not dims:
            return []
        # Then the dimensions, times first: a stable order that ties cannot shuffle.
        rest = sorted(dims, key=lambda d: d.kind != "time")
        for ref in rest:
            for name in outputs.get(ref.name, ()):
                if name not in taken:
                    taken.add(name)
                    order.append(self._ordered(name, False))
        return order

    def _ordered(self, name: str, desc: bool) -> exp.Ordered:
        return _ordered(exp.column(name), desc, self.dialect)


# -- helpers --------------------------------------------------------------------------------------


def _ordered(column: exp.Expression, desc: bool, dialect: str) -> exp.Ordered:
    # Where the database puts NULLs by itself: no NULLS FIRST/LAST clause to write.
    from sqlglot.dialects.dialect import Dialect

    nulls = Dialect.get_or_raise(dialect).NULL_ORDERING
    first = nulls == "nulls_are_large" if desc else nulls == "nulls_are_small"
    return exp.Ordered(this=column, desc=desc, nulls_first=first)


def _one_value(value: Any, ref: FieldRef) -> bool:
    """Whether an equality filter leaves the field one value: a dimension's, a year column's,
    a date's day (not a date's year or month)."""
    if isinstance(value, list):
        if len(value) != 1:
            return False
        value = value[0]
    if value is None:
        return False
    if ref.kind == "dimension":
        return True
    if ref.kind == "time":
        year = ref.source.type == "year" or ref.grain is not None  # type: ignore[union-attr]
        return year or bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)))
    return False


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _describe(path: Path) -> str:
    return " -> ".join(f"{s.rel.name}" + ("" if s.forward else " (reversed)") for s in path)


def _column_name(expression: exp.Expression, field_name: str, k: int) -> str:
    if isinstance(expression, exp.Column):
        return expression.name
    return f"{field_name}_{k + 1}"


def _table(name: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name), alias=exp.TableAlias(this=exp.to_identifier(alias)))


def _join_on(table: str, alias: str, conditions: list[exp.Expression], kind: str) -> exp.Join:
    join = exp.Join(this=_table(table, alias), on=_and(conditions))
    if kind:
        join.set("side", kind)
    return join


def _qualified(expression: exp.Expression, alias: str) -> exp.Expression:
    copy = expression.copy()
    for column in copy.find_all(exp.Column):
        column.set("table", exp.to_identifier(alias))
    return copy


def _and(parts: list[exp.Expression]) -> exp.Expression:
    result = parts[0]
    for part in parts[1:]:
        result = exp.And(this=result, expression=part)
    return result


def _or(parts: list[exp.Expression]) -> exp.Expression:
    result = exp.Paren(this=parts[0]) if len(parts) > 1 else parts[0]
    for part in parts[1:]:
        result = exp.Or(this=result, expression=exp.Paren(this=part))
    return exp.Paren(this=result) if len(parts) > 1 else result


def _scaled(value: exp.Expression, scale: str) -> exp.Expression:
    """An amount in `scale` ("millions"): divided after aggregating."""
    return exp.Div(this=_paren(value), expression=exp.Literal.number(repr(SCALES[scale])), typed=True)


def _paren(expression: exp.Expression) -> exp.Expression:
    return expression if isinstance(expression, (exp.Column, exp.Literal, exp.Paren, exp.Func)) \
        else exp.Paren(this=expression)


def _literal(value: Any) -> exp.Expression:
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value) if isinstance(value, float) else value)
    return exp.Literal.string(str(value))


_DATE = re.compile(r"^(\d{4})(?:-Q([1-4])|-(\d{2})(?:-(\d{2}))?)?$")


def _span(value: Any) -> tuple[str, str]:
    """The first day of a year, quarter, month or day and the first day after it, as ISO text."""
    match = _DATE.match(str(value).strip())
    if match is None:
        raise ValueError(f"{value!r} is not a year, a quarter (2023-Q2), a month (2023-03) or a day (2023-03-31)")
    year = int(match.group(1))
    if match.group(2):
        quarter = int(match.group(2))
        start_month = 3 * quarter - 2
        end_year, end_month = (year + 1, 1) if quarter == 4 else (year, start_month + 3)
        return f"{year:04d}-{start_month:02d}-01", f"{end_year:04d}-{end_month:02d}-01"
    if match.group(3) is None:
        return f"{year:04d}-01-01", f"{year + 1:04d}-01-01"
    month = int(match.group(3))
    if not 1 <= month <= 12:
        raise ValueError(f"{value!r}: no month {month}")
    if match.group(4) is None:
        end = f"{year + 1:04d}-01-01" if month == 12 else f"{year:04d}-{month + 1:02d}-01"
        return f"{year:04d}-{month:02d}-01", end
    day = int(match.group(4))
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        raise ValueError(f"{value!r}: no such day")
    import datetime as dt

    following = dt.date(year, month, day) + dt.timedelta(days=1)
    return f"{year:04d}-{month:02d}-{day:02d}", following.isoformat()
