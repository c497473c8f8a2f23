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

A constant the data stores ("a total rotor disc area of 46.2 square meters" is the row's
Total_Disk_Area, fields.py) is bound to that column instead, when its table is in the query:
the question restates the row, and the query should read the row, not the copy; a comparison
on it is then the filter the model meant. And where the query finds the row by its name, a
filter on such a restated measurement is dropped: the name finds the row, the measurement
only describes it (`drop_restated_filters`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from sqlglot import exp

from groundsql.safety import parse_untrusted
from groundsql.schema import Schema

__all__ = ["bind_constants", "drop_restated_filters", "read_stored"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Pow)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)


def bind_constants(sql: str, values: Mapping[str, float], schema: Schema, dialect: str,
                   stored: Mapping[str, Sequence[str]] | None = None) -> tuple[str, list[str]]:
    """`sql` with each constant it names in place of a column replaced by its value, or by
    the column that stores it (`stored`: constant name -> "table.column" names) when that
    column's table is in the query; and the names bound; `sql` unchanged (as written) when it
    binds nothing or does not parse."""
    wanted = {name.lower(): value for name, value in values.items() if math.isfinite(value)}
    homes = {name.lower(): columns for name, columns in (stored or {}).items()}
    tree = parse_untrusted(sql, dialect) if wanted else None
    if tree is None:
        return sql, []
    tables, derived = _tables(tree, schema)
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    bindable = [c for c in tree.find_all(exp.Column)
                if c.name.lower() in wanted and c.name.lower() not in aliases and _unknown(c, tables, derived)]
    bound: list[str] = []
    for column in bindable:
        name = column.name.lower()
        home = _home(homes.get(name, ()), tables)
        if home is not None:
            column.replace(home)
            bound.append(column.name)
            continue
        # `curb_weight = 1` meant a filter on a stored column the model misnamed: bound, it
        # would compare two numbers. A comparison with no real column is left to fail.
        comparison = column.find_ancestor(*_COMPARISONS)
        if comparison is not None and all(any(c is b for b in bindable) for c in comparison.find_all(exp.Column)):
            continue
        value = wanted[name]
        literal = exp.Literal.number(repr(abs(value)) if value != int(value) else int(abs(value)))
        column.replace(exp.Neg(this=literal) if value < 0 else literal)
        bound.append(column.name)
    return (tree.sql(dialect=dialect), bound) if bound else (sql, [])


def _tables(tree: exp.Expression, schema: Schema) -> tuple[dict, set[str]]:
    """The schema's tables the query reads, by alias (lower case), and the names of its
    derived tables (CTEs, subqueries), whose columns are not the schema's."""
    derived = {node.alias_or_name.lower() for node in tree.find_all(exp.CTE, exp.Subquery)}
    tables = {}
    for table in tree.find_all(exp.Table):
        real = schema.table(table.name)
        if real is not None and table.name.lower() not in derived:
            tables[table.alias_or_name.lower()] = real
    return tables, derived


def _home(columns: Sequence[str], tables: dict) -> exp.Column | None:
    """The first of the "table.column" names whose table the query reads, as a column of
    the query (through the table's alias); None when the query reads none of them."""
    for qualified in columns:
        table_name, _, column_name = qualified.partition(".")
        for alias, table in tables.items():
            real = table.column(column_name) if table.name.lower() == table_name.lower() else None
            if real is not None:
                quoted = not _PLAIN.fullmatch(real.name)  # "R&D_Spending" needs quotes
                return exp.column(real.name, table=alias if len(tables) > 1 else None, quoted=quoted)
    return None


def _unknown(column: exp.Column, tables: dict, derived: set[str]) -> bool:
    """No table of the query has this column (and it is not read through a derived table)."""
    qualifier = column.table.lower()
    if qualifier:
        real = tables.get(qualifier)
        return real is not None and real.column(column.name) is None
    if derived:
        return False  # an unqualified name may be a subquery's output
    return all(t.column(column.name) is None for t in tables.values())


