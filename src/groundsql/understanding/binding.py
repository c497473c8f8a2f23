"""The question's constants bound into a query that names them as if they were columns.

The search prompt lists the question's numbers under names for formulas ("air_density =
1.225 kg/m^3", "frontal_area = 2.5 m^2") and the calculator adds computed ones. A small model
then writes `performance_metrics.Frontal_Area * air_density` in its SQL: a formula over the
names, which fails with "no such column" although the model meant exactly the given numbers.
So a column reference that is no column of the tables in the query, and whose name is one
of the constants' (case aside), becomes that number, as a query parameter would. A name that
is a real column, or an output alias of the query, is left alone; so is a reference through
a subquery or a CTE, whose columns are not the schema's, and a comparison that would be left
with no column (`curb_weight = 1` is a filter on a misnamed column, not arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import sqlglot
from sqlglot import exp

from groundsql.schema import Schema

__all__ = ["bind_constants"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)


def bind_constants(sql: str, values: Mapping[str, float], schema: Schema,
                   dialect: str) -> tuple[str, list[str]]:
    """`sql` with each constant it names in place of a column replaced by its value, and the
    names bound; `sql` unchanged (as written) when it binds nothing or does not parse."""
    wanted = {name.lower(): value for name, value in values.items() if math.isfinite(value)}
    if not wanted:
        return sql, []
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return sql, []
    derived = {node.alias_or_name.lower() for node in tree.find_all(exp.CTE, exp.Subquery)}
    tables = {}
    for table in tree.find_all(exp.Table):
        real = schema.table(table.name)
        if real is not None and table.name.lower() not in derived:
            tables[table.alias_or_name.lower()] = real
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    bindable = [c for c in tree.find_all(exp.Column)
                if c.name.lower() in wanted and c.name.lower() not in aliases and _unknown(c, tables, derived)]
    bound: list[str] = []
    for column in bindable:
        # `curb_weight = 1` meant a filter on a stored column the model misnamed: bound, it
        # would compare two numbers. A comparison with no real column is left to fail.
        comparison = column.find_ancestor(*_COMPARISONS)
        if comparison is not None and all(any(c is b for b in bindable) for c in comparison.find_all(exp.Column)):
            continue
        name = column.name.lower()
        value = wanted[name]
        literal = exp.Literal.number(repr(abs(value)) if value != int(value) else int(abs(value)))
        column.replace(exp.Neg(this=literal) if value < 0 else literal)
        bound.append(column.name)
    return (tree.sql(dialect=dialect), bound) if bound else (sql, [])


def _unknown(column: exp.Column, tables: dict, derived: set[str]) -> bool:
    """No table of the query has this column (and it is not read through a derived table)."""
    qualifier = column.table.lower()
    if qualifier:
        real = tables.get(qualifier)
        return real is not None and real.column(column.name) is None
    if derived:
        return False  # an unqualified name may be a subquery's output
    return all(t.column(column.name) is None for t in tables.values())
