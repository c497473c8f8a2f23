"""The semantic model resolved against the database: every name a request may use, with its
parsed expressions, checked once when the pack loads.

A request names fields; `Catalog.field(name)` says what each is: a dimension (and the table
it is read on), a time dimension at a grain, a fact as stored or aggregated, a measure, or a
named filter. Everything is checked against the database's schema here, so the compiler
never meets a column that does not exist, an expression that does not parse, a measure that
is not an aggregate or a relationship that leads nowhere. A problem is a `SemanticError`
naming the entry and field (semantic/load.py adds the file and line).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from groundsql.errors import ConfigError
from groundsql.schema.model import Schema
from groundsql.semantic.model import (Dimension, Fact, LogicalTable, Measure, NamedFilter, SemanticModel, TimeDimension)
from groundsql.yamlfile import Where

__all__ = ["Catalog", "FieldRef", "SemanticError", "build_catalog"]

Kind = Literal["dimension", "time", "fact", "aggregate", "measure", "derived", "filter"]


class SemanticError(ConfigError):
    """A mistake in a semantic model, at `where` (keys and indexes from the file's root)."""

    def __init__(self, where: Where, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{'.'.join(str(p) for p in where)}: {message}")


@dataclass(frozen=True)
class FieldRef:
    """One name a request may use."""

    name: str
    kind: Kind
    table: str  # the logical table the field is declared on
    via: tuple[str, ...]  # relationships from that table to where its expressions are read
    exprs: tuple[exp.Expression, ...]  # parsed; a dimension may have several columns
    source: Dimension | TimeDimension | Fact | Measure | NamedFilter
    grain: str | None = None  # a time dimension's grain
    aggregation: str | None = None  # an aggregated fact's function
    parts: tuple[str, ...] = ()  # the measures a derived measure is made of

    @property
    def description(self) -> str:
        return self.source.description

    @property
    def synonyms(self) -> tuple[str, ...]:
        return self.source.synonyms


@dataclass
class Catalog:
    model: SemanticModel
    dialect: str
    fields: dict[str, FieldRef] = field(default_factory=dict)
    # Filled by the loader from the data: the values of small dimensions, and the key of each
    # currency code of the conversion.
    values: dict[str, tuple[object, ...]] = field(default_factory=dict)
    currency_keys: dict[str, object] = field(default_factory=dict)
    # What is derived from the whole catalog once and read per question (terms.py).
    derived: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def field(self, name: str) -> FieldRef | None:
        return self.fields.get(name)

    def of_kind(self, *kinds: Kind) -> list[FieldRef]:
        return [f for f in self.fields.values() if f.kind in kinds]

    def table(self, name: str) -> LogicalTable:
        table = self.model.table(name)
        assert table is not None, name
        return table

    @property
    def graph(self) -> nx.MultiDiGraph:
        """Logical tables and the automatic relationships between them (from -> to)."""
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(t.name for t in self.model.tables)
        for rel in self.model.relationships:
            if rel.automatic:
                graph.add_edge(rel.from_, rel.to, key=rel.name)
        return graph


def parse(sql: str, dialect: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=dialect)


def build_catalog(model: SemanticModel, schema: Schema, entity_tables: Sequence[str] = ()) -> Catalog:
    """Check `model` against `schema` and index its names; raises SemanticError."""
    catalog = Catalog(model, schema.dialect)
    _check_tables(model, schema)
    _check_relationships(model, schema)
    _check_areas(model)
    entities = {e.lower() for e in entity_tables}
    for i, table in enumerate(model.tables):
        at: Where = ("tables", i)
        for j, dim in enumerate(table.dimensions):
            where = at + ("dimensions", j)
            end = _via_end(model, table, dim.via, where + ("via",))
            exprs = tuple(_expression(catalog, schema, end, e, where + ("expr",)) for e in dim.expr)
            if dim.entity is not None and dim.entity.lower() not in entities:
                raise SemanticError(where + ("entity",), f"no entity table {dim.entity!r} in pack.yaml")
            _add(catalog, FieldRef(dim.name, "dimension", table.name, dim.via, exprs, dim), where)
        for j, time in enumerate(table.time_dimensions):
            where = at + ("time_dimensions", j)
            end = _via_end(model, table, time.via, where + ("via",))
            parsed = (_expression(catalog, schema, end, time.expr, where + ("expr",)),)
            _add(catalog, FieldRef(time.name, "time", table.name, time.via, parsed, time), where)
            for grain in time.grains:
                if time.type == "year" and grain != "year":
                    raise SemanticError(where + ("grains",), f"a year column has no {grain}s")
                if grain == "year" and time.type == "year":
                    continue  # the column is the year
                _add(catalog, FieldRef(time.grain_name(grain), "time", table.name, time.via, parsed, time,
                                       grain=grain), where + ("grains",))
        for j, fact in enumerate(table.facts):
            where = at + ("facts", j)
            end = _via_end(model, table, fact.via, where + ("via",))
            parsed = (_expression(catalog, schema, end, fact.expr, where + ("expr",)),)
            _add(catalog, FieldRef(fact.name, "fact", table.name, fact.via, parsed, fact), where)
            for aggregation in fact.aggregations:
                _add(catalog, FieldRef(fact.aggregate_name(aggregation), "aggregate", table.name, fact.via,
                                       parsed, fact, aggregation=aggregation), where + ("aggregations",))
        for j, flt in enumerate(table.filters):
            where = at + ("filters", j)
            parsed = (_expression(catalog, schema, table, flt.expr, where + ("expr",)),)
            _add(catalog, FieldRef(flt.name, "filter", table.name, (), parsed, flt), where)
    # Measures last: a derived measure names others, and defaults name any field.
    derived: list[tuple[Where, LogicalTable, Measure]] = []
    for i, table in enumerate(model.tables):
        for j, measure in enumerate(table.measures):
            where: Where = ("tables", i, "measures", j)
            parsed = _expression(catalog, schema, table, measure.expr, where + ("expr",), measures=True)
            if _names_measures(parsed, model):
                derived.append((where, table, measure))
                _add(catalog, FieldRef(measure.name, "derived", table.name, (), (parsed,), measure), where)
                continue
            if not _is_aggregate(parsed):
                raise SemanticError(where + ("expr",), f"{measure.expr!r} is not an aggregate (SUM, COUNT, "
                                    "AVG, MIN, MAX of the table's rows, or an expression of other measures)")
            exprs = [parsed]
            if measure.filter is not None:
                exprs.append(_expression(catalog, schema, table, measure.filter, where + ("filter",)))
            _add(catalog, FieldRef(measure.name, "measure", table.name, (), tuple(exprs), measure), where)
            if measure.currency is not None:
                _check_currency(catalog, schema, table, measure, where + ("currency",))
    for where, table, measure in derived:
        parsed = catalog.fields[measure.name].exprs[0]
        parts = _measure_names(parsed, model)
        loose = [c.sql() for c in parsed.find_all(exp.Column) if c.table or c.name not in parts]
        if loose:
            raise SemanticError(where + ("expr",), f"{loose[0]!r} is read outside an aggregate: a derived "
                                "measure is an expression of other measures only")
        for part in parts:
            ref = catalog.fields.get(part)
            if ref is None or ref.kind not in ("measure", "aggregate"):
                raise SemanticError(where + ("expr",), f"{part!r} is not a measure")
        catalog.fields[measure.name] = FieldRef(measure.name, "derived", table.name, (),
                                                catalog.fields[measure.name].exprs, measure, parts=tuple(parts))
    for i, table in enumerate(model.tables):
        for j, measure in enumerate(table.measures):
            for k, default in enumerate(measure.defaults):
                target = catalog.fields.get(default.field)
                at = ("tables", i, "measures", j, "defaults", k)
                if target is None or target.kind not in ("dimension", "time", "filter"):
                    raise SemanticError(at + ("field",), f"{default.field!r} is not a dimension or a filter of the model")
                if (default.value is None) != (target.kind == "filter"):
                    raise SemanticError(at + ("value",), f"a default on the dimension {default.field!r} needs a value"
                                        if default.value is None else f"the filter {default.field!r} takes no value")
            if measure.last is not None and measure.first is not None:
                raise SemanticError(("tables", i, "measures", j, "first"), "a measure reads the last rows or the first")
            if measure.edge is not None:
                which, name = measure.edge
                time = catalog.fields.get(name)
                column = time.exprs[0] if time is not None and time.kind == "time" else None
                if column is None or time.table != table.name or time.via or time.grain is not None \
                        or not isinstance(column, exp.Column) or column.name not in table.key or len(table.key) < 2:
                    raise SemanticError(("tables", i, "measures", j, which),
                                        f"{name!r} is not a time column of {table.name}'s key (the {which} row "
                                        "of each series is read by the key's other columns)")
    _check_conversion(model, schema)
    return catalog


# -- checks -----------------------------------------------------------------------------------


def _add(catalog: Catalog, ref: FieldRef, where: Where) -> None:
    if ref.name in catalog.fields:
        other = catalog.fields[ref.name]
        raise SemanticError(where, f"the name {ref.name!r} is taken by a {other.kind} of {other.table}: "
                            "names are unique across the model")
    catalog.fields[ref.name] = ref


def _check_tables(model: SemanticModel, schema: Schema) -> None:
    seen: set[str] = set()
    for i, table in enumerate(model.tables):
        if table.name in seen:
            raise SemanticError(("tables", i, "name"), f"two logical tables are named {table.name!r}")
        seen.add(table.name)
        real = schema.table(table.table)
        if real is None:
            raise SemanticError(("tables", i, "table"), f"no table {table.table!r} in the database")
        for j, key in enumerate(table.key):
            if real.column(key) is None:
                raise SemanticError(("tables", i, "key", j), f"table {table.table!r} has no column {key!r}")


def _check_areas(model: SemanticModel) -> None:
    owner: dict[str, str] = {}
    names: set[str] = set()
    for i, area in enumerate(model.areas):
        if area.name in names:
            raise SemanticError(("areas", i, "name"), f"two areas are named {area.name!r}")
        names.add(area.name)
        for j, name in enumerate(area.tables):
            if model.table(name) is None:
                raise SemanticError(("areas", i, "tables", j), f"no logical table {name!r} in the model")
            if name in owner:
                raise SemanticError(("areas", i, "tables", j), f"{name} is already in the area {owner[name]}: "
                                    "a table belongs to one area (tables every area uses belong to none)")
            owner[name] = area.name


def _check_relationships(model: SemanticModel, schema: Schema) -> None:
    names: set[str] = set()
    for i, rel in enumerate(model.relationships):
        at: Where = ("relationships", i)
        if rel.name in names:
            raise SemanticError(at + ("name",), f"two relationships are named {rel.name!r}")
        names.add(rel.name)
        ends = {}
        for side, name in (("from", rel.from_), ("to", rel.to)):
            table = model.table(name)
            if table is None:
                raise SemanticError(at + (side,), f"no logical table {name!r} in the model")
            ends[side] = table
        for j, (left, right) in enumerate(rel.columns):
            for k, (end, column) in enumerate(((ends["from"], left), (ends["to"], right))):
                if schema.table(end.table).column(column) is None:  # type: ignore[union-attr]
                    raise SemanticError(at + ("columns", j, k), f"table {end.table!r} has no column {column!r}")
        if rel.through is not None:
            bridge = schema.table(rel.through.table)
            if bridge is None:
                raise SemanticError(at + ("through", "table"), f"no table {rel.through.table!r} in the database")
            for part in ("from_column", "to_column"):
                column = getattr(rel.through, part)
                if bridge.column(column) is None:
                    raise SemanticError(at + ("through", part), f"table {bridge.name!r} has no column {column!r}")
            for side in ("from", "to"):
                if len(ends[side].key) != 1:
                    raise SemanticError(at + ("through",), f"a bridge needs a one-column key on {ends[side].name!r}")
            if rel.through.where is not None:
                try:
                    parsed = parse(rel.through.where, schema.dialect)
                except SqlglotError as err:
                    raise SemanticError(at + ("through", "where"), f"not SQL ({_first_line(err)})") from None
                for column in parsed.find_all(exp.Column):
                    if column.table or bridge.column(column.name) is None:
                        raise SemanticError(at + ("through", "where"),
                                            f"{column.sql()!r} is not a column of the bridge {bridge.name!r}")
    automatic = nx.DiGraph()
    for rel in model.relationships:
        if rel.automatic:
            automatic.add_edge(rel.from_, rel.to, name=rel.name)
    try:
        cycle = nx.find_cycle(automatic)
    except nx.NetworkXNoCycle:
        return
    names_in_cycle = [automatic.edges[u, v]["name"] for u, v, *_ in cycle]
    first = next(i for i, r in enumerate(model.relationships) if r.name == names_in_cycle[0])
    raise SemanticError(("relationships", first), "the relationships " + ", ".join(names_in_cycle) +
                        " form a cycle: mark the one that is a role (a self-join, a second path) "
                        "with automatic: false and reach it with a field's via")


def _via_end(model: SemanticModel, table: LogicalTable, via: tuple[str, ...], where: Where) -> LogicalTable:
    """The logical table a field's `via` relationships lead to from `table`."""
    at = table
    for k, name in enumerate(via):
        rel = model.relationship(name)
        if rel is None:
            raise SemanticError(where + (k,), f"no relationship {name!r} in the model")
        if rel.from_ != at.name:
            raise SemanticError(where + (k,), f"relationship {name!r} starts at {rel.from_}, not at {at.name}")
        at = model.table(rel.to)  # type: ignore[assignment]
    return at


def _expression(catalog: Catalog, schema: Schema, table: LogicalTable, sql: str, where: Where,
                measures: bool = False) -> exp.Expression:
    """`sql` parsed; its columns are the table's own or `other_table.column` of a logical
    table (measures: or the names of other measures)."""
    try:
        parsed = parse(sql, schema.dialect)
    except SqlglotError as err:
        raise SemanticError(where, f"{sql!r} is not SQL ({_first_line(err)})") from None
    if parsed is None or isinstance(parsed, (exp.Select, exp.Union)) or parsed.find(exp.Select):
        raise SemanticError(where, f"{sql!r}: an expression, not a query")
    model = catalog.model
    for column in parsed.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            continue
        owner = model.table(column.table) if column.table else table
        if column.table and owner is None:
            raise SemanticError(where, f"{column.sql()!r}: no logical table {column.table!r}")
        if measures and not column.table and model_has_measure(model, column.name):
            continue
        real = schema.table(owner.table)  # type: ignore[union-attr]
        if real is None or real.column(column.name) is None:
            raise SemanticError(where, f"{column.sql()!r}: table {owner.table!r} has no column "  # type: ignore[union-attr]
                                f"{column.name!r}")
    return parsed


def model_has_measure(model: SemanticModel, name: str) -> bool:
    """A measure, or a fact aggregated by name (total_employees), which a derived measure may use."""
    return any(m.name == name for t in model.tables for m in t.measures) or \
        any(f.aggregate_name(a) == name for t in model.tables for f in t.facts for a in f.aggregations)


def _names_measures(parsed: exp.Expression, model: SemanticModel) -> bool:
    return bool(_measure_names(parsed, model))


def _measure_names(parsed: exp.Expression, model: SemanticModel) -> list[str]:
    names = []
    for column in parsed.find_all(exp.Column):
        if not column.table and model_has_measure(model, column.name) and column.name not in names:
            names.append(column.name)
    return names


def _is_aggregate(parsed: exp.Expression) -> bool:
    """Every column is read inside an aggregate, and there is one (COUNT(*) counts)."""
    if not parsed.find(exp.AggFunc):
        return False
    for column in parsed.find_all(exp.Column):
        if not column.find_ancestor(exp.AggFunc):
            return False
    return not parsed.find(exp.Window)


def _check_currency(catalog: Catalog, schema: Schema, table: LogicalTable, measure: Measure, where: Where) -> None:
    assert measure.currency is not None
    _expression(catalog, schema, table, measure.currency.column, where + ("column",))
    _expression(catalog, schema, table, measure.currency.date, where + ("date",))
    if catalog.model.currency is None:
        raise SemanticError(where, "a measure with a currency needs the model's currency: section (the rates)")


def _check_conversion(model: SemanticModel, schema: Schema) -> None:
    conv = model.currency
    if conv is None:
        return
    for table, columns in ((conv.table, ("currency_column", "date_column", "rate_column")),
                           (conv.currencies, ("key", "code"))):
        real = schema.table(table)
        if real is None:
            part = "table" if table == conv.table else "currencies"
            raise SemanticError(("currency", part), f"no table {table!r} in the database")
        for column in columns:
            if real.column(getattr(conv, column)) is None:
                raise SemanticError(("currency", column), f"table {table!r} has no column {getattr(conv, column)!r}")


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__


def walk_fields(model: SemanticModel) -> Iterator[tuple[Where, str]]:
    """(where, name) of every field declared in the model, in file order."""
    for i, table in enumerate(model.tables):
        for part in ("dimensions", "time_dimensions", "facts", "measures", "filters"):
            for j, item in enumerate(getattr(table, part)):
                yield ("tables", i, part, j), item.name
