"""Does a query use what grounding found? Two checks of a query that ran, from its syntax tree:

- a resolved value it never filters on: the lookup resolved "wheat" to `commodity_id = 3` and
  the query sums every commodity (seen with the 1.5B model on a drafted pack);
- a table joined for nothing: an inner join to a table none of whose columns the query reads
  outside that join's own condition. An inner join keeps one row per match, so such a join
  multiplies or drops rows (`JOIN shipment_line` in a count of shipments, seen likewise).

Either is a reason to ask the model once more (strategies/grounded.py), not an error: a question
may name a value only to describe, and a join may be a deliberate "that have any" filter. Both
checks lean towards silence: a value counts as used when the query compares its key column (or
a column that references it) with it, or names its label anywhere; a join counts as used when
any column the query reads could be one of the table's.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from groundsql.grounding.lookup import Constraint
from groundsql.safety import parse_untrusted
from groundsql.schema import Schema

__all__ = ["unused_constraints", "idle_joins", "unused_text", "comparable", "column_literals"]


def unused_constraints(sql: str, constraints: Sequence[Constraint], schema: Schema) -> list[Constraint]:
    """The constraints `sql` filters on neither by key nor by label."""
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None or not constraints:
        return []
    compared = {(c.name.lower(), comparable(v.this)) for c, v in column_literals(tree)}
    # A label may be written as a number (ticker 5516 for the ticker symbol '5516').
    literals = {comparable(literal.this) for literal in tree.find_all(exp.Literal)}
    unused = []
    for c in constraints:
        keys = _key_columns(c, schema)
        value = comparable(c.value)
        by_key = any(column in keys and literal == value for column, literal in compared)
        by_label = bool(c.label) and comparable(c.label) in literals
        if not (by_key or by_label):
            unused.append(c)
    return unused


def idle_joins(sql: str, schema: Schema) -> list[str]:
    """The tables `sql` inner-joins without reading any of their columns elsewhere."""
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return []
    idle: list[str] = []
    for select in tree.find_all(exp.Select):
        for join in select.args.get("joins") or ():
            table = join.this
            if not isinstance(table, exp.Table) or not _inner(join) or join.args.get("using"):
                continue
            if not _read_elsewhere(select, join, table, schema) and table.name not in idle:
                idle.append(table.name)
    return idle


def unused_text(constraints: Sequence[Constraint]) -> str:
    """The unused constraints as the model is shown them."""
    return "\n".join(f"- \"{c.phrase}\" is {c.sql()} ({c.label})" for c in constraints)


def column_literals(tree: exp.Expression) -> list[tuple[exp.Column, exp.Literal]]:
    """(column, literal) for every `column = literal` (either way round) and `column IN (literals)`."""
    pairs = []
    for node in tree.find_all(exp.EQ, exp.In):
        if isinstance(node, exp.EQ):
            pairs += [(c, v) for c, v in ((node.this, node.expression), (node.expression, node.this))
                      if isinstance(c, exp.Column) and isinstance(v, exp.Literal)]
        elif isinstance(node.this, exp.Column):
            pairs += [(node.this, v) for v in node.expressions if isinstance(v, exp.Literal)]
    return pairs


def _key_columns(c: Constraint, schema: Schema) -> set[str]:
    """The constraint's key column and every column that references it by a foreign key."""
    keys = {c.column.lower()}
    for table in schema.tables:
        for fk in table.foreign_keys:
            if fk.ref_table.lower() != c.table.lower():
                continue
            keys |= {col.lower() for col, ref in zip(fk.columns, fk.ref_columns)
                     if ref.lower() == c.column.lower()}
    return keys


def comparable(value: object) -> str:
    """A value as it compares: 7, 7.0 and '7' alike; text without case or surrounding spaces."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else str(number)


def _inner(join: exp.Join) -> bool:
    return not join.side and (join.kind or "INNER").upper() == "INNER"


def _read_elsewhere(select: exp.Select, join: exp.Join, table: exp.Table, schema: Schema) -> bool:
    """Whether the select reads a column that is (or may be) `table`'s outside `join`'s ON."""
    name = table.alias_or_name.lower()
    real = schema.table(table.name)
    own_condition = join.args.get("on")
    if any(isinstance(e, exp.Star) for e in select.expressions):
        return True  # SELECT *: every column is read (COUNT(*) reads none)
    for column in select.find_all(exp.Column):
        if own_condition is not None and _inside(column, own_condition):
            continue
        if isinstance(column.this, exp.Star) and column.table.lower() == name:
            return True  # t.*
        qualifier = column.table.lower()
        if qualifier == name:
            return True
        if not qualifier and (real is None or real.column(column.name) is not None):
            return True  # unqualified, and this table has (or may have) that column
    return False


def _inside(node: exp.Expression, ancestor: exp.Expression) -> bool:
    parent: exp.Expression | None = node
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False