def read_stored(sql: str, stated: Mapping[float, Sequence[str]], schema: Schema,
                dialect: str) -> tuple[str, list[str]]:
    """`sql` with each number of its SELECT list that the question states as a row's stored
    value (`stated`: the number as written -> the "table.column" names that store it, see
    fields.py) replaced by that column, when the query reads its table; and the columns
    read. "The Robinson R-22 has a total rotor disc area of 46.2 square meters ... its lift?"
    asks for the row's Total_Disk_Area, and `SELECT 46.2 * 14 ... WHERE Aircraft = 'Robinson
    R-22'` answers with the question's copy, right only while the data says the same. Filters
    (`WHERE Weight = 1500`) are left alone: there the number selects the row."""
    tree = parse_untrusted(sql, dialect) if stated else None
    if not isinstance(tree, exp.Select):
        return sql, []
    tables, _ = _tables(tree, schema)
    read: list[str] = []
    for projection in tree.expressions:
        for literal in list(projection.find_all(exp.Literal)):
            if literal.is_string or literal.find_ancestor(exp.Select) is not tree:
                continue  # a subquery's numbers are its own
            try:
                value = float(literal.this)
            except ValueError:
                continue
            home = _home(stated.get(value, ()), tables)
            if home is not None:
                literal.replace(home)
                read.append(home.sql(dialect=dialect))
    return (tree.sql(dialect=dialect), read) if read else (sql, [])


def drop_restated_filters(sql: str, stated: Mapping[float, Sequence[str]], schema: Schema,
                          dialect: str) -> tuple[str, list[str]]:
    """`sql` without the filters that require a named row to hold the measurements the
    question restates of it, and the filters dropped.

    "Assuming a Robinson R-22 aircraft has a maximum gross weight of 635 kg ... what is the
    new disc loading?" names the row and describes it; the 1.5B model filters on both
    (`WHERE Aircraft = 'Robinson R-22' AND Max_Gross_Weight = 635 ...`), which finds nothing
    once the data holds another weight. A conjunct `column = number` goes when the number is
    one the question states of that column (`stated`: the number -> the "table.column" names
    that store it, fields.py; the caller passes measurements with units only), the same WHERE
    finds the row by a text value (`= 'X'`, `LIKE`), and the query computes a value from the
    row (arithmetic in its SELECT list). A query that lists rows (`SELECT Name ... WHERE
    Material = 'Steel' AND Length_Meters = 100`) selects by the number and keeps it; so does
    one with no name to find the row by. Over the LogicCat and Spider gold queries, no WHERE
    pairs a text filter with a stated measurement (the 15 that filter on one have no name)."""
    tree = parse_untrusted(sql, dialect) if stated else None
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    if where is None or not any(p.find(*_ARITHMETIC) for p in tree.expressions):
        return sql, []
    conjuncts = [c.unnest() for c in (where.this.flatten() if isinstance(where.this, exp.And) else [where.this])]
    if not any(_names_a_row(c) for c in conjuncts):
        return sql, []
    tables, _ = _tables(tree, schema)
    kept, dropped = [], []
    for conjunct in conjuncts:
        if _restates(conjunct, stated, tables):
            dropped.append(conjunct.sql(dialect=dialect))
        else:
            kept.append(conjunct)
    if not dropped:
        return sql, []
    tree.set("where", exp.Where(this=exp.and_(*kept)))
    return tree.sql(dialect=dialect), dropped


def _names_a_row(condition: exp.Expression) -> bool:
    """`column = 'text'` or `column LIKE 'text'`, either way round."""
    if not isinstance(condition, (exp.EQ, exp.Like, exp.ILike)):
        return False
    sides = (condition.this, condition.expression)
    return (any(isinstance(s, exp.Column) for s in sides)
            and any(isinstance(s, exp.Literal) and s.is_string for s in sides))


def _restates(condition: exp.Expression, stated: Mapping[float, Sequence[str]], tables: dict) -> bool:
    """`column = number` where the question states the number of that very column."""
    if not isinstance(condition, exp.EQ):
        return False
    column, literal = condition.this, condition.expression
    if isinstance(column, exp.Literal):
        column, literal = literal, column
    if not isinstance(column, exp.Column) or not isinstance(literal, exp.Literal) or literal.is_string:
        return False
    try:
        value = float(literal.this)
    except ValueError:
        return False
    qualifier = column.table.lower()
    for qualified in stated.get(value, ()):
        table_name, _, column_name = qualified.partition(".")
        if column_name.lower() != column.name.lower():
            continue
        if any(t.name.lower() == table_name.lower() and (not qualifier or alias == qualifier)
               for alias, t in tables.items()):
            return True
    return False
